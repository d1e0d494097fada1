// One tab of a many-tabs test (test/reliability/demo-page.test.ts): window.tab drives a store in this page.
import { openStore, type Json, type Session, type SessionView, type Store } from 'sessionfold'

declare global {
  interface Window {
    /** Exposed by the test: told of every append this tab has acknowledged. */
    __ack?: (firstSeq: number, lastSeq: number) => void
  }
}

let store: Store | undefined
const writers = new Map<string, Session>()
const views = new Map<string, SessionView>()
const code = (err: unknown) => (err as { code?: string }).code ?? String(err)

const tab = {
  /** Opens the store; `noSharedWorker` plays a browser without SharedWorker (Chrome on Android). */
  async open(name: string, worker: boolean | 'shared', noSharedWorker = false): Promise<string> {
    if (noSharedWorker) Object.defineProperty(globalThis, 'SharedWorker', { value: undefined, configurable: true })
    store = await openStore({ name, worker })
    return 'open'
  },
  async create(id: string): Promise<string> {
    writers.set(id, await store!.createSession({ id }))
    return 'created'
  },
  async write(id: string): Promise<string> {
    try {
      writers.set(id, await store!.openSession(id))
      return 'writing'
    } catch (err) {
      return code(err)
    }
  },
  async observe(id: string): Promise<string> {
    views.set(id, await store!.observe(id))
    return 'observing'
  },
  async turn(id: string): Promise<number> {
    return (await writers.get(id)!.append([{ type: 'turn/start' }, { type: 'turn/end' }])).lastSeq
  },
  /**
   * Appends events {n: 0}, {n: 1}, … (every third call a batch of two) to a new session open
   * for writing here, awaiting each and reporting its seqs to the test, until `max` events:
   * the test crashes this tab somewhere in between.
   */
  async appendAndReport(id: string, max: number): Promise<number> {
    const session = writers.get(id)!
    let n = 0
    for (let call = 0; n < max; call++) {
      const batch = call % 3 === 2 ? [n, n + 1] : [n]
      const { firstSeq, lastSeq } = await session.append(batch.map((i) => ({ type: 'test/acked', data: { n: i } })))
      window.__ack?.(firstSeq, lastSeq)
      n += batch.length
    }
    return n
  },
  /** The session's events as a handle of this tab reads them. */
  async events(id: string): Promise<{ seq: number; type: string; data: Json | undefined }[]> {
    const out: { seq: number; type: string; data: Json | undefined }[] = []
    for await (const e of (writers.get(id) ?? views.get(id))!.events()) out.push({ seq: e.seq, type: e.type, data: e.data })
    return out
  },
  turns: (id: string): number | null => views.get(id)?.projections.get('subagentTiming')?.turns ?? null,
  async spawn(id: string, childId: string): Promise<string> {
    writers.set(childId, await writers.get(id)!.spawn({ mode: 'one-shot', id: childId }))
    return 'spawned'
  },
  async children(id: string): Promise<{ id: string; activity?: string }[]> {
    const rows = await (views.get(id) ?? writers.get(id))!.listChildren()
    return rows.map((r) => ({ id: r.id, activity: r.kind === 'child' ? r.activity : r.reason }))
  },
}

Object.assign(window, { tab })
