// Contract: §2 data model, §4 checkpoints, §7 durability — the storage suite every adapter runs (docs/CONTRACT.md)
// The storage contract, written once and run against every adapter (test/adapters/*.test.ts,
// test/browser/storage.browser.test.ts).
import { describe, expect, it } from 'vitest'
import type { CheckpointRow, StorageAdapter } from '../../src/storage/types'
import { witnessOf } from '../../src/core/model'
import { encodeEventInput } from '../../src/core/validate'
import { ev, evs, expectCode, readAll, rootHeader, snapshotStore } from '../support/helpers'

export interface AdapterHarness {
  adapter: StorageAdapter
  /** Closes the adapter and opens a new one on the same storage (persistent adapters). */
  reopen?: () => Promise<StorageAdapter>
  teardown: () => Promise<void>
}

export const BAD_IDS: unknown[] = [
  '', '../x', 'a/b', 'a\\b', '.', '..', 'x'.repeat(129), 'a\0b', 'a b', 'é', 'ａ', 'a.b',
  'ｘ', 'a\u2215b', 'con:', 42, null, undefined, {}, ['a'],
]

export function storageConformance(name: string, setup: () => Promise<AdapterHarness>): void {
  describe(`storage conformance: ${name}`, () => {
    const withStore = (fn: (h: AdapterHarness) => Promise<void>) => async () => {
      const h = await setup()
      try {
        await fn(h)
      } finally {
        await h.teardown()
      }
    }

    it('an empty store lists nothing and knows no session', withStore(async ({ adapter }) => {
      expect(await adapter.listSessions()).toEqual([])
      expect(await adapter.getSession('nobody')).toBeUndefined()
      await expectCode(adapter.append('nobody', [ev('nobody', 0)]), 'SESSION_NOT_FOUND')
      await expectCode(readAll(adapter, 'nobody'), 'SESSION_NOT_FOUND')
      await expectCode(adapter.getCheckpoint('nobody'), 'SESSION_NOT_FOUND')
      await adapter.deleteSession('nobody')
      expect(await snapshotStore(adapter)).toEqual({})
    }))

    it('creates a session once; a second create is SESSION_EXISTS and changes nothing', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('s1', { cwd: '/work' }))
      expect(await adapter.getSession('s1')).toEqual({ header: rootHeader('s1', { cwd: '/work' }), length: 0 })
      await adapter.append('s1', [ev('s1', 0)])
      const before = await snapshotStore(adapter)
      await expectCode(adapter.createSession(rootHeader('s1', { createdAt: 5 })), 'SESSION_EXISTS')
      expect(await snapshotStore(adapter)).toEqual(before)
    }))

    it('stores a fork with its seed events atomically', withStore(async ({ adapter }) => {
      const header = rootHeader('f', { origin: 'fork', forkedFrom: 'p', seedLength: 3 })
      await adapter.createSession(header, evs('f', 0, 3))
      expect(await adapter.getSession('f')).toEqual({ header, length: 3 })
      expect((await readAll(adapter, 'f')).map((e) => e.seq)).toEqual([0, 1, 2])
      await adapter.append('f', [ev('f', 3)])
      // A seed that does not match seedLength, or is not 0..n-1, creates nothing.
      await expectCode(adapter.createSession({ ...header, id: 'g' }, evs('g', 0, 2)), 'INVALID_ARGUMENT')
      await expectCode(adapter.createSession({ ...header, id: 'g' }, evs('g', 1, 3)), 'SEQ_CONFLICT')
      expect(await adapter.getSession('g')).toBeUndefined()
    }))

    it('appends contiguously; a gap, a repeat or a broken batch is SEQ_CONFLICT and writes nothing', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('s'))
      await adapter.append('s', [ev('s', 0)])
      await adapter.append('s', evs('s', 1, 4))
      const before = await snapshotStore(adapter)
      await expectCode(adapter.append('s', [ev('s', 6)]), 'SEQ_CONFLICT')
      await expectCode(adapter.append('s', [ev('s', 4)]), 'SEQ_CONFLICT')
      await expectCode(adapter.append('s', [ev('s', 5), ev('s', 7)]), 'SEQ_CONFLICT')
      await expectCode(adapter.append('s', [ev('s', 5), ev('s', 5)]), 'SEQ_CONFLICT')
      expect(await snapshotStore(adapter)).toEqual(before)
      expect((await adapter.getSession('s'))?.length).toBe(5)
      const err = await expectCode(adapter.append('s', [ev('s', 9)]), 'SEQ_CONFLICT')
      expect(err.message).toContain('"s"')
      expect(err.message).toContain('9')
    }))

    it('replaceRecords replaces records and the header in place; a changed length, an unknown seq or another life is refused with nothing written', withStore(async (h) => {
      const a = h.adapter
      if (!a.replaceRecords) return
      const text = (seq: number, c: string) => ({ text: `v${seq}-${c.repeat(4)}` })
      await a.createSession(rootHeader('r', { cwd: '/one' }))
      await a.append('r', evs('r', 0, 3, (seq) => text(seq, 'a')))
      const feedBefore = a.feed ? await a.feed.read('', 100) : []
      const before = await snapshotStore(a)
      await expectCode(a.replaceRecords('r', { records: [ev('r', 1, { text: 'v1-aaaaa' })] }), 'INVALID_ARGUMENT') // one byte longer
      await expectCode(a.replaceRecords('r', { records: [ev('r', 1, { text: 'v1-aaa' })] }), 'INVALID_ARGUMENT') // one byte shorter
      await expectCode(a.replaceRecords('r', { records: [ev('r', 1, text(1, 'b')), ev('r', 3, text(3, 'b'))] }), 'INVALID_ARGUMENT') // seq 3 is not stored
      await expectCode(a.replaceRecords('r', { records: [ev('r', 1, text(1, 'b')), ev('r', 1, text(1, 'c'))] }), 'INVALID_ARGUMENT')
      await expectCode(a.replaceRecords('r', { records: [ev('r', 0, text(0, 'b'))], header: rootHeader('r', { createdAt: 5 }) }), 'INVALID_ARGUMENT')
      await expectCode(a.replaceRecords('nobody', { records: [] }), 'SESSION_NOT_FOUND')
      expect(await snapshotStore(a)).toEqual(before)
      await a.replaceRecords('r', { records: [ev('r', 0, text(0, 'b')), ev('r', 2, text(2, 'b'))], header: rootHeader('r', { cwd: '/two' }) })
      const after = [text(0, 'b'), text(1, 'a'), text(2, 'b')]
      expect((await readAll(a, 'r')).map((e) => e.data)).toEqual(after)
      expect((await readAll(a, 'r', { from: 2 })).map((e) => e.data)).toEqual(after.slice(2))
      expect(await a.getSession('r')).toEqual({ header: rootHeader('r', { cwd: '/two' }), length: 3 })
      if (a.feed) expect(await a.feed.read('', 100)).toEqual(feedBefore) // not a write the feed records
      await a.append('r', [ev('r', 3)])
      expect((await readAll(a, 'r')).map((e) => e.seq)).toEqual([0, 1, 2, 3])
      if (h.reopen) {
        const b = await h.reopen()
        expect((await readAll(b, 'r')).map((e) => e.data)).toEqual([...after, { n: 3 }])
        expect((await b.getSession('r'))?.header.cwd).toBe('/two')
      }
    }))

    it('reads ranges at every boundary', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('r'))
      const n = 1300 // spans several read pages and index blocks
      for (let at = 0; at < n; at += 100) await adapter.append('r', evs('r', at, 100))
      const seqs = async (from?: number, to?: number) => (await readAll(adapter, 'r', { from, to })).map((e) => e.seq)
      const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i)
      expect(await seqs()).toEqual(range(0, n))
      for (const [from, to] of [[0, 1], [63, 65], [64, 128], [511, 513], [512, 1024], [1299, 1300], [700, 1300], [1, 1299]] as const) {
        expect(await seqs(from, to), `[${from}, ${to})`).toEqual(range(from, to))
      }
      expect(await seqs(5, 5)).toEqual([])
      expect(await seqs(9, 3)).toEqual([])
      expect(await seqs(n)).toEqual([])
      expect(await seqs(n + 10)).toEqual([])
      expect(await seqs(n - 1, n + 50)).toEqual([n - 1])
      const all = await readAll(adapter, 'r', { from: 640, to: 642 })
      expect(all).toEqual([
        { seq: 640, type: 'test/event', time: 1_700_000_000_640, data: { n: 640 } },
        { seq: 641, type: 'test/event', time: 1_700_000_000_641, data: { n: 641 } },
      ])
      await expectCode(readAll(adapter, 'r', { from: -1 }), 'INVALID_ARGUMENT')
      await expectCode(readAll(adapter, 'r', { from: 1.5 }), 'INVALID_ARGUMENT')
    }))

    it('stops a read when its signal aborts', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('c'))
      await adapter.append('c', evs('c', 0, 2000))
      const ac = new AbortController()
      const seen: number[] = []
      await expectCode((async () => {
        for await (const page of adapter.readEvents('c', { signal: ac.signal })) {
          seen.push(...page.map((e) => e.seq))
          ac.abort()
        }
      })(), 'CANCELLED')
      expect(seen.length).toBeGreaterThan(0)
      expect(seen.length).toBeLessThan(2000)
    }))

    it('round-trips a 1 MiB event and data exactly as given', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('big'))
      const big = encodeEventInput({ type: 'blob', time: 1, data: { s: 'x'.repeat(1024 * 1024 - 64) } }, 0, 'big')
      await adapter.append('big', [big])
      // JSON.parse makes "__proto__" an own key, as data arriving over a wire would have it.
      const odd = JSON.parse('{"__proto__":{"polluted":true},"constructor":"c","prototype":{"x":1},"emoji":"🧪\\u2028","nested":[[[]],{}],"n":-5e-301}')
      const tricky = encodeEventInput({ type: 'odd', time: 2, data: odd }, 1, 'big')
      await adapter.append('big', [tricky])
      const [a, b] = await readAll(adapter, 'big')
      expect(a?.data).toEqual({ s: 'x'.repeat(1024 * 1024 - 64) })
      expect(JSON.stringify(b?.data)).toBe(JSON.stringify(odd))
      expect(Object.hasOwn(b?.data as object, '__proto__')).toBe(true)
      expect(Object.getPrototypeOf(b?.data)).toBe(Object.prototype)
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    }))

    it('lists 1,000 sessions through pages, ordered by id', withStore(async ({ adapter }) => {
      const ids = Array.from({ length: 1000 }, (_, i) => `s-${String(i).padStart(4, '0')}${i % 3 === 0 ? 'A' : 'a'}`)
      for (let i = 0; i < ids.length; i += 50) {
        await Promise.all(ids.slice(i, i + 50).map((id) => adapter.createSession(rootHeader(id))))
      }
      const seen: string[] = []
      let after: string | undefined
      for (let pages = 0; ; pages++) {
        expect(pages).toBeLessThan(20)
        const page = await adapter.listSessions({ after, limit: 64 })
        seen.push(...page.map((h) => h.id))
        if (page.length < 64) break
        after = page[page.length - 1]!.id
      }
      expect(seen).toEqual([...ids].sort())
      expect(await adapter.listSessions({ after: ids[998], limit: 5 })).toEqual([rootHeader(ids[999]!)])
      await expectCode(adapter.listSessions({ limit: 0 }), 'INVALID_ARGUMENT')
      await expectCode(adapter.listSessions({ after: '../x' }), 'INVALID_ARGUMENT')
    }))

    it('keeps ids that differ only in case apart', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('Agent'))
      await adapter.createSession(rootHeader('agent'))
      await adapter.createSession(rootHeader('AGENT'))
      await adapter.append('Agent', [ev('Agent', 0, 'upper')])
      await adapter.append('agent', [ev('agent', 0, 'lower')])
      expect((await readAll(adapter, 'Agent'))[0]?.data).toBe('upper')
      expect((await readAll(adapter, 'agent'))[0]?.data).toBe('lower')
      expect((await readAll(adapter, 'AGENT')).length).toBe(0)
      expect((await adapter.listSessions()).map((h) => h.id)).toEqual(['AGENT', 'Agent', 'agent'])
      for (const id of ['CON', 'nul', 'LPT1', 'com9']) {
        await adapter.createSession(rootHeader(id))
        await adapter.append(id, [ev(id, 0)])
        expect((await readAll(adapter, id)).length).toBe(1)
      }
    }))

    it('deletes a session with its checkpoint; the id can be created again, empty', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('d'))
      await adapter.append('d', evs('d', 0, 10))
      await adapter.putCheckpoint('d', { witness: witnessOf(rootHeader('d')), rows: { k: { ver: 1, seq: 9, val: 1 } } })
      await adapter.createSession(rootHeader('keep'))
      await adapter.deleteSession('d')
      expect(await adapter.getSession('d')).toBeUndefined()
      await expectCode(readAll(adapter, 'd'), 'SESSION_NOT_FOUND')
      await adapter.createSession(rootHeader('d', { createdAt: 2 }))
      expect(await adapter.getSession('d')).toEqual({ header: rootHeader('d', { createdAt: 2 }), length: 0 })
      expect(await readAll(adapter, 'd')).toEqual([])
      expect(await adapter.getCheckpoint('d')).toBeUndefined()
      await adapter.append('d', [ev('d', 0)])
      expect((await adapter.listSessions()).map((h) => h.id)).toEqual(['d', 'keep'])
    }))

    it('round-trips checkpoint rows, replacing them whole', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('k'))
      expect(await adapter.getCheckpoint('k')).toBeUndefined()
      const row: CheckpointRow = {
        witness: witnessOf(rootHeader('k')),
        rows: { a: { ver: 1, seq: 4, val: { list: [1, 2, { x: null }] } }, b: { ver: 3, seq: -1, val: null } },
      }
      await adapter.putCheckpoint('k', row)
      expect(await adapter.getCheckpoint('k')).toEqual(row)
      const next: CheckpointRow = { witness: row.witness, rows: { b: { ver: 4, seq: 7, val: 'v' } } }
      await adapter.putCheckpoint('k', next)
      expect(await adapter.getCheckpoint('k')).toEqual(next)
      await adapter.deleteCheckpoint('k')
      expect(await adapter.getCheckpoint('k')).toBeUndefined()
      await expectCode(adapter.putCheckpoint('ghost', row), 'SESSION_NOT_FOUND')
    }))

    it('keeps history rows by position: the row at or before a position, listed in order, removed, gone with their session', withStore(async (h) => {
      const history = h.adapter.history!
      expect(history).toBeDefined()
      await h.adapter.createSession(rootHeader('t'))
      await h.adapter.append('t', evs('t', 0, 30))
      const row = (n: number): CheckpointRow => ({ witness: witnessOf(rootHeader('t')), rows: { k: { ver: 1, seq: n - 1, val: { n, list: Array.from({ length: n }, (_, i) => i) } } } })
      expect(await history.list('t')).toEqual([])
      expect(await history.get('t', 30)).toBeUndefined()
      for (const at of [20, 5, 10]) await history.put('t', at, row(at))
      expect(await history.list('t')).toEqual([5, 10, 20])
      expect(await history.get('t', 4)).toBeUndefined()
      expect(await history.get('t', 0)).toBeUndefined()
      expect(await history.get('t', 5)).toEqual({ at: 5, row: row(5) })
      expect(await history.get('t', 19)).toEqual({ at: 10, row: row(10) })
      expect(await history.get('t', 1_000_000)).toEqual({ at: 20, row: row(20) })
      // Replaced whole; the latest checkpoint row is another thing.
      const other: CheckpointRow = { witness: row(10).witness, rows: { z: { ver: 2, seq: 9, val: 'z' } } }
      await history.put('t', 10, other)
      expect(await history.get('t', 15)).toEqual({ at: 10, row: other })
      expect(await h.adapter.getCheckpoint('t')).toBeUndefined()
      await history.remove('t', [5, 7])
      expect(await history.list('t')).toEqual([10, 20])
      // Other sessions' rows are their own (ids that prefix each other included).
      await h.adapter.createSession(rootHeader('t2'))
      await history.put('t2', 3, row(3))
      expect(await history.list('t')).toEqual([10, 20])
      expect(await history.get('t2', 100)).toEqual({ at: 3, row: row(3) })
      if (h.reopen) {
        const again = await h.reopen()
        h.adapter = again
        expect(await again.history!.list('t')).toEqual([10, 20])
        expect(await again.history!.get('t', 12)).toEqual({ at: 10, row: other })
      }
      const adapter = h.adapter
      await adapter.deleteSession('t')
      await adapter.createSession(rootHeader('t', { createdAt: 2 }))
      expect(await adapter.history!.list('t')).toEqual([])
      expect(await adapter.history!.get('t', 100)).toBeUndefined()
      // Bad positions and missing sessions, with nothing stored.
      for (const bad of [0, -1, 1.5, Number.NaN, '3', null]) await expectCode(adapter.history!.put('t', bad as number, row(1)), 'INVALID_ARGUMENT')
      await expectCode(adapter.history!.get('t', -1), 'INVALID_ARGUMENT')
      await expectCode(adapter.history!.put('ghost', 1, row(1)), 'SESSION_NOT_FOUND')
      await expectCode(adapter.history!.get('ghost', 1), 'SESSION_NOT_FOUND')
      await expectCode(adapter.history!.list('ghost'), 'SESSION_NOT_FOUND')
      await expectCode(adapter.history!.put('../x', 1, row(1)), 'INVALID_ARGUMENT')
      expect(await adapter.history!.list('t')).toEqual([])
    }))

    it('keeps key-value records: replaced whole, listed in key order by prefix, a session\'s gone with it, bad keys and values refused with nothing written', withStore(async (h) => {
      const kv = h.adapter.kv!
      expect(kv).toBeDefined()
      expect(await kv.get(['a'])).toBeUndefined()
      expect(await kv.list([])).toEqual([])
      await kv.put(['a'], 'one')
      await kv.put(['a'], 'two') // replaced whole
      await kv.put(['a-x', 'c'], 'ax')
      await kv.put(['a', 'b'], 'ab')
      await kv.put(['a', 'B'], 'aB') // case matters, on every platform's file system too
      await kv.put(['Z'], 'Z')
      await kv.put(['a', 'b', 'c'], `${'x'.repeat(100_000)}é\u{1F600}`)
      expect(await kv.get(['a'])).toBe('two')
      expect(await kv.get(['a', 'B'])).toBe('aB')
      expect(await kv.get(['a', 'b', 'c'])).toBe(`${'x'.repeat(100_000)}é\u{1F600}`)
      // Part by part, each by UTF-16 code units: 'a' before 'a-x', 'B' before 'b', 'Z' before 'a'.
      expect(await kv.list([])).toEqual([['Z'], ['a'], ['a', 'B'], ['a', 'b'], ['a', 'b', 'c'], ['a-x', 'c']])
      expect(await kv.list(['a'])).toEqual([['a', 'B'], ['a', 'b'], ['a', 'b', 'c']])
      expect(await kv.list(['a'], { after: ['a', 'B'], limit: 1 })).toEqual([['a', 'b']])
      expect(await kv.list(['a', 'b', 'c'])).toEqual([])
      await kv.delete(['a', 'b'])
      await kv.delete(['nothing'])
      expect(await kv.get(['a', 'b'])).toBeUndefined()
      expect(await kv.list(['a'])).toEqual([['a', 'B'], ['a', 'b', 'c']])
      // A session's records: only while it is there, gone when it is deleted, not those of ids that prefix it.
      await expectCode(kv.put(['session', 'ghost', 'x'], 'v'), 'SESSION_NOT_FOUND')
      await h.adapter.createSession(rootHeader('s'))
      await h.adapter.createSession(rootHeader('s-2'))
      await kv.put(['session', 's', 'chain', '0'], 'm0')
      await kv.put(['session', 's', 'chain', '1'], 'm1')
      await kv.put(['session', 's-2', 'chain', '0'], 'other')
      expect(await kv.list(['session', 's', 'chain'])).toEqual([['session', 's', 'chain', '0'], ['session', 's', 'chain', '1']])
      if (h.reopen) {
        h.adapter = await h.reopen()
        expect(await h.adapter.kv!.get(['session', 's', 'chain', '1'])).toBe('m1')
        expect(await h.adapter.kv!.get(['a', 'B'])).toBe('aB')
      }
      const adapter = h.adapter
      await adapter.deleteSession('s')
      expect(await adapter.kv!.get(['session', 's', 'chain', '0'])).toBeUndefined()
      expect(await adapter.kv!.list(['session', 's'])).toEqual([])
      expect(await adapter.kv!.get(['session', 's-2', 'chain', '0'])).toBe('other')
      await adapter.createSession(rootHeader('s', { createdAt: 2 }))
      expect(await adapter.kv!.list(['session', 's'])).toEqual([])
      // Bad keys, values and ranges: INVALID_ARGUMENT, nothing stored.
      const before = await snapshotStore(adapter)
      for (const key of [[], [''], ['a/b'], ['a.b'], ['a b'], ['x'.repeat(129)], ['é'], 'a', [1], ['a', null], Array(7).fill('a'), null]) {
        await expectCode(adapter.kv!.put(key as never, 'v'), 'INVALID_ARGUMENT')
        await expectCode(adapter.kv!.get(key as never), 'INVALID_ARGUMENT')
        await expectCode(adapter.kv!.delete(key as never), 'INVALID_ARGUMENT')
      }
      for (const value of [1, null, undefined, { a: 1 }, 'x'.repeat(1024 * 1024 + 1)]) await expectCode(adapter.kv!.put(['ok'], value as never), 'INVALID_ARGUMENT')
      await expectCode(adapter.kv!.list(['a/b']), 'INVALID_ARGUMENT')
      for (const limit of [0, -1, 1.5, 10_001]) await expectCode(adapter.kv!.list([], { limit }), 'INVALID_ARGUMENT')
      await expectCode(adapter.kv!.list([], { after: ['a b'] }), 'INVALID_ARGUMENT')
      expect(await snapshotStore(adapter)).toEqual(before)
    }))

    it('lets 50 concurrent callers append to one session: contiguous seqs, nothing lost', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('hot'))
      let conflicts = 0
      const caller = async (c: number) => {
        for (let k = 0; k < 4; k++) {
          for (;;) {
            const seq = (await adapter.getSession('hot'))!.length
            try {
              await adapter.append('hot', [ev('hot', seq, { caller: c, k })])
              break
            } catch (err) {
              if ((err as { code?: string }).code !== 'SEQ_CONFLICT') throw err
              conflicts++
            }
          }
        }
      }
      await Promise.all(Array.from({ length: 50 }, (_, c) => caller(c)))
      const events = await readAll(adapter, 'hot')
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i))
      const written = events.map((e) => JSON.stringify(e.data)).sort()
      const expected = Array.from({ length: 50 }, (_, c) => [0, 1, 2, 3].map((k) => JSON.stringify({ caller: c, k }))).flat().sort()
      expect(written).toEqual(expected)
      expect(conflicts).toBeGreaterThanOrEqual(0)
    }))

    it('rejects bad ids and bad data with INVALID_ARGUMENT and stores nothing', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('ok'))
      await adapter.append('ok', [ev('ok', 0)])
      const before = await snapshotStore(adapter)
      for (const id of BAD_IDS) {
        const bad = id as string
        await expectCode(adapter.createSession({ ...rootHeader('x'), id: bad }), 'INVALID_ARGUMENT')
        await expectCode(adapter.append(bad, []), 'INVALID_ARGUMENT')
        await expectCode(readAll(adapter, bad), 'INVALID_ARGUMENT')
        await expectCode(adapter.getSession(bad), 'INVALID_ARGUMENT')
        await expectCode(adapter.deleteSession(bad), 'INVALID_ARGUMENT')
        await expectCode(adapter.getCheckpoint(bad), 'INVALID_ARGUMENT')
        await expectCode(adapter.putCheckpoint(bad, { witness: witnessOf(rootHeader('ok')), rows: {} }), 'INVALID_ARGUMENT')
        await expectCode(adapter.deleteCheckpoint(bad), 'INVALID_ARGUMENT')
      }
      await expectCode(adapter.createSession({ ...rootHeader('y'), origin: 'subagent' }), 'INVALID_ARGUMENT')
      await expectCode(adapter.createSession({ ...rootHeader('y'), version: 2 } as never), 'INVALID_ARGUMENT')
      await expectCode(adapter.createSession({ ...rootHeader('y'), extra: 1 } as never), 'INVALID_ARGUMENT')
      const cyclic: Record<string, unknown> = {}
      cyclic.self = cyclic
      // biome-ignore lint/suspicious/noSparseArray: a hole is the bad input under test
      const holey = [1, , 2]
      for (const data of [cyclic, () => 1, { u: undefined }, NaN, Infinity, 10n, Symbol('s'), new Date(0), new Map(), new Uint8Array(2), holey, { [Symbol('k')]: 1 }]) {
        await expectCode(async () => adapter.append('ok', [encodeEventInput({ type: 't', data } as never, 1, 'ok')]), 'INVALID_ARGUMENT')
      }
      await expectCode(async () => encodeEventInput({ type: 't', data: 'x'.repeat(1024 * 1024) }, 1, 'ok'), 'EVENT_TOO_LARGE')
      await expectCode(async () => encodeEventInput({ type: '', data: 1 }, 1, 'ok'), 'INVALID_ARGUMENT')
      expect(await snapshotStore(adapter)).toEqual(before)
    }))

    it('rejects calls after close with CLOSED', withStore(async ({ adapter }) => {
      await adapter.createSession(rootHeader('z'))
      await adapter.close()
      await expectCode(adapter.append('z', [ev('z', 0)]), 'CLOSED')
      await expectCode(adapter.getSession('z'), 'CLOSED')
      await expectCode(adapter.listSessions(), 'CLOSED')
      await expectCode(readAll(adapter, 'z'), 'CLOSED')
      await expectCode(adapter.createSession(rootHeader('w')), 'CLOSED')
      await adapter.close() // a second close is harmless
    }))

    it('keeps everything across close and reopen', async () => {
      const h = await setup()
      if (!h.reopen) {
        await h.teardown()
        return
      }
      try {
        const a = h.adapter
        await a.createSession(rootHeader('p'))
        await a.append('p', evs('p', 0, 300))
        await a.createSession(rootHeader('q', { cwd: '/q' }))
        await a.putCheckpoint('p', { witness: witnessOf(rootHeader('p')), rows: { x: { ver: 1, seq: 299, val: [1] } } })
        const before = await snapshotStore(a)
        const b = await h.reopen()
        expect(await snapshotStore(b)).toEqual(before)
        await b.append('p', [ev('p', 300)])
        expect((await b.getSession('p'))?.length).toBe(301)
        const c = await h.reopen()
        expect((await readAll(c, 'p', { from: 299 })).map((e) => e.seq)).toEqual([299, 300])
      } finally {
        await h.teardown()
      }
    })

    it('the change feed names each creation and append in commit order, read after any position', withStore(async ({ adapter }) => {
      const feed = adapter.feed!
      expect(feed).toBeDefined()
      expect(await feed.read('', 10)).toEqual([])
      expect(await feed.read(await feed.head(), 10)).toEqual([])
      await adapter.createSession(rootHeader('a'))
      await adapter.append('a', evs('a', 0, 3))
      await adapter.createSession(rootHeader('f', { origin: 'fork', forkedFrom: 'a', seedLength: 2 }), evs('f', 0, 2))
      await adapter.append('a', [ev('a', 3)])
      // A refused append and a delete add nothing.
      await expectCode(adapter.append('a', [ev('a', 9)]), 'SEQ_CONFLICT')
      await expectCode(adapter.append('nobody', [ev('nobody', 0)]), 'SESSION_NOT_FOUND')
      const all = await feed.read('', 100)
      expect(all.map(({ id, from, to }) => [id, from, to])).toEqual([['a', 0, 0], ['a', 0, 3], ['f', 0, 2], ['a', 3, 4]])
      expect(await feed.read(all[1]!.at, 100)).toEqual(all.slice(2))
      expect(await feed.read(all[0]!.at, 2)).toEqual(all.slice(1, 3))
      expect(await feed.read(all.at(-1)!.at, 100)).toEqual([])
      // The head is after every entry: reading after it gives only what comes later.
      const head = await feed.head()
      expect(await feed.read(head, 100)).toEqual([])
      await adapter.append('f', [ev('f', 2)])
      expect((await feed.read(head, 100)).map(({ id, from, to }) => [id, from, to])).toEqual([['f', 2, 3]])
      const id = await feed.id()
      expect(id).toMatch(/^[0-9a-f]{16,}$/)
      expect(await feed.id()).toBe(id)
      await expectCode(feed.read('not a position', 10), 'INVALID_ARGUMENT')
    }))

    it('keeps meta records by key, durably, and refuses bad keys and values', async () => {
      const h = await setup()
      try {
        const a = h.adapter
        expect(await a.getMeta!('cursor')).toBeUndefined()
        await a.putMeta!('cursor', '{"x":1}')
        await a.putMeta!('cursor', '{"x":2}')
        expect(await a.getMeta!('cursor')).toBe('{"x":2}')
        for (const key of ['', '../x', 'a/b', '#feed', 42]) await expectCode(a.putMeta!(key as string, 'v'), 'INVALID_ARGUMENT')
        await expectCode(a.putMeta!('k', 7 as unknown as string), 'INVALID_ARGUMENT')
        await expectCode(a.putMeta!('k', 'x'.repeat(64 * 1024 + 1)), 'INVALID_ARGUMENT')
        expect(await a.getMeta!('k')).toBeUndefined()
        if (h.reopen) {
          const id = await a.feed!.id()
          await a.createSession(rootHeader('p'))
          const b = await h.reopen()
          expect(await b.getMeta!('cursor')).toBe('{"x":2}')
          expect(await b.feed!.id()).toBe(id)
          expect((await b.feed!.read('', 10)).map((e) => e.id)).toEqual(['p'])
        }
      } finally {
        await h.teardown()
      }
    })
  })
}
