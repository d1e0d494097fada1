// Reliability: a full IndexedDB quota (fake-indexeddb) — STORAGE_QUOTA_EXCEEDED, nothing partial, recovery (§6 errors, §7 durability)
// A full IndexedDB quota through the public client (worker: false, fake-indexeddb): a put that
// throws QuotaExceededError, a transaction aborted with it while requests are pending, and one
// aborted with it at commit. The failing call rejects with STORAGE_QUOTA_EXCEEDED, nothing of
// it is stored (not even the requests that succeeded), earlier data and projections are
// intact, and appends work again once the quota allows. Real Chromium with a real quota:
// test/browser/quota.browser.test.ts.
import 'fake-indexeddb/auto'
import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Session } from 'sessionfold'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import type { Json } from '../../src/core/model'
import { installQuotaFaults, type IdbFault } from '../fixtures/idb-faults'
import { expectCode, snapshotStore } from '../support/helpers'
import { fullRefold } from '../support/refold'

let fault: IdbFault = ''
const uninstall = installQuotaFaults(() => fault)
afterEach(() => {
  fault = ''
})
process.on('exit', uninstall)

/** Every key in the events store: what a half-stored batch would show first. */
async function rawEventCount(name: string): Promise<number> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const r = indexedDB.open(name)
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })
  try {
    return await new Promise<number>((resolve, reject) => {
      const r = db.transaction('events').objectStore('events').count()
      r.onsuccess = () => resolve(r.result)
      r.onerror = () => reject(r.error)
    })
  } finally {
    db.close()
  }
}

async function dataOf(s: Session): Promise<Json[]> {
  const out: Json[] = []
  for await (const e of s.events()) out.push(e.data)
  return out
}

let n = 0
describe('a full IndexedDB quota through the public client (fake-indexeddb)', () => {
  for (const f of ['throw', 'abort-mid', 'abort-commit'] as const) {
    it(`${f}: appends, spawns and creates reject with STORAGE_QUOTA_EXCEEDED, store nothing, and work again after`, async () => {
      const name = `quota-${n++}`
      const store = await openStore({ storage: 'indexeddb', name, worker: false, checkpoint: { everyMs: 600_000 } }) // no quiet-period row during the test
      const s = await store.createSession({ id: 's' })
      const acked: Json[] = []
      await s.append({ type: 'turn/start', data: 'start', time: 1 })
      acked.push('start')
      await s.append(Array.from({ length: 10 }, (_, i) => ({ type: 'app/e', data: i, time: 2 })))
      acked.push(...Array.from({ length: 10 }, (_, i) => i))
      const kid = await s.spawn({ mode: 'one-shot', id: 'kid' })
      await kid.close()
      acked.push(expect.objectContaining({ childId: 'kid' }) as unknown as Json)
      const a = createIndexedDbAdapter({ name })
      const before = await snapshotStore(a)
      const rawBefore = await rawEventCount(name)
      const values = s.projections.snapshot()

      fault = f
      const err = await expectCode(
        s.append([
          { type: 'app/lost', data: 1 },
          { type: 'app/lost', data: 2 },
          { type: 'app/lost', data: 3 },
        ]),
        'STORAGE_QUOTA_EXCEEDED',
      )
      expect(err.message).toContain('"s"')
      const together = await Promise.allSettled(
        [1, 2].map((k) =>
          s.append([
            { type: 'app/lost', data: k },
            { type: 'app/lost', data: k },
          ]),
        ),
      )
      for (const r of together) expect((r as PromiseRejectedResult).reason?.code).toBe('STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.spawn({ mode: 'one-shot', id: 'orphan', events: [{ type: 'app/k' }] }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.fork({ at: 5 }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(
        store.createSession({ id: 'new' }).then((x) => x.append([{ type: 'a' }, { type: 'b' }])),
        'STORAGE_QUOTA_EXCEEDED',
      )
      fault = ''

      // 'new' may exist (creation writes one row) but holds no event; nothing else changed.
      const now = (await snapshotStore(a)) as Record<string, unknown>
      delete now.new
      expect(now).toEqual(before)
      expect(await rawEventCount(name)).toBe(rawBefore)
      expect(s.projections.snapshot()).toEqual(values)
      expect(s.projections.snapshot()).toEqual(await fullRefold(a, 's'))
      expect(await dataOf(s)).toEqual(acked)

      // Quota back: numbering carries on from the last durable event.
      expect(await s.append({ type: 'app/e', data: 'after' }, { expectedSeq: values.asOfSeq + 1 })).toMatchObject({ firstSeq: values.asOfSeq + 1 })
      acked.push('after')
      const k2 = await s.spawn({ mode: 'one-shot', id: 'orphan' })
      await k2.close()
      acked.push(expect.objectContaining({ childId: 'orphan' }) as unknown as Json)
      expect(s.projections.get('subagentCatalog')!.map((c) => c.id)).toEqual(['kid', 'orphan'])
      expect(await dataOf(s)).toEqual(acked)
      expect(s.projections.snapshot()).toEqual(await fullRefold(a, 's'))
      await a.close()
      await store.close()

      const again = await openStore({ storage: 'indexeddb', name, worker: false })
      const view = await again.observe('s')
      expect(await dataOf(view as Session)).toEqual(acked)
      await again.close()
    })
  }
})
