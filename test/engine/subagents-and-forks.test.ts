// Contract: §5 subagents and forks — spawn, recordExternal, fork, listChildren (docs/CONTRACT.md)
// Subagents, forks and listChildren, on the memory and fs adapters.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFsAdapter } from '../../src/backends/fs'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { StorageAdapter } from '../../src/storage/types'
import type { SubagentListEntry } from '../../src/core/children'
import { SessionfoldError } from '../../src/core/errors'
import { Engine } from '../../src/engine'
import { encodeEvent } from '../../src/core/validate'
import { expectCode, readAll, snapshotStore } from '../support/helpers'
import { instrument } from '../support/instrumented-adapter'

type Ctx = { engine: Engine; storage: StorageAdapter; inst: ReturnType<typeof instrument>; other: () => Engine; dir?: string }

const stores: [string, () => Promise<{ storage: StorageAdapter; dir?: string; teardown: () => Promise<void> }>][] = [
  ['memory', async () => ({ storage: createMemoryAdapter(), teardown: async () => {} })],
  [
    'fs',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sessionfold-children-'))
      return { storage: createFsAdapter({ dir }), dir, teardown: () => rm(dir, { recursive: true, force: true }) }
    },
  ],
]

const brief = (rows: SubagentListEntry[]) =>
  rows.map((r) =>
    r.kind === 'child'
      ? `${'  '.repeat(r.depth)}${r.id} ${r.mode}${r.label ? ` "${r.label}"` : ''} ${r.activity}${r.hasChildren ? ' +' : ''}`
      : `${'  '.repeat(r.depth)}${r.id} !${r.reason}`,
  )

for (const [name, make] of stores) {
  describe(`subagents on ${name}`, () => {
    const withEngine = (fn: (ctx: Ctx) => Promise<void>) => async () => {
      const h = await make()
      const inst = instrument(h.storage)
      const shared = () => ({ ...inst.adapter, close: async () => {} })
      const engines: Engine[] = []
      const other = () => {
        const e = new Engine({ storage: shared() })
        engines.push(e)
        return e
      }
      const engine = new Engine({ storage: shared() })
      try {
        await fn({ engine, storage: h.storage, inst, other, dir: h.dir })
      } finally {
        for (const e of [engine, ...engines]) await e.close()
        await h.storage.close()
        await h.teardown()
      }
    }

    it(
      'spawns children listed in catalog order, with mode and label',
      withEngine(async ({ engine, storage }) => {
        const root = await engine.createSession({ id: 'root', cwd: '/repo' })
        const a = await engine.spawn('root', { mode: 'one-shot', id: 'a' })
        const b = await engine.spawn('root', { mode: 'continuable', label: 'researcher', id: 'b', events: [{ type: 'turn/start', time: 5 }] })
        const c = await engine.spawn('root', { mode: 'one-shot', label: 'lint', id: 'c' })
        expect(b).toMatchObject({ id: 'b', origin: 'subagent', parentSession: 'root', delegationDepth: 1, seedLength: 0, cwd: '/repo' })
        expect((await readAll(storage, 'b')).map((e) => [e.seq, e.type, e.data])).toEqual([
          [0, 'subagent/descriptor', { v: 2, mode: 'continuable', label: 'researcher' }],
          [1, 'turn/start', null],
        ])
        expect(engine.snapshot('b').values.subagent).toEqual({ mode: 'continuable', label: 'researcher', seq: 0 })
        expect(engine.snapshot('root').values.subagentCatalog).toEqual([
          { id: 'a', createdAt: a.createdAt, mode: 'one-shot', seq: 0 },
          { id: 'b', createdAt: b.createdAt, mode: 'continuable', label: 'researcher', seq: 1 },
          { id: 'c', createdAt: c.createdAt, mode: 'one-shot', label: 'lint', seq: 2 },
        ])
        await engine.release('c', 'writer')
        expect(await engine.listChildren('root')).toEqual([
          { kind: 'child', id: 'a', parentId: 'root', depth: 0, createdAt: a.createdAt, activity: 'running', hasChildren: false, mode: 'one-shot' },
          {
            kind: 'child',
            id: 'b',
            parentId: 'root',
            depth: 0,
            createdAt: b.createdAt,
            activity: 'running',
            hasChildren: false,
            mode: 'continuable',
            label: 'researcher',
          },
          {
            kind: 'child',
            id: 'c',
            parentId: 'root',
            depth: 0,
            createdAt: c.createdAt,
            activity: 'inactive',
            hasChildren: false,
            mode: 'one-shot',
            label: 'lint',
          },
        ])
        expect(root.delegationDepth).toBe(0)
      }),
    )

    it(
      'rejects bad spawns before writing anything',
      withEngine(async ({ engine, storage }) => {
        await engine.createSession({ id: 'p' })
        const before = await snapshotStore(storage)
        for (const bad of [
          { mode: 'continuable' },
          { mode: 'forever' },
          {},
          { mode: 'one-shot', label: '' },
          { mode: 'one-shot', label: 'x'.repeat(257) },
          { mode: 'one-shot', label: 7 },
          { mode: 'one-shot', events: 'x' },
          { mode: 'one-shot', events: [{ type: 't', data: () => 1 }] },
          { mode: 'one-shot', id: '../x' },
          { mode: 'one-shot', extra: true },
          null,
          'one-shot',
        ]) {
          await expectCode(engine.spawn('p', bad), 'INVALID_ARGUMENT')
        }
        await expectCode(engine.spawn('p', { mode: 'one-shot', events: [{ type: 't', data: 'x'.repeat(2 * 1024 * 1024) }] }), 'EVENT_TOO_LARGE')
        await expectCode(engine.spawn('nobody', { mode: 'one-shot' }), 'CLOSED')
        expect(await snapshotStore(storage)).toEqual(before)
      }),
    )

    it(
      'a spawn whose descriptor append fails leaves no child and no fact',
      withEngine(async ({ engine, storage, inst }) => {
        await engine.createSession({ id: 'p' })
        const before = await snapshotStore(storage)
        inst.faults.append = (id) => (id === 'doomed' ? new SessionfoldError('STORAGE_UNAVAILABLE', 'injected') : undefined)
        await expectCode(engine.spawn('p', { mode: 'one-shot', id: 'doomed' }), 'STORAGE_UNAVAILABLE')
        expect(await storage.getSession('doomed')).toBeUndefined()
        expect(await snapshotStore(storage)).toEqual(before)
        expect(await engine.listChildren('p')).toEqual([])
        // A failed catalog append also takes the child away: nothing was published.
        inst.faults.append = (id) => (id === 'p' ? new SessionfoldError('STORAGE_QUOTA_EXCEEDED', 'injected') : undefined)
        await expectCode(engine.spawn('p', { mode: 'one-shot', id: 'orphan' }), 'STORAGE_QUOTA_EXCEEDED')
        expect(await storage.getSession('orphan')).toBeUndefined()
        inst.faults.append = undefined
        await engine.spawn('p', { mode: 'one-shot', id: 'fine' })
        expect((await engine.listChildren('p')).map((r) => r.id)).toEqual(['fine'])
      }),
    )

    it(
      'orders concurrent spawns by their catalog appends',
      withEngine(async ({ engine }) => {
        await engine.createSession({ id: 'p' })
        const heads = await Promise.all(
          Array.from({ length: 12 }, (_, i) => engine.spawn('p', { mode: 'one-shot', id: `k${i}`, events: i % 2 ? [{ type: 'x' }] : [] })),
        )
        const catalog = engine.snapshot('p').values.subagentCatalog as { id: string; seq: number }[]
        expect(catalog.map((e) => e.seq)).toEqual([...Array(12).keys()])
        expect(new Set(catalog.map((e) => e.id))).toEqual(new Set(heads.map((h) => h.id)))
        expect((await engine.listChildren('p')).map((r) => r.id)).toEqual(catalog.map((e) => e.id))
      }),
    )

    it(
      'records external executions without a local session',
      withEngine(async ({ engine, storage }) => {
        await engine.createSession({ id: 'p' })
        await engine.recordExternal('p', { childId: 'ci-run-7', label: 'CI' })
        await engine.recordExternal('p', { childId: 'remote' })
        await expectCode(engine.recordExternal('p', { childId: 'a/b' }), 'INVALID_ARGUMENT')
        await expectCode(engine.recordExternal('p', { childId: 'x', label: '' }), 'INVALID_ARGUMENT')
        expect(await storage.getSession('ci-run-7')).toBeUndefined()
        expect(brief(await engine.listChildren('p', { recursive: true }))).toEqual(['ci-run-7 external "CI" inactive', 'remote external inactive'])
      }),
    )

    it(
      'a fork inherits no children and no identity; its own spawns list only in the fork',
      withEngine(async ({ engine, storage }) => {
        await engine.createSession({ id: 'p' })
        await engine.append('p', { type: 'app/hello' })
        for (const id of ['a', 'b', 'c']) await engine.spawn('p', { mode: 'one-shot', id })
        await engine.spawn('p', { mode: 'continuable', label: 'w', id: 'sub' })
        await engine.spawn('sub', { mode: 'one-shot', id: 'grand' })
        const f = await engine.fork('p', { id: 'f' })
        expect(f).toMatchObject({ origin: 'fork', forkedFrom: 'p', seedLength: 5, delegationDepth: 0 })
        expect((await readAll(storage, 'f')).map((e) => e.type)).toEqual(['app/hello', ...Array(4).fill('subagent/catalog')])
        expect(await engine.listChildren('f')).toEqual([])
        await engine.spawn('f', { mode: 'one-shot', id: 'fork-child' })
        expect((await engine.listChildren('f')).map((r) => r.id)).toEqual(['fork-child'])
        expect((await engine.listChildren('p')).map((r) => r.id)).toEqual(['a', 'b', 'c', 'sub'])
        const fs = await engine.fork('sub', { id: 'fsub', at: 1 })
        expect(fs).toMatchObject({ seedLength: 1, delegationDepth: 1 })
        expect(engine.snapshot('fsub').values).toMatchObject({ subagent: null, subagentCatalog: [] })
        const early = await engine.fork('p', { id: 'early', at: 0 })
        expect(early.seedLength).toBe(0)
        for (const at of [-1, 99, 1.5, '2']) await expectCode(engine.fork('p', { at, id: 'bad' }), 'INVALID_ARGUMENT')
        await expectCode(engine.fork('ghost'), 'SESSION_NOT_FOUND')
      }),
    )

    it(
      'shows every diagnostic reason, leaving siblings unaffected',
      withEngine(async ({ engine, storage }) => {
        await engine.createSession({ id: 'p' })
        for (const id of ['ok1', 'gone', 'reused', 'foreign', 'badcat', 'ok2']) {
          await engine.spawn('p', { mode: 'one-shot', id })
          await engine.release(id, 'writer')
        }
        // unavailable: the child is gone
        await engine.deleteSessions(['gone'])
        // corrupt: deleted and its id re-used by another life
        await engine.deleteSessions(['reused'])
        await new Promise((r) => setTimeout(r, 2))
        await engine.createSession({ id: 'reused' })
        await engine.release('reused', 'writer')
        // corrupt: a session of that id names another parent
        await engine.deleteSessions(['foreign'])
        await engine.createSession({ id: 'other-parent' })
        await storage.createSession({
          version: 1,
          id: 'foreign',
          createdAt: (engine.snapshot('p').values.subagentCatalog as { id: string; createdAt: number }[]).find((e) => e.id === 'foreign')!.createdAt,
          parentSession: 'other-parent',
          seedLength: 0,
          delegationDepth: 1,
          origin: 'subagent',
        })
        // corrupt: the child's own catalog is rejected
        // (a fact this code's appends refuse: written as newer code would have, under the engine)
        const at = (await storage.getSession('badcat'))!.length
        await storage.append('badcat', [encodeEvent({ seq: at, type: 'subagent/catalog', time: 1, data: { v: 9 } }, 'badcat')])
        // unsupported: a historical fact whose mode was lost; its children are still walked
        const legacy = await engine.spawn('p', { mode: 'one-shot', id: 'legacy' })
        await engine.spawn('legacy', { mode: 'one-shot', id: 'legacy-kid' })
        await engine.append('p', { type: 'subagent/catalog', data: { v: 1, childId: 'legacy', childCreatedAt: legacy.createdAt, mode: 'unknown' } })
        expect(brief(await engine.listChildren('p', { recursive: true }))).toEqual([
          'ok1 one-shot inactive',
          'gone !unavailable',
          'reused !corrupt',
          'foreign !corrupt',
          'badcat !corrupt',
          'ok2 one-shot inactive',
          'legacy one-shot running +',
          '  legacy-kid one-shot running',
        ])
        await expectCode(engine.listChildren('ghost'), 'SESSION_NOT_FOUND')
      }),
    )

    it(
      'walks a unknown-mode fact’s children and visits each session once, even in a cycle',
      withEngine(async ({ engine }) => {
        const p = await engine.createSession({ id: 'p' })
        const kid = await engine.spawn('p', { mode: 'one-shot', id: 'kid' })
        await engine.spawn('kid', { mode: 'one-shot', id: 'grand' })
        // A catalog that points back at its ancestor, and a repeated fact.
        await engine.append('kid', { type: 'subagent/catalog', data: { v: 2, childId: 'p', childCreatedAt: p.createdAt, mode: 'one-shot' } })
        await engine.append('p', { type: 'subagent/catalog', data: { v: 2, childId: 'kid', childCreatedAt: kid.createdAt, mode: 'one-shot' } })
        expect(brief(await engine.listChildren('p', { recursive: true }))).toEqual(['kid one-shot running +', '  grand one-shot running'])
      }),
    )

    it(
      'cancels before, during and after the walk, leaving no read running',
      withEngine(async ({ engine, inst }) => {
        await engine.createSession({ id: 'p' })
        for (let i = 0; i < 30; i++) {
          await engine.spawn('p', { mode: 'one-shot', id: `c${i}`, events: Array.from({ length: 50 }, () => ({ type: 'x' })) })
          await engine.release(`c${i}`, 'writer')
        }
        const before = new AbortController()
        before.abort()
        await expectCode(engine.listChildren('p', { signal: before.signal }), 'CANCELLED')
        const during = new AbortController()
        inst.reset()
        let started = 0
        inst.faults.onRead = () => {
          if (++started === 5) during.abort() // mid-walk, whatever the adapter's speed
        }
        await engine.release('p', 'writer') // cold, so the walk reads
        await expectCode(engine.listChildren('p', { recursive: true, signal: during.signal }), 'CANCELLED')
        expect(inst.counts.readsInFlight).toBe(0)
        expect(started).toBeGreaterThanOrEqual(5)
        expect(started).toBeLessThan(31)
        inst.faults.onRead = undefined
        const after = new AbortController()
        const rows = await engine.listChildren('p', { signal: after.signal })
        after.abort()
        expect(rows).toHaveLength(30)
        await expectCode(engine.listChildren('p', { signal: 'no' }), 'INVALID_ARGUMENT')
      }),
    )

    it(
      'costs no event reads for live children, one checkpoint and the suffix for cold ones, at most 4 at a time',
      withEngine(async ({ engine, inst, other }) => {
        await engine.createSession({ id: 'p' })
        for (let i = 0; i < 20; i++) await engine.spawn('p', { mode: 'one-shot', id: `c${i}`, events: [{ type: 'turn/start' }, { type: 'turn/end' }] })
        inst.reset()
        const live = await engine.listChildren('p', { recursive: true })
        expect(live).toHaveLength(20)
        expect(inst.counts.eventsRead).toBe(0)
        expect(inst.counts.reads).toEqual([])
        for (let i = 0; i < 20; i++) {
          await engine.release(`c${i}`, 'writer') // close checkpoints: fresh
        }
        await engine.release('p', 'writer')
        const cold = other()
        inst.reset()
        const rows = await cold.listChildren('p', { recursive: true })
        expect(rows.map((r) => r.kind === 'child' && r.activity)).toEqual(Array(20).fill('inactive'))
        expect(inst.counts.checkpointReads).toBe(21) // the parent and each child, once
        expect(inst.counts.eventsRead).toBe(0) // every checkpoint was fresh: empty suffixes
        expect(inst.counts.maxReadsInFlight).toBeLessThanOrEqual(4)
      }),
    )

    it(
      'a recursive listing of a cold 3-level tree of 200 sessions equals the live one',
      withEngine(async ({ engine, inst, other }) => {
        await engine.createSession({ id: 'root' })
        const ids: string[] = []
        const perDepth = [0, 0, 0]
        const add = async (parent: string, id: string, depth: number, opts: object) => {
          await engine.spawn(parent, { mode: 'one-shot', id, ...opts })
          ids.push(id)
          perDepth[depth]!++
        }
        for (let i = 0; i < 10 && ids.length < 199; i++) {
          await add('root', `a${i}`, 0, i % 3 ? { label: `L${i}` } : { mode: 'continuable', label: `L${i}` })
          for (let j = 0; j < 5 && ids.length < 199; j++) {
            await add(`a${i}`, `a${i}b${j}`, 1, { events: [{ type: 'turn/start' }] })
            for (let k = 0; k < 3 && ids.length < 199; k++) await add(`a${i}b${j}`, `a${i}b${j}c${k}`, 2, {})
          }
        }
        expect(ids.length + 1).toBe(200)
        const live = await engine.listChildren('root', { recursive: true })
        expect(live).toHaveLength(199)
        for (const id of [...ids].reverse()) await engine.release(id, 'writer')
        await engine.release('root', 'writer')
        inst.reset()
        const cold = await other().listChildren('root', { recursive: true })
        expect(cold).toEqual(live.map((r) => (r.kind === 'child' ? { ...r, activity: 'inactive' } : r)))
        expect(inst.counts.maxReadsInFlight).toBeLessThanOrEqual(4)
        expect([0, 1, 2].map((d) => cold.filter((r) => r.depth === d).length)).toEqual(perDepth)
      }),
    )

    if (name === 'fs') {
      it(
        'a process that dies between the child’s descriptor and the parent’s fact leaves an undiscovered child, never a dangling fact',
        withEngine(async ({ engine, dir }) => {
          // The "process": an engine whose storage never completes the parent's catalog append.
          const adapter = createFsAdapter({ dir })
          const hang: StorageAdapter = {
            ...adapter,
            append: (id, batch) => (id === 'p' && batch[0]!.event.type === 'subagent/catalog' ? new Promise(() => {}) : adapter.append(id, batch)),
          }
          const dying = new Engine({ storage: hang })
          await dying.createSession({ id: 'p' })
          void dying.spawn('p', { mode: 'one-shot', id: 'stray' })
          await new Promise((r) => setTimeout(r, 100)) // the child and its descriptor are durable now; then "SIGKILL"
          const fresh = createFsAdapter({ dir })
          expect((await readAll(fresh, 'stray')).map((e) => e.type)).toEqual(['subagent/descriptor'])
          expect((await readAll(fresh, 'p')).map((e) => e.type)).toEqual([])
          const after = new Engine({ storage: fresh })
          expect(await after.listChildren('p')).toEqual([])
          await after.close()
          void engine
        }),
      )
    }
  })
}
