// Contract: §9 time travel — observe as of any point, history rows, their checks and rebuild (docs/CONTRACT.md)
// The engine's read at a point (src/engine/read-at.ts) and its history rows
// (src/engine/history.ts) on memory, fs and IndexedDB (fake here; real Chromium in
// test/browser): values equal a refold of the prefix wherever the point is, a read restores one
// row and folds a bounded number of events, damaged rows are passed over, missing rows are
// rebuilt by a writer, and bad options write nothing.
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createFsAdapter } from '../../src/backends/fs'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { CheckpointRow, StorageAdapter } from '../../src/storage/types'
import { witnessOf, type SessionId } from '../../src/core/model'
import { defineProjection } from '../../src/core/projection'
import { BUILTIN_PROJECTIONS } from '../../src/core/units'
import { Engine } from '../../src/engine'
import { HISTORY_EVERY } from '../../src/engine/history'
import { checkpointRowOf, foldEvent, initSlots, snapshotOf } from '../../src/engine/units'
import { ev, expectCode, readAll, rootHeader, snapshotStore } from '../support/helpers'
import { instrument } from '../support/instrumented-adapter'

/** Sums the data of 'app/n' events and counts the others: a value that moves with every event. */
const tally = defineProjection({
  key: 'tally',
  stateVersion: 1,
  stateSchema: z.object({ sum: z.number(), other: z.number() }),
  init: () => ({ sum: 0, other: 0 }),
  apply: (s, e) => (e.type === 'app/n' ? { ...s, sum: s.sum + (e.data as number) } : { ...s, other: s.other + 1 }),
  view: { schema: z.object({ sum: z.number(), other: z.number() }), view: (s) => s },
})
const defs = [...BUILTIN_PROJECTIONS, tally]

type Harness = { storage: StorageAdapter; teardown: () => Promise<void> }
const adapters: [string, () => Promise<Harness>][] = [
  ['memory', async () => ({ storage: createMemoryAdapter(), teardown: async () => {} })],
  [
    'fs',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sessionfold-history-'))
      return { storage: createFsAdapter({ dir }), teardown: () => rm(dir, { recursive: true, force: true }) }
    },
  ],
  ['indexeddb (fake)', async () => ({ storage: createIndexedDbAdapter({ indexedDB: new IDBFactory(), name: 'history' }), teardown: async () => {} })],
]

/** What a full refold of the first `at` stored events gives, with no row at all. */
async function refoldPrefix(storage: StorageAdapter, id: SessionId, at: number) {
  const info = (await storage.getSession(id))!
  const slots = initSlots(defs, info.header)
  for (const e of await readAll(storage, id, { to: at })) foldEvent(slots, e)
  return snapshotOf(slots, at - 1)
}

/** `n` events in batches of 50: mostly app/n with data seq, a turn and a catalog fact now and then. */
async function write(engine: Engine, id: SessionId, n: number, from = 0): Promise<void> {
  for (let at = from; at < from + n; at += 50) {
    const batch = []
    for (let seq = at; seq < Math.min(from + n, at + 50); seq++) {
      if (seq % 1000 === 500) batch.push({ type: 'subagent/catalog', data: { v: 2, childId: `kid-${seq}`, childCreatedAt: 1, mode: 'one-shot' } })
      else batch.push(seq % 97 === 0 ? { type: 'turn/start' } : { type: 'app/n', data: seq })
    }
    await engine.append(id, batch)
  }
}

const POINTS = [0, 1, 499, 501, HISTORY_EVERY - 1, HISTORY_EVERY, HISTORY_EVERY + 1, 10_000, 12_345, 19_999, 20_000]

describe.each(adapters)('time travel on %s', (_name, make) => {
  it('observeAt equals a refold of the prefix at every point; rows land every HISTORY_EVERY events or so; a read folds a bounded number of events', async () => {
    const h = await make()
    const inst = instrument(h.storage)
    const engine = new Engine({ storage: inst.adapter, projections: [tally], checkpoint: { everyEvents: 64 } })
    try {
      await engine.createSession({ id: 'tt' })
      await write(engine, 'tt', 20_000)
      await engine.release('tt', 'writer')
      const rows = await h.storage.history!.list('tt')
      expect(rows.length).toBeGreaterThanOrEqual(17)
      expect(rows.length).toBeLessThanOrEqual(20_000 / HISTORY_EVERY)
      // Exactly where they are due (built at the fold, mid-batch, stored in the background),
      // whatever a write costs; the first one once the newest row was looked up.
      expect(rows[0]).toBe(HISTORY_EVERY)
      for (const [i, p] of rows.slice(1).entries()) expect(p - rows[i]!).toBe(HISTORY_EVERY)
      for (const at of POINTS) {
        inst.reset()
        const seen = await engine.observeAt('tt', { at })
        expect(seen.at).toBe(at)
        expect(seen.snapshot).toEqual(await refoldPrefix(h.storage, 'tt', at))
        // One row restored (the latest or a history row), then at most the events since it.
        expect(inst.counts.eventsRead, `events folded for at=${at}`).toBeLessThanOrEqual(2 * HISTORY_EVERY)
      }
      // The catalog as it was: kids 500, 1500, ... before the point.
      const kids = (await engine.listChildren('tt', { at: 2000 })).map((r) => r.id)
      expect(kids).toEqual(['kid-500', 'kid-1500'])
      expect((await engine.listChildren('tt', {})).length).toBe(20)
    } finally {
      await engine.close()
      await h.teardown()
    }
  })

  it('history rows are a cache: a damaged, foreign or too-new row is passed over, and the values are still a refold', async () => {
    const h = await make()
    const engine = new Engine({ storage: h.storage, projections: [tally] })
    try {
      await engine.createSession({ id: 'dmg' })
      await write(engine, 'dmg', 3000)
      await engine.release('dmg', 'writer')
      await h.storage.deleteCheckpoint('dmg')
      const good = (await engine.observeAt('dmg', { at: 1000 })).snapshot
      const witness = witnessOf((await h.storage.getSession('dmg'))!.header)
      const tallyRow = (sum: number, seq: number): CheckpointRow => ({ witness, rows: { tally: { ver: 1, seq, val: { sum, other: 0 } } } })
      const bad: [number, unknown][] = [
        [900, { ...tallyRow(1, 899), sum: 'not the sum' }], // a checksum that does not match
        [950, { ...tallyRow(2, 949), witness: { ...witness, createdAt: witness.createdAt + 1 } }], // another life of the id
        [990, tallyRow(3, 1500)], // a unit past the point read
        [995, { nonsense: true }],
      ]
      for (const [at, row] of bad) {
        await h.storage.history!.put('dmg', at, row as CheckpointRow)
        expect((await engine.observeAt('dmg', { at: 1000 })).snapshot).toEqual(good)
        await h.storage.history!.remove('dmg', [at])
      }
      expect(good).toEqual(await refoldPrefix(h.storage, 'dmg', 1000))
      // A damaged newest row (cut by a crash) is passed over for the one before it, not for a refold from 0.
      const slots = initSlots(defs, (await h.storage.getSession('dmg'))!.header)
      for (const e of await readAll(h.storage, 'dmg', { to: 500 })) foldEvent(slots, e)
      await h.storage.history!.put('dmg', 500, checkpointRowOf((await h.storage.getSession('dmg'))!.header, slots).row)
      await h.storage.history!.put('dmg', 800, { nonsense: true } as unknown as CheckpointRow)
      const inst = instrument(h.storage)
      const counted = new Engine({ storage: { ...inst.adapter, close: async () => {} }, projections: [tally] })
      expect((await counted.observeAt('dmg', { at: 1000 })).snapshot).toEqual(good)
      expect(inst.counts.eventsRead).toBe(500)
      await counted.close()
    } finally {
      await engine.close()
      await h.teardown()
    }
  })

  it('a log with no history rows (imported, synced) gets them rebuilt once a writer has it; reads meanwhile refold', async () => {
    const h = await make()
    // Written below the engine, as an import or an older sessionfold would leave it: no rows.
    await h.storage.createSession(rootHeader('old'))
    for (let at = 0; at < 13_000; at += 500) {
      await h.storage.append(
        'old',
        Array.from({ length: 500 }, (_, i) => ev('old', at + i, at + i, 'app/n')),
      )
    }
    const engine = new Engine({ storage: h.storage, projections: [tally] })
    try {
      expect((await engine.observeAt('old', { at: 9000 })).snapshot).toEqual(await refoldPrefix(h.storage, 'old', 9000))
      expect(await h.storage.history!.list('old')).toEqual([]) // a read never writes back
      await engine.openSession('old')
      await engine.append('old', { type: 'app/n', data: 1 })
      await engine.release('old', 'writer')
      await engine.history!.settled('old')
      const rows = await h.storage.history!.list('old')
      expect(rows.length).toBeGreaterThanOrEqual(2)
      expect(rows[0]).toBe(HISTORY_EVERY)
      for (const at of [HISTORY_EVERY + 7, 9000, 12_999]) {
        expect((await engine.observeAt('old', { at })).snapshot).toEqual(await refoldPrefix(h.storage, 'old', at))
      }
    } finally {
      await engine.close()
      await h.teardown()
    }
  })

  it('bad options and points out of range are INVALID_ARGUMENT and write nothing', async () => {
    const h = await make()
    const engine = new Engine({ storage: h.storage, projections: [tally] })
    try {
      await engine.createSession({ id: 'opt' })
      await write(engine, 'opt', 100)
      await engine.release('opt', 'writer')
      const before = await snapshotStore(h.storage)
      for (const options of [{ at: 101 }, { at: -1 }, { at: 1.5 }, { at: '3' }, { at: null }, {}, { at: 1, extra: 1 }, null, 5, []]) {
        await expectCode(engine.observeAt('opt', options), 'INVALID_ARGUMENT')
      }
      for (const at of [101, -1, 1.5, '3', null]) await expectCode(engine.listChildren('opt', { at }), 'INVALID_ARGUMENT')
      await expectCode(engine.observeAt('ghost', { at: 0 }), 'SESSION_NOT_FOUND')
      expect(await snapshotStore(h.storage)).toEqual(before)
      expect((await engine.observeAt('opt', { at: 100 })).snapshot).toEqual(await refoldPrefix(h.storage, 'opt', 100))
    } finally {
      await engine.close()
      await h.teardown()
    }
  })
})
