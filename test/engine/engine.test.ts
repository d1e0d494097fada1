// Contract: §3 projections, §4 checkpoints and cold reads — folds, checkpoint policy, cold reads, contained faults (docs/CONTRACT.md)
// The projection engine, run on every adapter.
import 'fake-indexeddb/auto'
import fc from 'fast-check'
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
import { SessionfoldError } from '../../src/core/errors'
import { hash53 } from '../../src/core/hash'
import type { SessionId } from '../../src/core/model'
import { defineProjection, type ProjectionDefinition } from '../../src/core/projection'
import { BUILTIN_PROJECTIONS } from '../../src/core/units'
import { Engine, type EngineOptions, type ProjectionChange } from '../../src/engine'
import { foldEvent, initSlots, snapshotOf } from '../../src/engine/units'
import { expectCode, readAll, snapshotStore, until as waitUntil } from '../support/helpers'
import { instrument } from '../support/instrumented-adapter'

/** Counts events by type; `stateVersion` is a parameter so tests can bump it. */
const counter = (stateVersion = 1, key = 'counts') =>
  defineProjection({
    key,
    stateVersion,
    stateSchema: z.record(z.string(), z.number().int()),
    init: () => ({}) as Record<string, number>,
    apply: (s, e) => (e.type.startsWith('app/') ? { ...s, [e.type]: (s[e.type] ?? 0) + 1 } : s),
    view: { schema: z.record(z.string(), z.number()), view: (s) => s },
  })

/** Throws on 'app/boom': a unit with a bug. */
const fragile = defineProjection({
  key: 'fragile',
  stateVersion: 1,
  stateSchema: z.number(),
  init: () => 0,
  apply: (n: number, e) => {
    if (e.type === 'app/boom') throw new Error('boom')
    return e.type === 'app/tick' ? n + 1 : n
  },
  view: { schema: z.number(), view: (n) => n },
})

const fact = (childId: string) => ({ type: 'subagent/catalog', data: { v: 2, childId, childCreatedAt: 1, mode: 'one-shot' } })

type Harness = { storage: StorageAdapter; teardown: () => Promise<void> }
const adapters: [string, () => Promise<Harness>][] = [
  ['memory', async () => ({ storage: createMemoryAdapter(), teardown: async () => {} })],
  [
    'fs',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sessionfold-engine-'))
      return { storage: createFsAdapter({ dir }), teardown: () => rm(dir, { recursive: true, force: true }) }
    },
  ],
  ['indexeddb (fake)', async () => ({ storage: createIndexedDbAdapter({ indexedDB: new IDBFactory(), name: 'engine' }), teardown: async () => {} })],
]

/** The values a full refold of the stored log gives, computed without any checkpoint. */
async function fullRefold(storage: StorageAdapter, id: SessionId, defs: readonly ProjectionDefinition[]) {
  const info = (await storage.getSession(id))!
  const slots = initSlots([...BUILTIN_PROJECTIONS, ...defs], info.header)
  for (const e of await readAll(storage, id)) foldEvent(slots, e)
  return snapshotOf(slots, info.length - 1)
}

const until = (check: () => boolean | Promise<boolean>, ms = 3000) => waitUntil(check, ms, 5)

for (const [name, make] of adapters) {
  describe(`engine on ${name}`, () => {
    const withEngine =
      (
        options: Partial<EngineOptions>,
        fn: (ctx: {
          engine: Engine
          storage: StorageAdapter
          inst: ReturnType<typeof instrument>
          errors: SessionfoldError[]
          reopen: (o?: Partial<EngineOptions>) => Engine
        }) => Promise<void>,
      ) =>
      async () => {
        const h = await make()
        const inst = instrument(h.storage)
        const errors: SessionfoldError[] = []
        const engines: Engine[] = []
        const reopen = (o: Partial<EngineOptions> = {}) => {
          // Another engine on the same storage: it shares nothing with the first but the data.
          const shared: StorageAdapter = { ...inst.adapter, close: async () => {} }
          const e = new Engine({ storage: shared, onError: (err) => errors.push(err), ...options, ...o })
          engines.push(e)
          return e
        }
        const engine = new Engine({ storage: { ...inst.adapter, close: async () => {} }, onError: (err) => errors.push(err), ...options })
        try {
          await fn({ engine, storage: h.storage, inst, errors, reopen })
        } finally {
          for (const e of [engine, ...engines]) await e.close()
          await h.storage.close()
          await h.teardown()
        }
      }

    it(
      'creates, appends and folds; a created session is open for writing',
      withEngine({}, async ({ engine }) => {
        const h = await engine.createSession({ id: 'root', cwd: '/w' })
        expect(h).toMatchObject({ id: 'root', cwd: '/w', origin: 'root', seedLength: 0, delegationDepth: 0 })
        expect(await engine.append('root', { type: 'turn/start', time: 100 })).toEqual({ firstSeq: 0, lastSeq: 0 })
        expect(await engine.append('root', [{ type: 'app/x' }, fact('c1'), { type: 'turn/end', time: 250 }])).toEqual({ firstSeq: 1, lastSeq: 3 })
        expect(engine.snapshot('root')).toEqual({
          asOfSeq: 3,
          values: {
            subagent: null,
            subagentCatalog: [{ id: 'c1', createdAt: 1, mode: 'one-shot', seq: 2 }],
            subagentTiming: { turns: 1, settledMs: 150, runningSince: null },
            sessionMeta: { title: null, tags: [] },
          },
          faults: {},
        })
        await expectCode(engine.openSession('root'), 'SESSION_LOCKED')
        await expectCode(engine.createSession({ id: 'root' }), 'SESSION_EXISTS') // the request's own error first (contract §6)
        await engine.release('root', 'writer')
        await expectCode(engine.append('root', { type: 'app/x' }), 'CLOSED')
        expect((await engine.openSession('root')).length).toBe(4)
        await expectCode(engine.openSession('nope'), 'SESSION_NOT_FOUND')
      }),
    )

    it(
      'rejects bad appends with their code and writes nothing',
      withEngine({ maxEventBytes: 1000 }, async ({ engine, storage }) => {
        await engine.createSession({ id: 's' })
        await engine.append('s', [{ type: 'app/a' }, { type: 'app/b' }])
        const before = await snapshotStore(storage)
        await expectCode(engine.append('s', { type: 'app/c' }, { expectedSeq: 1 }), 'SEQ_CONFLICT')
        await expectCode(engine.append('s', { type: 'app/c' }, { expectedSeq: 3 }), 'SEQ_CONFLICT')
        await expectCode(engine.append('s', [{ type: 'app/ok' }, { type: 'app/bad', data: { d: new Date() } }]), 'INVALID_ARGUMENT')
        await expectCode(engine.append('s', { type: 'app/big', data: 'x'.repeat(2000) }), 'EVENT_TOO_LARGE')
        await expectCode(engine.append('s', []), 'INVALID_ARGUMENT')
        await expectCode(engine.append('s', { type: 'app/c' }, { expectedSeq: -1 }), 'INVALID_ARGUMENT')
        await expectCode(engine.append('s', { type: 'app/c' }, 'x' as never), 'INVALID_ARGUMENT')
        await expectCode(engine.append('../s', { type: 'app/c' }), 'INVALID_ARGUMENT')
        // Bodies from a host that does not use encodeEventBody: JSON, but not as it writes it. A
        // raw line break would cut the event in two where stored JSON is joined by lines.
        await expectCode(engine.appendBodies('s', ['{"type":"app/c",\n"time":1,"data":null}']), 'INVALID_ARGUMENT')
        await expectCode(engine.appendBodies('s', ['{"type":"app/c","time":1,"data":null}', ' {"type":"app/c","time":1,"data":null}']), 'INVALID_ARGUMENT')
        await expectCode(engine.appendBodies('s', ['{"time":1,"type":"app/c","data":null}']), 'INVALID_ARGUMENT')
        expect(await snapshotStore(storage)).toEqual(before)
        expect(await engine.appendBodies('s', ['{"type":"app/c","time":1,"data":"a\\nb"}'])).toEqual({ firstSeq: 2, lastSeq: 2 })
        expect((await readAll(storage, 's')).at(-1)?.data).toBe('a\nb')
        await expectCode(engine.append('s', { type: 'app/c' }, { expectedSeq: 2 }), 'SEQ_CONFLICT')
        const after = await snapshotStore(storage)
        await expectCode(engine.appendBodies('s', ['{"type":"app/c",\r\n"time":1,"data":null}']), 'INVALID_ARGUMENT')
        expect(await snapshotStore(storage)).toEqual(after)
        expect(await engine.append('s', { type: 'app/c' }, { expectedSeq: 3 })).toEqual({ firstSeq: 3, lastSeq: 3 })
      }),
    )

    it(
      'checkpoints at creation, at turn/end, every N events, and at close',
      withEngine({ checkpoint: { everyEvents: 10, everyMs: 1e9 } }, async ({ engine, inst }) => {
        const seqs = () => inst.counts.checkpointWrites.map((r) => r.rows.subagent!.seq)
        await engine.createSession({ id: 'c' })
        expect(seqs()).toEqual([-1])
        await engine.append('c', [{ type: 'app/a' }, { type: 'turn/end' }])
        await until(() => seqs().length === 2)
        expect(seqs()).toEqual([-1, 1])
        for (let i = 0; i < 10; i++) await engine.append('c', { type: 'app/a' })
        await until(() => seqs().length === 3) // the tenth event since: due (perhaps deferred by its cost budget)
        expect(seqs()).toEqual([-1, 1, 11])
        expect(inst.counts.checkpointWrites[2]!.rows.counts).toBeUndefined() // no app units here
        await engine.append('c', { type: 'app/a' })
        await engine.release('c', 'writer')
        expect(seqs()).toEqual([-1, 1, 11, 12])
      }),
    )

    it(
      'checkpoints unsaved events after a quiet period',
      withEngine({ checkpoint: { everyEvents: 1e9, everyMs: 40 } }, async ({ engine, inst }) => {
        const seqs = () => inst.counts.checkpointWrites.map((r) => r.rows.subagent!.seq)
        await engine.createSession({ id: 'q' })
        await engine.append('q', [{ type: 'app/a' }, { type: 'app/b' }])
        await until(() => seqs().length === 2, 2000)
        expect(seqs()).toEqual([-1, 1])
      }),
    )

    it(
      'waits for a pause before a row by the clock: a session appending steadily gets none until it pauses, or until 15 × everyMs',
      withEngine({ checkpoint: { everyEvents: 1e9, everyMs: 300 } }, async ({ engine, inst }) => {
        const rows = () => inst.counts.checkpointWrites.length
        await engine.createSession({ id: 'steady' })
        const created = rows()
        const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
        // 1.2 s of an append every 30 ms: a row every 300 ms by the clock would be 4; waiting for a
        // pause, none (one at most, should this machine stall the loop past 300 ms).
        for (const end = performance.now() + 1200; performance.now() < end; ) {
          await engine.append('steady', { type: 'app/a' })
          await sleep(30)
        }
        expect(rows() - created).toBeLessThanOrEqual(1)
        const during = rows()
        // The pause: a row once it has lasted everyMs.
        await until(() => rows() > during, 3000)
        const seqs = inst.counts.checkpointWrites.map((r) => r.rows.subagent!.seq)
        expect(seqs.at(-1)).toBe((await engine.snapshot('steady')).asOfSeq)
      }),
    )

    it(
      'writes a row by the clock at the latest 15 × everyMs after the first unsaved event, however steady the appends',
      withEngine({ checkpoint: { everyEvents: 1e9, everyMs: 40 } }, async ({ engine, inst }) => {
        await engine.createSession({ id: 'busy' })
        const created = inst.counts.checkpointWrites.length
        // An append every 10 ms, never a 40 ms pause (unless the machine stalls): the bound, 600 ms.
        for (const end = performance.now() + 1500; performance.now() < end; ) {
          await engine.append('busy', { type: 'app/a' })
          await new Promise((r) => setTimeout(r, 10))
        }
        expect(inst.counts.checkpointWrites.length - created).toBeGreaterThanOrEqual(1)
      }),
    )

    it(
      'never writes a checkpoint ahead of the durable log, even with appends in flight',
      withEngine({ checkpoint: { everyEvents: 3 } }, async ({ engine, inst }) => {
        const violations: string[] = []
        inst.faults.onPutCheckpoint = async (id, row, inner) => {
          const length = (await inner.getSession(id))!.length
          for (const [key, r] of Object.entries(row.rows)) if (r.seq >= length) violations.push(`${key}@${r.seq} >= ${length}`)
        }
        await engine.createSession({ id: 'd' })
        // Bursts of concurrent appends with pauses between them, so that (within the engine's
        // checkpoint budget) checkpoints are written while appends are still in flight.
        for (let burst = 0; burst < 12; burst++) {
          await Promise.all(Array.from({ length: 5 }, (_, i) => engine.append('d', i === 2 ? { type: 'turn/end' } : { type: 'app/a' })))
          await new Promise((r) => setTimeout(r, 25)) // a row may start every 10x the last one's cost (its fsync on fs)
        }
        await engine.release('d', 'writer')
        expect(violations).toEqual([])
        expect(inst.counts.checkpointWrites.length).toBeGreaterThan(2) // creation, some while appending, close
      }),
    )

    it(
      'paces checkpoints by their whole cost, the storage commit included, to a tenth of the time',
      withEngine({ checkpoint: { everyEvents: 1, everyMs: 1e9 } }, async ({ engine, inst }) => {
        await engine.createSession({ id: 'p' })
        // A storage whose checkpoint commit takes 25 ms (say, a slow disk's fsync): building the
        // row costs microseconds, but rows may start at most every 10 x 25 ms.
        inst.faults.onPutCheckpoint = () => new Promise((r) => setTimeout(r, 25))
        const before = inst.counts.checkpointWrites.length
        const started = performance.now()
        let n = 0
        while (performance.now() - started < 600) {
          await engine.append('p', n++ % 2 ? { type: 'turn/end' } : { type: 'app/a' })
          await new Promise((r) => setImmediate(r)) // a memory store's appends never leave the microtask queue
        }
        const elapsed = performance.now() - started
        const written = inst.counts.checkpointWrites.length - before
        expect(written).toBeGreaterThanOrEqual(1)
        expect(written).toBeLessThanOrEqual(Math.ceil(elapsed / 250) + 1)
        await engine.release('p', 'writer') // the close still writes the latest states
        expect(inst.counts.checkpointWrites.at(-1)!.rows.subagent!.seq).toBe(n - 1)
      }),
    )

    it(
      'reports a failed checkpoint write and never fails the append',
      withEngine({ checkpoint: { everyEvents: 1 } }, async ({ engine, inst, errors }) => {
        await engine.createSession({ id: 'f' })
        inst.faults.putCheckpoint = () => new SessionfoldError('STORAGE_UNAVAILABLE', 'disk on fire')
        expect(await engine.append('f', { type: 'turn/end' })).toEqual({ firstSeq: 0, lastSeq: 0 })
        await until(() => errors.length > 0)
        expect(errors[0]!.message).toContain('"f"')
        expect(errors[0]!.code).toBe('STORAGE_UNAVAILABLE')
        inst.faults.putCheckpoint = undefined
        await engine.append('f', { type: 'turn/end' })
      }),
    )

    it(
      'a cold read with a fresh checkpoint reads only the suffix, and equals a full refold',
      withEngine({ projections: [counter()], checkpoint: { everyEvents: 1000 } }, async ({ engine, storage, inst, reopen }) => {
        await engine.createSession({ id: 'cold' })
        for (let i = 0; i < 30; i++) await engine.append('cold', [{ type: 'app/a' }, fact(`k${i}`)])
        await engine.append('cold', { type: 'turn/end' }) // checkpoint at seq 60
        await until(() => inst.counts.checkpointWrites.some((r) => r.rows.counts?.seq === 60))
        await engine.append('cold', [{ type: 'app/b' }, { type: 'app/b' }, fact('late')]) // seq 61-63, after it
        await until(async () => (await storage.getSession('cold'))!.length === 64)
        const other = reopen({ projections: [counter()] })
        inst.reset()
        const cold = await other.coldRead('cold')
        expect(inst.counts.checkpointReads).toBe(1)
        expect(inst.counts.reads).toEqual([{ id: 'cold', from: 61, to: 64 }])
        expect(inst.counts.eventsRead).toBe(3)
        expect(cold.snapshot).toEqual(await fullRefold(storage, 'cold', [counter()]))
        expect(cold.snapshot).toEqual(engine.snapshot('cold'))
        expect((cold.snapshot.values.subagentCatalog as unknown[]).length).toBe(31)
        expect(inst.counts.checkpointWrites).toEqual([]) // a cold read never writes back
      }),
    )

    it(
      'advances the watermark even when no state changed',
      withEngine({ projections: [counter()] }, async ({ engine, inst, reopen }) => {
        await engine.createSession({ id: 'w' })
        await engine.append(
          'w',
          Array.from({ length: 40 }, () => ({ type: 'ignored/by-all' })),
        )
        await engine.release('w', 'writer')
        const row = inst.counts.checkpointWrites.at(-1)!
        // The four built-in units and the counter.
        expect(Object.values(row.rows).map((r) => r.seq)).toEqual([39, 39, 39, 39, 39])
        inst.reset()
        await reopen({ projections: [counter()] }).coldRead('w')
        expect(inst.counts.eventsRead).toBe(0)
      }),
    )

    it(
      'ignores checkpoint rows it cannot trust: the cold value always equals a full refold',
      withEngine({ projections: [counter()] }, async ({ engine, storage, reopen }) => {
        await engine.createSession({ id: 'v' })
        await engine.append('v', [{ type: 'app/a' }, fact('x'), { type: 'turn/start', time: 5 }, { type: 'turn/end', time: 9 }, { type: 'app/a' }])
        await engine.release('v', 'writer')
        const good = (await storage.getCheckpoint('v')) as CheckpointRow
        const expected = await fullRefold(storage, 'v', [counter()])
        const json = JSON.stringify(good)
        // Rows that pass the checksum (re-sealed) but break one rule each, then raw damage.
        const seal = (r: Omit<CheckpointRow, 'sum'>) => ({ ...r, sum: hash53(JSON.stringify({ witness: r.witness, rows: r.rows })) })
        expect(seal(good)).toEqual(good)
        const rows: [string, unknown][] = [
          ['ver mismatch', seal({ ...good, rows: { ...good.rows, counts: { ...good.rows.counts!, ver: 7, val: { 'app/a': 99 } } } })],
          ['state fails its schema', seal({ ...good, rows: { ...good.rows, subagentTiming: { ...good.rows.subagentTiming!, val: { turns: 'many' } } } })],
          [
            'seq beyond the log',
            seal({ ...good, rows: { ...good.rows, subagent: { ver: 1, seq: 5, val: { inherited: 0, identity: { mode: 'one-shot', seq: 0 } } } } }),
          ],
          [
            'witness of another life',
            seal({
              witness: { ...good.witness, createdAt: good.witness.createdAt + 1 },
              rows: { ...good.rows, counts: { ...good.rows.counts!, val: { 'app/a': 50 } } },
            }),
          ],
          ['wrong shape', seal({ witness: good.witness, rows: { counts: { ver: 1, seq: 2 } } } as never)],
          ['truncated', json.slice(0, json.length / 2)],
          ['not an object', 42],
          ['a digit flipped (still valid JSON)', JSON.parse(json.replace('"app/a":2', '"app/a":3'))],
          ['no sum', { witness: good.witness, rows: good.rows }],
        ]
        for (const [why, row] of rows) {
          await storage.putCheckpoint('v', row as CheckpointRow)
          const cold = await reopen({ projections: [counter()] }).coldRead('v')
          expect(cold.snapshot, why).toEqual(expected)
        }
        // A bumped stateVersion refolds only that unit.
        await storage.putCheckpoint('v', good)
        const bumped = await reopen({ projections: [counter(2)] }).coldRead('v')
        expect(bumped.snapshot).toEqual(expected)
      }),
    )

    it(
      'a checkpoint of a deleted session is not taken for the new session of the same id',
      withEngine({}, async ({ engine, storage, reopen }) => {
        await engine.createSession({ id: 'reuse' })
        await engine.append('reuse', [fact('old-child'), { type: 'turn/end' }])
        await engine.release('reuse', 'writer')
        const oldRow = await storage.getCheckpoint('reuse')
        await engine.deleteSessions(['reuse'])
        await new Promise((r) => setTimeout(r, 2))
        await engine.createSession({ id: 'reuse' })
        await engine.append('reuse', [{ type: 'app/x' }, { type: 'app/y' }])
        await engine.release('reuse', 'writer')
        await storage.putCheckpoint('reuse', oldRow as CheckpointRow) // the stale row comes back
        const cold = await reopen().coldRead('reuse')
        expect(cold.snapshot.values.subagentCatalog).toEqual([])
        expect(cold.snapshot).toEqual(await fullRefold(storage, 'reuse', []))
      }),
    )

    it(
      'an interrupted rebuild writes nothing that could later pass as complete',
      withEngine({}, async ({ engine, inst, reopen }) => {
        await engine.createSession({ id: 'r' })
        await engine.append(
          'r',
          Array.from({ length: 1500 }, (_, i) => (i % 100 === 0 ? fact(`c${i}`) : { type: 'app/a' })),
        )
        await engine.release('r', 'writer')
        await inst.adapter.deleteCheckpoint('r')
        const other = reopen()
        inst.reset()
        inst.faults.readFailsAfter = 600
        await expect(other.openSession('r')).rejects.toThrow()
        expect(inst.counts.checkpointWrites).toEqual([])
        inst.faults.readFailsAfter = undefined
        await other.openSession('r') // the lock was released, and the full log is folded
        expect((other.snapshot('r').values.subagentCatalog as unknown[]).length).toBe(15)
      }),
    )

    it(
      'contains a unit that throws: its value is null and faulted, everything else goes on',
      withEngine({ projections: [fragile, counter()] }, async ({ engine, storage, reopen }) => {
        await engine.createSession({ id: 'a' })
        await engine.createSession({ id: 'b' })
        await engine.append('a', [{ type: 'app/tick' }, { type: 'app/boom' }, { type: 'app/tick' }, fact('still')])
        await engine.append('b', [{ type: 'app/tick' }, { type: 'app/tick' }])
        const a = engine.snapshot('a')
        expect(a.values.fragile).toBeNull()
        expect(a.faults).toEqual({ fragile: 'corrupt' })
        expect(a.values.counts).toEqual({ 'app/tick': 2, 'app/boom': 1 })
        expect(a.values.subagentCatalog).toHaveLength(1)
        expect(engine.snapshot('b').values.fragile).toBe(2)
        await engine.append('a', { type: 'app/tick' })
        await engine.release('a', 'writer')
        const cold = await reopen({ projections: [fragile, counter()] }).coldRead('a')
        expect(cold.snapshot).toEqual(await fullRefold(storage, 'a', [fragile, counter()]))
        expect(cold.snapshot.faults).toEqual({ fragile: 'corrupt' })
      }),
    )

    it(
      'contains a view that throws or fails its schema',
      withEngine(
        {
          projections: [
            defineProjection({
              key: 'badView',
              stateVersion: 1,
              stateSchema: z.number(),
              init: () => 0,
              apply: (n: number) => n + 1,
              view: {
                schema: z.number(),
                view: (n) => {
                  if (n > 1) throw new Error('view bug')
                  return n
                },
              },
            }),
            defineProjection({
              key: 'badSchema',
              stateVersion: 1,
              stateSchema: z.number(),
              init: () => 0,
              apply: (n: number) => n + 1,
              view: { schema: z.number().max(1), view: (n) => n },
            }),
          ],
        },
        async ({ engine }) => {
          await engine.createSession({ id: 'v' })
          await engine.append('v', { type: 'app/a' })
          expect(engine.snapshot('v').values).toMatchObject({ badView: 1, badSchema: 1 })
          await engine.append('v', { type: 'app/a' })
          const snap = engine.snapshot('v')
          expect(snap.values).toMatchObject({ badView: null, badSchema: null, subagentCatalog: [] })
          expect(snap.faults).toEqual({ badView: 'corrupt', badSchema: 'corrupt' })
        },
      ),
    )

    it(
      'computes views only while someone listens, and pushes only what changed',
      withEngine({}, async () => {
        let calls = 0
        const watched = defineProjection({
          key: 'watched',
          stateVersion: 1,
          stateSchema: z.number(),
          init: () => 0,
          apply: (n: number, e) => (e.type === 'app/inc' ? n + 1 : e.type === 'app/same' ? n + 0.5 - 0.5 + 0 * 1 : n),
          view: {
            schema: z.number(),
            view: (n) => {
              calls++
              return Math.floor(n)
            },
          },
        })
        const e2 = new Engine({ storage: createMemoryAdapter(), projections: [watched] })
        await e2.createSession({ id: 'l' })
        for (let i = 0; i < 20; i++) await e2.append('l', { type: 'app/inc' })
        expect(calls).toBe(0)
        const changes: ProjectionChange[] = []
        const stop = e2.watch('l', (c) => changes.push(c))
        expect(calls).toBe(1)
        await e2.append('l', { type: 'app/ignored' })
        expect(calls).toBe(1) // same state reference: the cached view
        await e2.append('l', { type: 'app/inc' })
        await e2.append('l', [fact('k1'), fact('k2')])
        expect(changes.map((c) => [c.seq, Object.keys(c.values)])).toEqual([
          [20, []],
          [21, ['watched']],
          [23, ['subagentCatalog']],
        ])
        expect(changes[1]!.values.watched).toBe(21)
        stop()
        const before = calls
        await e2.append('l', { type: 'app/inc' })
        expect(calls).toBe(before)
        await e2.close()
      }),
    )

    it(
      'cold, live and full refold agree for random logs, checkpoint positions and version bumps',
      withEngine({}, async ({ storage }) => {
        let run = 0
        await fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.oneof(
                fc.constantFrom({ type: 'app/a' }, { type: 'app/b' }, { type: 'turn/start' }, { type: 'turn/end' }, { type: 'other' }),
                fc.record({
                  type: fc.constant('subagent/descriptor'),
                  data: fc.oneof(fc.constant({ v: 2, mode: 'one-shot' }), fc.constant({ v: 2, mode: 'continuable', label: 'L' }), fc.constant({ v: 5 })),
                }),
                fc.record({
                  type: fc.constant('subagent/catalog'),
                  data: fc.oneof(
                    fc.constant({ v: 2, childId: 'k', childCreatedAt: 1, mode: 'one-shot' }),
                    fc.constant({ v: 1, childId: 'k', childCreatedAt: 1, mode: 'unknown' }),
                    fc.constant({ v: 9 }),
                  ),
                }),
              ),
              { minLength: 1, maxLength: 60 },
            ),
            fc.integer({ min: 1, max: 20 }),
            fc.boolean(),
            async (inputs, everyEvents, bump) => {
              const id = `p${run++}`
              const live = new Engine({ storage: { ...storage, close: async () => {} }, projections: [counter(1)], checkpoint: { everyEvents } })
              // Descriptors and facts of versions this code's appends refuse (as older or newer code
              // wrote them) are in the logs the folds must agree on: this engine appends them unchecked.
              Object.assign((live as unknown as { pipeline: { options: object } }).pipeline.options, { events: { check: (e: unknown) => e } })
              await live.createSession({ id })
              for (let i = 0; i < inputs.length; i += 3) await live.append(id, inputs.slice(i, i + 3))
              const liveSnap = live.snapshot(id)
              await live.close()
              const defs = [counter(bump ? 2 : 1)]
              const cold = await new Engine({ storage: { ...storage, close: async () => {} }, projections: defs }).coldRead(id)
              const full = await fullRefold(storage, id, defs)
              expect(cold.snapshot).toEqual(full)
              expect(liveSnap).toEqual(full)
            },
          ),
          { numRuns: name === 'memory' ? 150 : 25 },
        )
      }),
    )
  })
}
