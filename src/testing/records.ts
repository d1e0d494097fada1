// The storage conformance suite, what is stored beside the events: checkpoint rows, history
// rows by position, key-value records, and records replaced in place (replaceRecords).
import { expect } from 'vitest'
import type { CheckpointRow } from '../storage/types'
import { witnessOf } from '../core/model'
import { ev, evs, expectCode, readAll, rootHeader, snapshotStore } from './helpers'
import type { RecordWrite } from '../storage/types'
import { getMany, writeMany } from '../storage/kv'
import { recordsOf as composedRecords } from '../storage/records'
import { checkpointKey, HISTORY_PART, historyKey, indexEntryKey, metaKey, summaryKey } from '../storage/records/keys'
import type { Group } from './suite'

/** Registers the tests of checkpoints, history, key-value records and replaceRecords. @internal */
export function recordTests(t: Group): void {
  t.test('round-trips checkpoint rows, replacing them whole', async ({ adapter }) => {
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
  })

  t.test(
    'keeps history rows by position: the row at or before a position, listed in order, removed, gone with their session',
    async (h) => {
      const history = h.adapter.history!
      expect(history).toBeDefined()
      await h.adapter.createSession(rootHeader('t'))
      await h.adapter.append('t', evs('t', 0, 30))
      const row = (n: number): CheckpointRow => ({
        witness: witnessOf(rootHeader('t')),
        rows: { k: { ver: 1, seq: n - 1, val: { n, list: Array.from({ length: n }, (_, i) => i) } } },
      })
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
    },
    'history',
  )

  t.test(
    "keeps key-value records: replaced whole, listed in key order by prefix, a session's gone with it, bad keys and values refused with nothing written",
    async (h) => {
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
      expect(await kv.list(['a'])).toEqual([
        ['a', 'B'],
        ['a', 'b'],
        ['a', 'b', 'c'],
      ])
      expect(await kv.list(['a'], { after: ['a', 'B'], limit: 1 })).toEqual([['a', 'b']])
      expect(await kv.list(['a', 'b', 'c'])).toEqual([])
      await kv.delete(['a', 'b'])
      await kv.delete(['nothing'])
      expect(await kv.get(['a', 'b'])).toBeUndefined()
      expect(await kv.list(['a'])).toEqual([
        ['a', 'B'],
        ['a', 'b', 'c'],
      ])
      // A session's records: only while it is there, gone when it is deleted, not those of ids that prefix it.
      await expectCode(kv.put(['session', 'ghost', 'x'], 'v'), 'SESSION_NOT_FOUND')
      await h.adapter.createSession(rootHeader('s'))
      await h.adapter.createSession(rootHeader('s-2'))
      await kv.put(['session', 's', 'chain', '0'], 'm0')
      await kv.put(['session', 's', 'chain', '1'], 'm1')
      await kv.put(['session', 's-2', 'chain', '0'], 'other')
      expect(await kv.list(['session', 's', 'chain'])).toEqual([
        ['session', 's', 'chain', '0'],
        ['session', 's', 'chain', '1'],
      ])
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
      for (const value of [1, null, undefined, { a: 1 }, 'x'.repeat(1024 * 1024 + 1)])
        await expectCode(adapter.kv!.put(['ok'], value as never), 'INVALID_ARGUMENT')
      await expectCode(adapter.kv!.list(['a/b']), 'INVALID_ARGUMENT')
      for (const limit of [0, -1, 1.5, 10_001]) await expectCode(adapter.kv!.list([], { limit }), 'INVALID_ARGUMENT')
      await expectCode(adapter.kv!.list([], { after: ['a b'] }), 'INVALID_ARGUMENT')
      expect(await snapshotStore(adapter)).toEqual(before)
    },
    'kv',
  )

  t.test(
    "reads and writes many records at once (getMany and writeMany, the adapter's own where it has them), each as get, put and delete would, bad writes refused with nothing written",
    async (h) => {
      const records = composedRecords(h.adapter) ?? h.adapter.kv!
      const all = async () => {
        const keys = await records.list([], { limit: 10_000 })
        return Object.fromEntries((await getMany(records, keys)).map((v, i) => [keys[i]!.join('+'), v]))
      }
      await h.adapter.createSession(rootHeader('m'))
      await h.adapter.createSession(rootHeader('m-2'))
      const row = (n: number) => JSON.stringify({ witness: witnessOf(rootHeader('m')), rows: { k: { ver: 1, seq: n, val: n } } })
      // Every kind of key an adapter may keep apart: the store's records, a session's, its rows, meta, the session index's.
      const first: RecordWrite[] = [
        [['a'], 'one'],
        [['a', 'b'], 'ab'],
        [['session', 'm', 'chain', '0'], 'm0'],
        [['session', 'm-2', 'chain', '0'], 'other'],
        [checkpointKey('m'), row(1)],
        [historyKey('m', 5), row(5)],
        [historyKey('m', 9), row(9)],
        [metaKey('many'), 'meta'],
        [indexEntryKey('ax', 7, 'm'), ''],
        [indexEntryKey('ax', 8, 'm-2'), ''],
        [summaryKey('m'), '{"v":1}'],
      ]
      await writeMany(records, first)
      const keys = [...first.map(([k]) => k), ['nothing'], checkpointKey('m-2'), historyKey('m', 6)]
      const expected = [...first.map(([, v]) => v), undefined, undefined, undefined]
      expect(await getMany(records, keys)).toEqual(expected)
      expect(await Promise.all(keys.map((k) => records.get(k)))).toEqual(expected)
      // Replaced whole, deleted (a delete of nothing is no failure), in one call.
      await writeMany(records, [
        [['a'], 'two'],
        [['a', 'b'], undefined],
        [historyKey('m', 5), undefined],
        [checkpointKey('m'), row(2)],
        [indexEntryKey('ax', 7, 'm'), undefined],
        [indexEntryKey('cx', 7, 'm'), ''],
        [['nothing'], undefined],
      ])
      expect(
        await getMany(records, [
          ['a'],
          ['a', 'b'],
          historyKey('m', 5),
          historyKey('m', 9),
          checkpointKey('m'),
          indexEntryKey('ax', 7, 'm'),
          indexEntryKey('cx', 7, 'm'),
        ]),
      ).toEqual(['two', undefined, undefined, row(9), row(2), undefined, ''])
      expect(await records.list(['session', 'm', HISTORY_PART])).toEqual([historyKey('m', 9)])
      // Bad writes: INVALID_ARGUMENT, nothing written.
      const before = await all()
      const bad: unknown[] = [
        [
          [['ok'], 'v'],
          [['a b'], 'v'],
        ],
        [
          [['ok'], 'v'],
          [['ok'], 'w'],
        ],
        [
          [['ok'], 'v'],
          [['big'], 'x'.repeat(1024 * 1024 + 1)],
        ],
        [
          [['ok'], 'v'],
          [['n'], 1],
        ],
        [[['ok'], 'v'], ['x']],
        'x',
      ]
      for (const writes of bad) await expectCode(writeMany(records, writes as never), 'INVALID_ARGUMENT')
      await expectCode(getMany(records, [['ok'], ['a b']]), 'INVALID_ARGUMENT')
      expect(await all()).toEqual(before)
      // A session's record without the session.
      await expectCode(writeMany(records, [[['session', 'ghost', 'x'], 'v']]), 'SESSION_NOT_FOUND')
      await expectCode(writeMany(records, [[summaryKey('ghost'), '{}']]), 'SESSION_NOT_FOUND')
      expect(await records.get(['session', 'ghost', 'x'])).toBeUndefined()
      await h.adapter.deleteSession('m')
      expect(await getMany(records, [['session', 'm', 'chain', '0'], checkpointKey('m'), historyKey('m', 9), ['session', 'm-2', 'chain', '0']])).toEqual([
        undefined,
        undefined,
        undefined,
        'other',
      ])
    },
    'kv',
  )

  t.test(
    'replaceRecords replaces records and the header in place; a changed length, an unknown seq or another life is refused with nothing written',
    async (h) => {
      const a = h.adapter
      const text = (seq: number, c: string) => ({ text: `v${seq}-${c.repeat(4)}` })
      await a.createSession(rootHeader('r', { cwd: '/one' }))
      await a.append(
        'r',
        evs('r', 0, 3, (seq) => text(seq, 'a')),
      )
      const feedBefore = a.feed ? await a.feed.read('', 100) : []
      const before = await snapshotStore(a)
      await expectCode(a.replaceRecords!('r', { records: [ev('r', 1, { text: 'v1-aaaaa' })] }), 'INVALID_ARGUMENT') // one byte longer
      await expectCode(a.replaceRecords!('r', { records: [ev('r', 1, { text: 'v1-aaa' })] }), 'INVALID_ARGUMENT') // one byte shorter
      await expectCode(a.replaceRecords!('r', { records: [ev('r', 1, text(1, 'b')), ev('r', 3, text(3, 'b'))] }), 'INVALID_ARGUMENT') // seq 3 is not stored
      await expectCode(a.replaceRecords!('r', { records: [ev('r', 1, text(1, 'b')), ev('r', 1, text(1, 'c'))] }), 'INVALID_ARGUMENT')
      await expectCode(a.replaceRecords!('r', { records: [ev('r', 0, text(0, 'b'))], header: rootHeader('r', { createdAt: 5 }) }), 'INVALID_ARGUMENT')
      await expectCode(a.replaceRecords!('nobody', { records: [] }), 'SESSION_NOT_FOUND')
      expect(await snapshotStore(a)).toEqual(before)
      await a.replaceRecords!('r', { records: [ev('r', 0, text(0, 'b')), ev('r', 2, text(2, 'b'))], header: rootHeader('r', { cwd: '/two' }) })
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
    },
    'replaceRecords',
  )
}
