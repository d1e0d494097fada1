// Contract: §6 client API (§5 subagents, §8 verify through it) — the client suite every worker mode runs (docs/CONTRACT.md)
// The client contract, written once: Node runs it in this thread and in
// worker_threads on fs and IndexedDB, Chromium with a module Web Worker and a SharedWorker.
import { describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions, type Store, type SubagentListEntry } from 'sessionfold'
import { expectCode } from '../support/helpers'
import { sessionListCases } from './session-list'

export const tick = () => new Promise((r) => setTimeout(r, 0))

/** Waits (at most 5 s) for a condition that a push will make true. */
export async function until(check: () => boolean): Promise<void> {
  for (const end = Date.now() + 5000; !check(); await new Promise((r) => setTimeout(r, 2))) {
    if (Date.now() > end) throw new Error('condition not reached in 5 s')
  }
}

/**
 * `options()` gives a fresh, empty store's options each call. `storedData(id)`, where the
 * storage can be read outside the store, gives the data of a session's events as stored.
 */
export function clientConformance(mode: string, options: () => OpenStoreOptions, storedData?: (id: string) => Promise<unknown[]>): void {
  describe(`client: ${mode}`, () => {
    const withStore = (fn: (store: Store) => Promise<void>) => async () => {
      const store = await openStore(options())
      try {
        await fn(store)
      } finally {
        await store.close()
      }
    }

    it(
      'creates, opens, observes, lists and deletes sessions',
      withStore(async (store) => {
        const a = await store.createSession({ id: 'a', cwd: '/w' })
        expect(a.header).toMatchObject({ id: 'a', cwd: '/w', origin: 'root', seedLength: 0, delegationDepth: 0, version: 1 })
        expect(a.id).toBe('a')
        const b = await store.createSession()
        expect(b.id).toMatch(/^[0-9a-f]{32}$/)
        await expectCode(store.createSession({ id: 'a' }), 'SESSION_EXISTS') // taken id first, though open for writing
        await expectCode(store.openSession('a'), 'SESSION_LOCKED')
        const view = await store.observe('a')
        expect(view.header).toEqual(a.header)
        await a.close()
        const again = await store.openSession('a')
        await expectCode(store.createSession({ id: 'a' }), 'SESSION_EXISTS') // taken id first, though open for writing
        await again.close()
        await expectCode(store.createSession({ id: 'a' }), 'SESSION_EXISTS')
        expect((await store.listSessions()).map((h) => h.id).sort()).toEqual(['a', b.id].sort())
        const [first, second] = ['a', b.id].sort()
        expect((await store.listSessions({ after: first, limit: 5 })).map((h) => h.id)).toEqual([second])
        expect(await store.listSessions({ limit: 1 })).toHaveLength(1)
        await expectCode(store.deleteSession(b.id), 'SESSION_LOCKED')
        // A second close() waits as the first does: once either resolves, the lock is released.
        const closing = b.close()
        await b.close()
        await store.deleteSession(b.id)
        await closing
        expect((await store.listSessions()).map((h) => h.id)).toEqual(['a'])
        await expectCode(store.openSession('ghost'), 'SESSION_NOT_FOUND')
        await expectCode(store.observe('../etc'), 'INVALID_ARGUMENT')
        await view.close()
      }),
    )

    it(
      'deleteSession with { tree: true } deletes a session and every descendant, all or nothing',
      withStore(async (store) => {
        const ids = async () => (await store.listSessions()).map((h) => h.id).sort()
        const root = await store.createSession({ id: 'root' })
        const kid = await root.spawn({ mode: 'continuable', id: 'kid', label: 'researcher' })
        const other = await root.spawn({ mode: 'one-shot', id: 'other' })
        const grand = await kid.spawn({ mode: 'one-shot', id: 'grand' })
        await root.recordExternal({ childId: 'ci-42' }) // no session here: nothing to delete
        const fork = await root.fork({ id: 'fork' }) // not a descendant in a catalog: stays
        const apart = await store.createSession({ id: 'apart' })
        for (const s of [root, kid, other, fork, apart]) await s.close()
        const all = ['apart', 'fork', 'grand', 'kid', 'other', 'root']
        // A grandchild open for writing: SESSION_LOCKED names it, and nothing is deleted.
        const err = await store.deleteSession('root', { tree: true }).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(err).toMatchObject({ code: 'SESSION_LOCKED', sessionId: 'grand' })
        expect(await ids()).toEqual(all)
        // Bad options: INVALID_ARGUMENT, nothing deleted.
        await expectCode(store.deleteSession('root', { tree: 'yes' } as never), 'INVALID_ARGUMENT')
        await expectCode(store.deleteSession('root', { trees: true } as never), 'INVALID_ARGUMENT')
        await expectCode(store.deleteSession('root', 'tree' as never), 'INVALID_ARGUMENT')
        expect(await ids()).toEqual(all)
        // A view of the grandchild hears its delete: its live tail ends with SESSION_NOT_FOUND.
        await grand.close()
        const view = await store.observe('grand')
        const tail = expectCode(
          (async () => {
            for await (const _ of view.events({ follow: true })) {
            }
          })(),
          'SESSION_NOT_FOUND',
        )
        await store.deleteSession('root', { tree: true })
        expect(await ids()).toEqual(['apart', 'fork'])
        await expectCode(store.openSession('grand'), 'SESSION_NOT_FOUND')
        await tail
        await view.close().catch(() => {})
        // An id that names no session resolves quietly, as without `tree`.
        await store.deleteSession('root', { tree: true })
        // Alone (the default), a parent goes and its children stay.
        const p = await store.createSession({ id: 'p' })
        await (await p.spawn({ mode: 'one-shot', id: 'c' })).close()
        await p.close()
        await store.deleteSession('p', { tree: false })
        expect(await ids()).toEqual(['apart', 'c', 'fork'])
      }),
    )

    it(
      'appends with expectedSeq and reads its own writes synchronously',
      withStore(async (store) => {
        const s = await store.createSession({ id: 's' })
        expect(s.projections.snapshot().asOfSeq).toBe(-1)
        expect(await s.append({ type: 'turn/start', time: 1000 })).toEqual({ firstSeq: 0, lastSeq: 0 })
        expect(s.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 0, runningSince: 1000 })
        expect(
          await s.append(
            [
              { type: 'app/x', data: { k: [1, 'two'] } },
              { type: 'turn/end', time: 1500 },
            ],
            { expectedSeq: 1 },
          ),
        ).toEqual({ firstSeq: 1, lastSeq: 2 })
        expect(s.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 500, runningSince: null })
        expect(s.projections.snapshot()).toMatchObject({ asOfSeq: 2, faults: {} })
        const err = await expectCode(s.append({ type: 'x' }, { expectedSeq: 7 }), 'SEQ_CONFLICT')
        expect(err.message).toContain('"s"')
        expect((err as { sessionId?: string }).sessionId).toBe('s')
        expect((err as { seq?: number }).seq).toBe(7)
        const events = []
        for await (const e of s.events()) events.push(e)
        expect(events.map((e) => [e.seq, e.type])).toEqual([
          [0, 'turn/start'],
          [1, 'app/x'],
          [2, 'turn/end'],
        ])
        expect(events[1]!.data).toEqual({ k: [1, 'two'] })
      }),
    )

    it(
      'rejects bad input at the client with its code and writes nothing',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'bad' })
        await s.append({ type: 'ok' })
        const cyclic: Record<string, unknown> = {}
        cyclic.me = cyclic
        for (const data of [cyclic, 1n, () => 1, { u: undefined }, NaN, Symbol('s'), new Date(0), new Map(), new Uint8Array(1)]) {
          await expectCode(s.append({ type: 't', data } as never), 'INVALID_ARGUMENT')
        }
        await expectCode(s.append({ type: 't', data: 'x'.repeat(1024 * 1024) }), 'EVENT_TOO_LARGE')
        await expectCode(s.append([]), 'INVALID_ARGUMENT')
        await expectCode(s.append([{ type: 'fine' }, { type: 7 } as never]), 'INVALID_ARGUMENT')
        await expectCode(s.spawn({ mode: 'continuable' }), 'INVALID_ARGUMENT')
        await expectCode(s.spawn({ mode: 'sometimes' } as never), 'INVALID_ARGUMENT')
        await expectCode(s.fork({ at: 5 }), 'INVALID_ARGUMENT')
        await expectCode(openStore({ storage: 'floppy' } as never), 'INVALID_ARGUMENT')
        await expectCode(openStore({ nope: 1 } as never), 'INVALID_ARGUMENT')
        const events = []
        for await (const e of s.events()) events.push(e.type)
        expect(events).toEqual(['ok'])
        expect((await store.listSessions()).map((h) => h.id)).toEqual(['bad'])
      }),
    )

    it(
      'observes a session as of a point: frozen values equal to the prefix, its events only, its catalog then; bad options write nothing',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'past' })
        await s.append({ type: 'turn/start' })
        const kid = await s.spawn({ mode: 'continuable', id: 'past-kid', label: 'early' })
        const early = s.projections.snapshot()
        // Far enough for history rows (one per 1,024 events or so).
        for (let i = 0; i < 10; i++) await s.append(Array.from({ length: 500 }, (_, k) => ({ type: 'app/n', data: i * 500 + k })))
        await s.spawn({ mode: 'one-shot', id: 'past-late', label: 'late' })
        const mid = 3 + 2345
        const frozen = await store.observe('past', { at: early.asOfSeq + 1 })
        expect(frozen.at).toBe(early.asOfSeq + 1)
        expect(frozen.projections.snapshot()).toEqual(early)
        expect((await frozen.listChildren()).map((c) => c.id)).toEqual(['past-kid'])
        const now = await store.observe('past')
        expect((await now.listChildren()).map((c) => c.id)).toEqual(['past-kid', 'past-late'])
        const at = await store.observe('past', { at: mid })
        expect(at.projections.snapshot().asOfSeq).toBe(mid - 1)
        let n = 0
        for await (const e of at.events({ from: mid - 5, to: mid + 100 })) n += e.seq < mid ? 1 : 1000
        expect(n).toBe(5)
        let heard = 0
        frozen.projections.subscribe(() => void heard++)
        await s.append({ type: 'app/after' })
        await kid.append({ type: 'app/kid' })
        await tick()
        expect(heard).toBe(1) // the current value, once: a frozen view hears no change
        expect(frozen.projections.snapshot()).toEqual(early)
        const last = await store.observe('past', { at: now.projections.asOfSeq + 1 })
        expect(last.projections.snapshot()).toEqual(now.projections.snapshot())
        await frozen.close()
        await frozen.close()
        const before = await store.listSessions()
        for (const options of [{ at: 1e9 }, { at: -1 }, { at: 1.5 }, { at: '2' }, { at: 1, later: true }, 'x']) {
          await expectCode(store.observe('past', options as never), 'INVALID_ARGUMENT')
        }
        await expectCode(store.observe('ghost', { at: 0 }), 'SESSION_NOT_FOUND')
        expect(await store.listSessions()).toEqual(before)
        await now.close()
        await at.close()
        await last.close()
        await kid.close()
      }),
    )

    it(
      'reads event ranges and stops when the signal aborts',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'r' })
        for (let i = 0; i < 5; i++) await s.append(Array.from({ length: 300 }, (_, k) => ({ type: 'e', data: i * 300 + k })))
        const seqs = async (o: { from?: number; to?: number }) => {
          const out: number[] = []
          for await (const e of s.events(o)) out.push(e.seq)
          return out
        }
        expect(await seqs({ from: 1495 })).toEqual([1495, 1496, 1497, 1498, 1499])
        expect(await seqs({ from: 510, to: 514 })).toEqual([510, 511, 512, 513])
        expect((await seqs({})).length).toBe(1500)
        expect(await seqs({ from: 2000 })).toEqual([])
        const ac = new AbortController()
        let n = 0
        await expectCode(
          (async () => {
            for await (const e of s.events({ signal: ac.signal })) {
              n++
              if (e.seq === 600) ac.abort()
            }
          })(),
          'CANCELLED',
        )
        expect(n).toBe(601) // nothing after the abort, not even the rest of the page read
        await expectCode(seqs({ from: -1 }), 'INVALID_ARGUMENT')
      }),
    )

    it(
      'spawns, forks, records externals and lists the tree',
      withStore(async (store) => {
        const root = await store.createSession({ id: 'root' })
        const kid = await root.spawn({ mode: 'continuable', label: 'researcher', events: [{ type: 'turn/start' }] })
        expect(root.projections.get('subagentCatalog')).toEqual([
          { id: kid.id, createdAt: kid.header.createdAt, mode: 'continuable', label: 'researcher', seq: 0 },
        ])
        expect(kid.projections.get('subagent')).toEqual({ mode: 'continuable', label: 'researcher', seq: 0 })
        expect(kid.header).toMatchObject({ origin: 'subagent', parentSession: 'root', delegationDepth: 1 })
        const grand = await kid.spawn({ mode: 'one-shot' })
        await root.recordExternal({ childId: 'ci-42', label: 'CI' })
        await grand.close()
        const rows = await root.listChildren({ recursive: true })
        expect(rows.map((r) => [r.kind, r.id, r.depth, r.kind === 'child' && r.activity, r.kind === 'child' && r.hasChildren])).toEqual([
          ['child', kid.id, 0, 'running', true],
          ['child', grand.id, 1, 'inactive', false],
          ['child', 'ci-42', 0, 'inactive', false],
        ])
        const fork = await root.fork()
        expect(fork.header).toMatchObject({ origin: 'fork', forkedFrom: 'root', seedLength: 2 })
        expect(fork.projections.get('subagentCatalog')).toEqual([])
        expect(await fork.listChildren()).toEqual([])
        const ac = new AbortController()
        ac.abort()
        await expectCode(root.listChildren({ signal: ac.signal }), 'CANCELLED')
        await expectCode(
          store.observe('nobody').then((v) => v.listChildren()),
          'SESSION_NOT_FOUND',
        )
      }),
    )

    it(
      'pushes a burst of 10,000 appends to subscribers in order, ending at the last state',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'burst' })
        const view = await store.observe('burst')
        const seen: number[] = []
        const snaps: number[] = []
        const times: number[] = []
        const stop = view.projections.subscribe('subagentTiming', (t) => {
          seen.push(t?.turns ?? -1)
          times.push(performance.now())
        })
        view.projections.subscribe((snap) => snaps.push(snap.asOfSeq))
        const writes: Promise<unknown>[] = []
        for (let i = 0; i < 5000; i++) {
          writes.push(
            s.append([
              { type: 'turn/start', time: i * 10 },
              { type: 'turn/end', time: i * 10 + 3 },
            ]),
          )
          if (i % 500 === 499) await Promise.all(writes.splice(0))
        }
        await Promise.all(writes)
        // The writer's own handle is current; the observer follows with the next push.
        expect(s.projections.get('subagentTiming')).toEqual({ turns: 5000, settledMs: 15000, runningSince: null })
        await until(() => seen.at(-1) === 5000 && snaps.at(-1) === 9999)
        expect(view.projections.get('subagentTiming')).toEqual({ turns: 5000, settledMs: 15000, runningSince: null })
        expect(seen[0]).toBe(0) // the current value first
        expect(seen.at(-1)).toBe(5000) // the final state is never missed
        expect([...seen].sort((a, b) => a - b)).toEqual(seen) // in order
        // Batched, not flooded: at most about one call per notify interval (1 ms) over the burst,
        // however fast appends arrive (a burst faster than that merges). Counted over the whole
        // burst, since browsers coarsen and jitter performance.now().
        const span = times.at(-1)! - times[1]!
        expect(times.length - 2).toBeLessThanOrEqual(span / 1 + 5)
        expect(snaps.at(-1)).toBe(9999)
        expect([...snaps].sort((a, b) => a - b)).toEqual(snaps)
        stop()
        const before = seen.length
        await s.append({ type: 'turn/start' })
        await until(() => snaps.at(-1) === 10000) // the other subscription still follows
        expect(seen.length).toBe(before) // unsubscribed: no more calls
      }),
    )

    it(
      'fits useSyncExternalStore and the Svelte store contract',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'ui' })
        // React: getSnapshot must return the same object until something changes.
        const p = s.projections
        const first = p.snapshot()
        expect(p.snapshot()).toBe(first)
        let notified = 0
        const unsubscribe = p.subscribe(() => notified++)
        expect(typeof unsubscribe).toBe('function')
        await s.append({ type: 'turn/start' })
        const second = p.snapshot()
        expect(second).not.toBe(first)
        expect(second.values.subagentTiming).toEqual({ turns: 1, settledMs: 0, runningSince: expect.any(Number) })
        expect(p.snapshot()).toBe(second)
        await until(() => notified >= 2)
        unsubscribe()
        // Svelte: subscribe(run) calls run at once with the current value and returns unsubscribe.
        const svelteStore = { subscribe: (run: (v: unknown) => void) => p.subscribe('subagentTiming', run) }
        const values: unknown[] = []
        const stop = svelteStore.subscribe((v) => values.push(v))
        expect(values).toEqual([{ turns: 1, settledMs: 0, runningSince: expect.any(Number) }])
        stop()
      }),
    )

    it(
      'keeps error codes across the boundary',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'e' })
        const err = await expectCode(store.openSession('e'), 'SESSION_LOCKED')
        expect(err.name).toBe('SessionfoldError')
        expect(err.message).toContain('"e"')
        await s.close()
        await expectCode(s.append({ type: 'x' }), 'CLOSED')
      }),
    )

    it(
      'verify reads every session and event, reports no damage on a sound store, and can be cancelled',
      withStore(async (store) => {
        const root = await store.createSession({ id: 'v' })
        await root.append(Array.from({ length: 30 }, (_, k) => ({ type: 'msg', data: { k } })))
        const child = await root.spawn({ mode: 'one-shot', events: [{ type: 'msg' }] })
        await (await root.fork({ at: 10 })).close()
        const progress: { done: number; total: number }[] = []
        const report = await store.verify({ onProgress: (p) => progress.push(p) })
        let events = 0
        for (const h of await store.listSessions()) {
          const view = await store.observe(h.id)
          events += view.projections.snapshot().asOfSeq + 1
          await view.close()
        }
        expect(report).toEqual({ sessions: 3, events, damaged: [] })
        expect(progress.at(-1)).toEqual({ done: events, total: events })
        await child.close()
        await root.close()
        const controller = new AbortController()
        controller.abort()
        await expectCode(store.verify({ signal: controller.signal }), 'CANCELLED')
      }),
    )

    it(
      'keeps a title and tags (§14): given at creation and spawn, changed by setMeta, seen by every handle and as of a point; bad ones write nothing',
      withStore(async (store) => {
        const s = await store.createSession({ id: 'm', title: 'Fix the build', tags: ['ci', 'urgent'] })
        expect(s.projections.get('sessionMeta')).toEqual({ title: 'Fix the build', tags: ['ci', 'urgent'] })
        const view = await store.observe('m')
        expect(view.projections.get('sessionMeta')).toEqual({ title: 'Fix the build', tags: ['ci', 'urgent'] })
        // A field given replaces the last one; one left out stays; a null title clears it.
        await s.setMeta({ tags: [] })
        expect(s.projections.get('sessionMeta')).toEqual({ title: 'Fix the build', tags: [] })
        await s.setMeta({ title: 'Fixed' })
        await s.setMeta({ title: null, tags: ['done'] })
        expect(s.projections.get('sessionMeta')).toEqual({ title: null, tags: ['done'] })
        await until(() => view.projections.get('sessionMeta')?.tags[0] === 'done')
        expect(view.projections.get('sessionMeta')).toEqual({ title: null, tags: ['done'] })
        // Metadata is events: read back, and as of a point.
        const types: string[] = []
        for await (const e of s.events()) types.push(e.type)
        expect(types).toEqual(['session/meta', 'session/meta', 'session/meta', 'session/meta'])
        const then = await store.observe('m', { at: 2 })
        expect(then.projections.get('sessionMeta')).toEqual({ title: 'Fix the build', tags: [] })
        await then.close()
        // A session made without them has none; a subagent gets its own; a fork starts with its source's.
        const plain = await store.createSession({ id: 'plain' })
        expect(plain.projections.get('sessionMeta')).toEqual({ title: null, tags: [] })
        const child = await s.spawn({ mode: 'one-shot', id: 'kid', title: 'Read the logs', tags: ['sub'], events: [{ type: 'turn/start' }] })
        expect(child.projections.get('sessionMeta')).toEqual({ title: 'Read the logs', tags: ['sub'] })
        expect(child.projections.get('subagent')).toMatchObject({ mode: 'one-shot', seq: 0 })
        const fork = await s.fork({ at: 1 })
        expect(fork.projections.get('sessionMeta')).toEqual({ title: 'Fix the build', tags: ['ci', 'urgent'] })
        // Bad metadata: INVALID_ARGUMENT from every path, and nothing is written.
        const before = s.projections.snapshot().asOfSeq
        const sessions = (await store.listSessions()).length
        for (const bad of [
          () => s.setMeta({}),
          () => s.setMeta({ title: 'x'.repeat(201) }),
          () => s.setMeta({ tags: ['a', 'a'] }),
          () => s.setMeta({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }),
          () => s.setMeta({ tags: [''] }),
          () => s.setMeta({ tags: ['x'.repeat(65)] }),
          () => s.setMeta({ title: 5 } as never),
          () => s.setMeta({ color: 'red' } as never),
          () => s.append({ type: 'session/meta', data: { title: 'x', extra: 1 } } as never),
          () => s.append({ type: 'session/meta', data: 'a title' } as never),
          () => store.createSession({ id: 'n1', title: null as never }),
          () => store.createSession({ id: 'n2', tags: 'ci' as never }),
          () => s.spawn({ mode: 'one-shot', id: 'n3', title: 'x'.repeat(201) }),
        ]) {
          await expectCode(bad(), 'INVALID_ARGUMENT')
        }
        expect(s.projections.snapshot().asOfSeq).toBe(before)
        expect(await store.listSessions()).toHaveLength(sessions)
        for (const h of [view, plain, child, fork, s]) await h.close()
      }),
    )

    it(
      'tails a session (§14, events({ follow: true })): its events, then each one appended, until the signal, the handle or the store ends it',
      withStore(async (store) => {
        const w = await store.createSession({ id: 't' })
        await w.append([
          { type: 'a', data: 0 },
          { type: 'a', data: 1 },
        ])
        const view = await store.observe('t')
        const stop = new AbortController()
        const seen: number[] = []
        const tail = (async () => {
          for await (const e of view.events({ from: 1, follow: true, signal: stop.signal })) seen.push(e.data as number)
        })()
        await until(() => seen.length === 1)
        expect(seen).toEqual([1])
        // Appends of any size and pace arrive in order, none twice, none missed.
        await w.append({ type: 'a', data: 2 })
        await w.append(Array.from({ length: 600 }, (_, i) => ({ type: 'a', data: 3 + i })))
        await until(() => seen.length === 602)
        expect(seen).toEqual(Array.from({ length: 602 }, (_, i) => 1 + i))
        stop.abort()
        await tail // ends, without an error
        // The writer's own handle tails as well; closing the handle ends it.
        const mine: number[] = []
        const own = (async () => {
          for await (const e of w.events({ from: 602, follow: true })) mine.push(e.data as number)
        })()
        await until(() => mine.length === 1)
        const other = await store.observe('t')
        const theirs: number[] = []
        const theirTail = (async () => {
          for await (const e of other.events({ from: 603, follow: true })) theirs.push(e.data as number)
        })()
        await w.append({ type: 'a', data: 603 })
        await until(() => mine.length === 2 && theirs.length === 1)
        await w.close()
        await own
        expect(mine).toEqual([602, 603])
        // Bad options: INVALID_ARGUMENT before anything is read.
        await expectCode(view.events({ follow: true, to: 5 }).next(), 'INVALID_ARGUMENT')
        await expectCode(view.events({ follow: 'yes' as never }).next(), 'INVALID_ARGUMENT')
        const then = await store.observe('t', { at: 2 })
        await expectCode(then.events({ follow: true }).next(), 'INVALID_ARGUMENT')
        await view.close()
        await other.close()
        await theirTail
        expect(theirs).toEqual([603])
      }),
    )

    it('a tail ends with SESSION_NOT_FOUND when its session is deleted, and without an error when its store closes', async () => {
      const store = await openStore(options())
      const w = await store.createSession({ id: 'd' })
      await w.append({ type: 'a' })
      const doomed = await store.observe('d')
      await w.close()
      const seen: number[] = []
      const deleted = expectCode(
        (async () => {
          for await (const e of doomed.events({ follow: true })) seen.push(e.seq)
        })(),
        'SESSION_NOT_FOUND',
      )
      await until(() => seen.length === 1)
      await store.deleteSession('d')
      await deleted
      const other = await store.createSession({ id: 'e' })
      const got: number[] = []
      const closing = (async () => {
        for await (const e of other.events({ follow: true })) got.push(e.seq)
      })()
      await other.append({ type: 'x' })
      await until(() => got.length === 1)
      await store.close()
      await closing
      expect(got).toEqual([0])
    })

    it(
      'watches the tree (§14, watchChildren): grandchildren spawned later and activity changes reach the listener, a burst coalesced',
      withStore(async (store) => {
        const root = await store.createSession({ id: 'r' })
        const calls: { rows: SubagentListEntry[]; error?: string }[] = []
        const stop = root.watchChildren({ recursive: true }, (rows, meta) => calls.push({ rows, error: meta.error?.code }))
        await until(() => calls.length === 1)
        expect(calls[0]!.rows).toEqual([])
        const rowsNow = () => calls.at(-1)!.rows.map((r) => (r.kind === 'child' ? `${r.id}@${r.depth}:${r.activity}` : `${r.id}:${r.reason}`))
        const child = await root.spawn({ mode: 'continuable', label: 'c', id: 'c' })
        await until(() => rowsNow().join() === 'c@0:running')
        // A grandchild spawned later, through the child's own handle: no refresh needed.
        const grand = await child.spawn({ mode: 'one-shot', id: 'g' })
        await until(() => rowsNow().join() === 'c@0:running,g@1:running')
        // Activity: closing a writer here is listed at once.
        await grand.close()
        await until(() => rowsNow().join() === 'c@0:running,g@1:inactive')
        // A burst of spawns is coalesced: a listing waits for a quiet moment (25 ms), at most a
        // quarter second while the burst goes on, so it costs a few listings (one more for each
        // quarter second it lasts: PostgreSQL's spawns and listings take longer; at most 4 on a
        // loaded machine, where a listing may land between two spawns), never one each (8);
        // none is missed.
        const before = calls.length
        const started = Date.now()
        const kids = await Promise.all(Array.from({ length: 8 }, (_, i) => root.spawn({ mode: 'one-shot', id: `k${i}` })))
        const lasted = Date.now() - started
        await until(() => rowsNow().length === 10)
        expect(calls.length - before).toBeLessThanOrEqual(Math.min(6, 4 + Math.floor(lasted / 250)))
        for (const k of kids) await k.close()
        await until(() => rowsNow().filter((r) => r.endsWith(':inactive')).length === 9)
        // Only the direct children without `recursive`; the listener hears nothing after stop().
        const direct: string[][] = []
        const stopDirect = root.watchChildren({}, (rows) => direct.push(rows.map((r) => r.id)))
        await until(() => direct.length === 1)
        // Concurrent spawns are in the catalog in the order their facts landed (§5).
        expect([...direct[0]!].sort()).toEqual(['c', ...kids.map((k) => k.id)].sort())
        stop()
        stopDirect()
        const heard = calls.length
        await (await root.spawn({ mode: 'one-shot', id: 'late' })).close()
        await new Promise((r) => setTimeout(r, 50))
        expect(calls.length).toBe(heard)
        // Bad options: INVALID_ARGUMENT at once.
        expect(() => root.watchChildren({ deep: true } as never, () => {})).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
        expect(() => root.watchChildren({}, 'no' as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
        // A deleted session ends its watch with SESSION_NOT_FOUND; a closed handle ends it quietly.
        const doomed = await store.createSession({ id: 'x' })
        const view = await store.observe('x')
        const ends: (string | undefined)[] = []
        view.watchChildren({}, (_rows, meta) => ends.push(meta.error?.code))
        await until(() => ends.length === 1)
        await doomed.close()
        await store.deleteSession('x')
        await until(() => ends.length === 2)
        expect(ends).toEqual([undefined, 'SESSION_NOT_FOUND'])
        const quiet: unknown[] = []
        child.watchChildren({}, (rows, meta) => quiet.push(meta.error ?? rows))
        await until(() => quiet.length === 1)
        await child.close()
        await root.close()
        await new Promise((r) => setTimeout(r, 50))
        expect(quiet).toHaveLength(1)
        await view.close()
      }),
    )

    sessionListCases(withStore, options)

    it('close waits for pending appends; calls after it reject with CLOSED', async () => {
      const store = await openStore(options())
      const s = await store.createSession({ id: 'c' })
      const pending = Array.from({ length: 50 }, (_, i) => s.append({ type: 'app/e', data: i }))
      await store.close()
      const results = await Promise.allSettled(pending)
      expect(results.every((r) => r.status === 'fulfilled')).toBe(true)
      await expectCode(s.append({ type: 'x' }), 'CLOSED')
      await expectCode(store.createSession(), 'CLOSED')
      await expectCode(store.listSessions(), 'CLOSED')
      if (storedData) expect(await storedData('c')).toEqual([...Array(50).keys()])
    })
  })
}
