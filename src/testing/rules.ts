// The storage conformance suite, the rules around the calls: concurrent appends, refusals of bad
// ids and data, CLOSED after close(), durability across a reopen, the change feed, meta records.
import { expect } from 'vitest'
import { witnessOf } from '../core/model'
import { encodeEventInput } from '../core/validate'
import { BAD_IDS, ev, evs, expectCode, readAll, rootHeader, snapshotStore } from './helpers'
import type { Group } from './suite'

/** Registers the tests of concurrency, refusals, close, reopen, the change feed and meta records. @internal */
export function ruleTests(t: Group): void {
  t.test('lets 50 concurrent callers append to one session: contiguous seqs, nothing lost', async ({ adapter }) => {
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
    const expected = Array.from({ length: 50 }, (_, c) => [0, 1, 2, 3].map((k) => JSON.stringify({ caller: c, k })))
      .flat()
      .sort()
    expect(written).toEqual(expected)
    expect(conflicts).toBeGreaterThanOrEqual(0)
  })

  t.test('rejects bad ids and bad data with INVALID_ARGUMENT and stores nothing', async ({ adapter }) => {
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
    for (const data of [
      cyclic,
      () => 1,
      { u: undefined },
      NaN,
      Infinity,
      10n,
      Symbol('s'),
      new Date(0),
      new Map(),
      new Uint8Array(2),
      holey,
      { [Symbol('k')]: 1 },
    ]) {
      await expectCode(async () => adapter.append('ok', [encodeEventInput({ type: 't', data } as never, 1, 'ok')]), 'INVALID_ARGUMENT')
    }
    await expectCode(async () => encodeEventInput({ type: 't', data: 'x'.repeat(1024 * 1024) }, 1, 'ok'), 'EVENT_TOO_LARGE')
    await expectCode(async () => encodeEventInput({ type: '', data: 1 }, 1, 'ok'), 'INVALID_ARGUMENT')
    expect(await snapshotStore(adapter)).toEqual(before)
  })

  t.test('rejects calls after close with CLOSED', async ({ adapter }) => {
    await adapter.createSession(rootHeader('z'))
    await adapter.close()
    await expectCode(adapter.append('z', [ev('z', 0)]), 'CLOSED')
    await expectCode(adapter.getSession('z'), 'CLOSED')
    await expectCode(adapter.listSessions(), 'CLOSED')
    await expectCode(readAll(adapter, 'z'), 'CLOSED')
    await expectCode(adapter.createSession(rootHeader('w')), 'CLOSED')
    await adapter.close() // a second close is harmless
  })

  t.own('keeps everything across close and reopen', async ({ skip }) => {
    const h = await t.setup()
    if (!h.reopen) {
      await h.teardown()
      return skip('the harness has no reopen: nothing of this store outlives close()')
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

  t.test(
    'the change feed names each creation and append in commit order, read after any position',
    async ({ adapter }) => {
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
      expect(all.map(({ id, from, to }) => [id, from, to])).toEqual([
        ['a', 0, 0],
        ['a', 0, 3],
        ['f', 0, 2],
        ['a', 3, 4],
      ])
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
    },
    'feed',
  )

  t.test(
    'keeps meta records by key, durably, and refuses bad keys and values',
    async (h) => {
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
        // The feed's id, and what it recorded, outlive a reopen too.
        const id = t.has('feed') ? await a.feed!.id() : undefined
        await a.createSession(rootHeader('p'))
        const b = await h.reopen()
        expect(await b.getMeta!('cursor')).toBe('{"x":2}')
        if (t.has('feed')) {
          expect(await b.feed!.id()).toBe(id)
          expect((await b.feed!.read('', 10)).map((e) => e.id)).toEqual(['p'])
        }
      }
    },
    'meta',
  )
}
