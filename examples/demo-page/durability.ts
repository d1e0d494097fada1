// The durability check page (test/reliability/demo-page.test.ts drives it): appends under strict durability,
// reporting each acknowledged seq, so the test can reload the tab right after an ack and read
// the session back in the new page. Every acknowledged event must be there.
import { openStore, type Json } from 'sessionfold'

export interface StoredEvent {
  seq: number
  type: string
  data: Json | undefined
}

declare global {
  interface Window {
    /** Exposed by the test: told of every acknowledged append. */
    __ack?: (firstSeq: number, lastSeq: number) => void
    durability: typeof durability
  }
}

const durability = {
  /**
   * Appends events 0, 1, 2, … (every fifth call a batch of two), awaiting each and reporting
   * its seqs, until `max` events: the test reloads the page somewhere in between.
   */
  async appendAndReport(name: string, id: string, max: number): Promise<void> {
    const store = await openStore({ name, durability: 'strict' })
    const session = await store.createSession({ id })
    for (let n = 0, call = 0; n < max; call++) {
      const batch = call % 5 === 4 ? [n, n + 1] : [n]
      const { firstSeq, lastSeq } = await session.append(batch.map((i) => ({ type: 'test/durable', data: { n: i } })))
      window.__ack?.(firstSeq, lastSeq)
      n += batch.length
    }
  },

  /** Fires `count` appends without awaiting them, then close(): it must wait for all of them. */
  async fireAndClose(name: string, id: string, count: number): Promise<{ fulfilled: number; rejected: string[] }> {
    const store = await openStore({ name, durability: 'strict' })
    const session = await store.createSession({ id })
    const appends = Array.from({ length: count }, (_, i) => session.append({ type: 'test/pending', data: { n: i } }))
    await store.close()
    const results = await Promise.allSettled(appends)
    return {
      fulfilled: results.filter((r) => r.status === 'fulfilled').length,
      rejected: results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : [])),
    }
  },

  /** The session's events as a fresh page sees them (read-only: observe). */
  async read(name: string, id: string): Promise<StoredEvent[]> {
    const store = await openStore({ name })
    try {
      const view = await store.observe(id)
      const out: StoredEvent[] = []
      for await (const e of view.events()) out.push({ seq: e.seq, type: e.type, data: e.data })
      return out
    } finally {
      await store.close()
    }
  },
}

window.durability = durability
document.body.dataset.ready = 'true'
