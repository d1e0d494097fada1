// Reliability: a full IndexedDB quota in real Chromium — STORAGE_QUOTA_EXCEEDED, nothing stored, recovery (§6 errors, §7 durability)
// A full IndexedDB quota in real Chromium, through the public client, in the engine's Web
// Worker and in the page (worker: false): while the quota is "full", IndexedDB's put/add
// throws QuotaExceededError (injected in the context that runs the engine, quota-fault.ts).
// The failing call rejects with STORAGE_QUOTA_EXCEEDED, nothing of it is stored, earlier data
// and projections are intact, and the store works again once the quota allows.
// (Transactions that abort with QuotaExceededError are covered on fake-indexeddb in
// test/reliability/indexeddb-quota.test.ts: a page cannot make real Chromium abort with that error on demand.)
import { describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions } from 'sessionfold'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import type { Json } from '../../src/core/model'
import { expectCode, snapshotStore } from '../support/helpers'
import { fullRefold } from '../support/refold'
import { installQuotaFault, setFull } from './quota-fault'

installQuotaFault('page')

let n = 0
const dbName = () => `quota-${Date.now()}-${n++}`

async function dataOf(s: { events(): AsyncIterable<{ data: Json }> }): Promise<Json[]> {
  const out: Json[] = []
  for await (const e of s.events()) out.push(e.data)
  return out
}

/** Waits until every unit row of `id`'s checkpoint is as of `seq`. */
async function checkpointAt(a: { getCheckpoint(id: string): Promise<unknown> }, id: string, seq: number): Promise<void> {
  const until = Date.now() + 10_000
  const at = (row: unknown) => {
    const rows = Object.values((row as { rows?: Record<string, { seq: number }> } | undefined)?.rows ?? {})
    return rows.length > 0 && rows.every((r) => r.seq === seq)
  }
  while (!at(await a.getCheckpoint(id))) {
    if (Date.now() > until) throw new Error(`no checkpoint of "${id}" as of seq ${seq} after 10 s`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const deleteDb = (name: string) =>
  new Promise<void>((resolve) => {
    const r = indexedDB.deleteDatabase(name)
    r.onsuccess = r.onerror = r.onblocked = () => resolve()
  })

describe('a full IndexedDB quota (Chromium)', () => {
  for (const worker of [true, false]) {
    const context = worker ? 'worker' : 'page'
    it(`appends, spawns and forks reject with STORAGE_QUOTA_EXCEEDED, store nothing, and work again once the quota allows (worker: ${worker})`, async () => {
      const name = dbName()
      // No quiet-period checkpoints during the test; turn/end's row is still due (paced, §4).
      const options: OpenStoreOptions = {
        name,
        worker,
        workerUrl: worker ? new URL('./quota-worker.ts', import.meta.url) : undefined,
        checkpoint: { everyMs: 600_000 },
        // The checkpoint rows it waits for are read from the raw adapter: stored as they are,
        // not deflated by the record codec (rows of four built-in units pass its threshold).
        compression: 'none',
      }
      const store = await openStore(options)
      const s = await store.createSession({ id: 's' })
      const acked: Json[] = []
      await s.append({ type: 'turn/start', data: 'start' })
      acked.push('start')
      await s.append(Array.from({ length: 10 }, (_, i) => ({ type: 'app/e', data: i })))
      acked.push(...Array.from({ length: 10 }, (_, i) => i))
      const kid = await s.spawn({ mode: 'continuable', label: 'helper', id: 'kid' })
      await kid.close()
      acked.push(expect.objectContaining({ childId: 'kid' }) as unknown as Json)
      await s.append({ type: 'turn/end', data: 'end' })
      acked.push('end')
      const o = await store.createSession({ id: 'o' })
      await o.append([
        { type: 'app/o', data: 0 },
        { type: 'app/o', data: 1 },
      ])

      const a = createIndexedDbAdapter({ name })
      const values = s.projections.snapshot()
      // turn/end's checkpoint is paced by the cost of the last row (§4), so it may land a little
      // after the append's answer: take the picture of "before" once it has.
      await checkpointAt(a, 's', values.asOfSeq)
      const before = await snapshotStore(a)

      await setFull(context, true)
      const err = await expectCode(s.append({ type: 'app/lost' }), 'STORAGE_QUOTA_EXCEEDED')
      expect(err.message).toContain('"s"')
      await expectCode(
        s.append([
          { type: 'app/lost', data: 1 },
          { type: 'app/lost', data: 2 },
          { type: 'app/lost', data: 3 },
        ]),
        'STORAGE_QUOTA_EXCEEDED',
      )
      const together = await Promise.allSettled(
        [0, 1, 2].map((k) =>
          s.append([
            { type: 'app/lost', data: k },
            { type: 'app/lost', data: k },
          ]),
        ),
      )
      for (const r of together) expect((r as PromiseRejectedResult).reason?.code).toBe('STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.spawn({ mode: 'one-shot', id: 'orphan', events: [{ type: 'app/k' }] }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.fork({ at: 5 }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(o.append({ type: 'app/lost' }), 'STORAGE_QUOTA_EXCEEDED')
      await setFull(context, false)

      expect(await snapshotStore(a)).toEqual(before) // no orphan, no fork, no event
      expect(s.projections.snapshot()).toEqual(values)
      expect(s.projections.snapshot()).toEqual(await fullRefold(a, 's'))
      expect(await dataOf(s)).toEqual(acked)

      expect(await s.append({ type: 'app/e', data: 'after' }, { expectedSeq: values.asOfSeq + 1 })).toMatchObject({ firstSeq: values.asOfSeq + 1 })
      acked.push('after')
      const orphan = await s.spawn({ mode: 'one-shot', id: 'orphan', events: [{ type: 'app/k' }] })
      await orphan.close()
      acked.push(expect.objectContaining({ childId: 'orphan' }) as unknown as Json)
      const fork = await s.fork({ at: 5 })
      expect(await dataOf(fork)).toEqual(acked.slice(0, 5))
      await fork.close()
      await o.append({ type: 'app/o', data: 2 })
      expect(s.projections.get('subagentCatalog')!.map((c) => c.id)).toEqual(['kid', 'orphan'])
      expect(s.projections.snapshot()).toEqual(await fullRefold(a, 's'))
      await a.close()
      await store.close()

      const again = await openStore(options)
      expect(await dataOf(await again.observe('s'))).toEqual(acked)
      expect(await dataOf(await again.observe('o'))).toEqual([0, 1, 2])
      await again.close()
      await deleteDb(name)
    })
  }
})
