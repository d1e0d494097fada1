// Contract: §8 sync, §13 no splice, §15 deletes — both ways between IndexedDB databases in Chromium, through real workers (docs/CONTRACT.md)
// Sync in Chromium on real IndexedDB: two databases, their engines in module Web Workers or in
// the page, batches through the structured clone of real workers.
import { expect, it } from 'vitest'
import { openStore, sync, type OpenStoreOptions } from 'sessionfold'
import { dumpStore, expectCode } from '../support/helpers'
import { expectNoSplice } from '../support/splice'
import { expectDeletesTravel } from '../support/tombstones'

let n = 0
const db = () => `sync-${Date.now()}-${n++}`

for (const [mode, worker] of [
  ['module Web Worker', true],
  ['in the page', false],
] as [string, OpenStoreOptions['worker']][]) {
  it(`syncs both ways and applies a batch once, refusing a bad one whole (${mode})`, async () => {
    const a = await openStore({ name: db(), worker })
    const b = await openStore({ name: db(), worker })
    const root = await a.createSession({ id: 'root' })
    await root.append([{ type: 'turn/start' }, { type: 'turn/end' }])
    await (await root.spawn({ mode: 'continuable', label: 'kid', id: 'kid' })).close()
    const other = await b.createSession({ id: 'other' })
    await other.append({ type: 'app/e', data: { on: 'b' } })
    const result = await sync(a, b, { direction: 'both' })
    expect(result).toMatchObject({ copiedSessions: 3, conflicts: [], skipped: [] })
    expect(await dumpStore(b)).toEqual(await dumpStore(a))
    const view = await b.observe('root')
    expect((await view.listChildren()).map((r) => r.id)).toEqual(['kid'])
    await root.append({ type: 'turn/start' })
    const { batch } = await a.changesSince((await b.changesSince({ v: 1, sessions: {} })).cursor)
    expect(batch.sessions.map((e) => [e.header.id, e.from, e.events.length])).toEqual([['root', 3, 1]])
    const before = await dumpStore(b)
    const bad = structuredClone(batch)
    bad.sessions[0]!.events[0]!.seq = 9
    await expectCode(b.applyChanges(bad), 'INVALID_ARGUMENT')
    expect(await dumpStore(b)).toEqual(before)
    expect(await b.applyChanges(batch)).toMatchObject({ copiedEvents: 1 })
    expect(await b.applyChanges(batch)).toMatchObject({ copiedEvents: 0, conflicts: [] })
    // The open handle on b receives the imported event like another writer's.
    for (let i = 0; i < 200 && view.projections.snapshot().asOfSeq < 3; i++) await new Promise((r) => setTimeout(r, 5))
    expect(view.projections.snapshot().asOfSeq).toBe(3)
    await view.close()
    await a.close()
    await b.close()
  })
}

// §13: a batch continues only the history it was made from, on real IndexedDB through real workers.
for (const [mode, worker] of [
  ['module Web Workers', true],
  ['in the page', false],
] as [string, OpenStoreOptions['worker']][]) {
  it(`the splice repro ends in reported conflicts with both logs unchanged (${mode})`, async () => {
    const s = await openStore({ name: db(), worker })
    const d = await openStore({ name: db(), worker })
    try {
      await expectNoSplice(s, d)
    } finally {
      await s.close()
      await d.close()
    }
  })
}

// §15: deletes travel as tombstones, on real IndexedDB through real workers (test/support/tombstones.ts).
for (const [mode, worker] of [
  ['module Web Workers', true],
  ['in the page', false],
] as [string, OpenStoreOptions['worker']][]) {
  it(`a delete reaches the other stores, a stale copy is refused and then deleted, and the id can be used again (${mode})`, async () => {
    const stores = [await openStore({ name: db(), worker }), await openStore({ name: db(), worker }), await openStore({ name: db(), worker })]
    try {
      await expectDeletesTravel(stores[0]!, stores[1]!, stores[2]!)
    } finally {
      for (const s of stores) await s.close()
    }
  })
}
