// The storage conformance suite, sessions and events: creating (forks with their seed), appending
// contiguously, reading ranges, listing, ids that differ only in case, deleting.
import { expect } from 'vitest'
import { witnessOf, type SessionEvent } from '../core/model'
import { encodeEventInput } from '../core/validate'
import { ev, evs, expectCode, readAll, rootHeader, snapshotStore } from './helpers'
import type { Group } from './suite'

/** Registers the tests of sessions and their events. @internal */
export function sessionTests(t: Group): void {
  t.test('an empty store lists nothing and knows no session', async ({ adapter }) => {
    expect(await adapter.listSessions()).toEqual([])
    expect(await adapter.getSession('nobody')).toBeUndefined()
    await expectCode(adapter.append('nobody', [ev('nobody', 0)]), 'SESSION_NOT_FOUND')
    await expectCode(readAll(adapter, 'nobody'), 'SESSION_NOT_FOUND')
    await expectCode(adapter.getCheckpoint('nobody'), 'SESSION_NOT_FOUND')
    await adapter.deleteSession('nobody')
    expect(await snapshotStore(adapter)).toEqual({})
  })

  t.test('creates a session once; a second create is SESSION_EXISTS and changes nothing', async ({ adapter }) => {
    await adapter.createSession(rootHeader('s1', { cwd: '/work' }))
    expect(await adapter.getSession('s1')).toEqual({ header: rootHeader('s1', { cwd: '/work' }), length: 0 })
    await adapter.append('s1', [ev('s1', 0)])
    const before = await snapshotStore(adapter)
    await expectCode(adapter.createSession(rootHeader('s1', { createdAt: 5 })), 'SESSION_EXISTS')
    expect(await snapshotStore(adapter)).toEqual(before)
  })

  t.test('stores a fork with its seed events atomically', async ({ adapter }) => {
    const header = rootHeader('f', { origin: 'fork', forkedFrom: 'p', seedLength: 3 })
    await adapter.createSession(header, evs('f', 0, 3))
    expect(await adapter.getSession('f')).toEqual({ header, length: 3 })
    expect((await readAll(adapter, 'f')).map((e) => e.seq)).toEqual([0, 1, 2])
    await adapter.append('f', [ev('f', 3)])
    // A seed that does not match seedLength, or is not 0..n-1, creates nothing.
    await expectCode(adapter.createSession({ ...header, id: 'g' }, evs('g', 0, 2)), 'INVALID_ARGUMENT')
    await expectCode(adapter.createSession({ ...header, id: 'g' }, evs('g', 1, 3)), 'SEQ_CONFLICT')
    expect(await adapter.getSession('g')).toBeUndefined()
  })

  // getSessions is optional and no adapter is asked to have it: the test is skipped for one without it.
  t.own('getSessions: each session as getSession has it, with every event of the small ones, in the order asked', async ({ skip }) => {
    const { adapter, teardown } = await t.setup()
    try {
      if (!adapter.getSessions) return skip('the adapter has no getSessions (optional: the walk of changesSince then looks sessions up one by one)')
      await adapter.createSession(rootHeader('m1'))
      await adapter.append('m1', evs('m1', 0, 3))
      await adapter.createSession(rootHeader('m2', { cwd: '/w' }))
      await adapter.createSession(rootHeader('m3'))
      await adapter.append('m3', evs('m3', 0, 6))
      const reads = await adapter.getSessions(['m3', 'none', 'm1', 'm2'], 4)
      expect(reads.map((r) => r && { header: r.header, length: r.length })).toEqual([
        await adapter.getSession('m3'),
        undefined,
        await adapter.getSession('m1'),
        await adapter.getSession('m2'),
      ])
      expect(reads[0]!.events).toBeUndefined() // 6 events: more than asked
      expect(reads[2]!.events).toEqual(await readAll(adapter, 'm1'))
      expect(reads[3]!.events ?? []).toEqual([])
      expect((await adapter.getSessions(['m1'], 3))[0]!.events).toEqual(await readAll(adapter, 'm1')) // exactly as many as asked
      expect(await adapter.getSessions([], 4)).toEqual([])
      await expectCode(adapter.getSessions(['m1', 'bad id!'], 4), 'INVALID_ARGUMENT')
      for (const most of [-1, 1.5, Number.NaN, '4'] as never[]) await expectCode(adapter.getSessions(['m1'], most), 'INVALID_ARGUMENT')
      await expectCode(adapter.getSessions('m1' as never, 4), 'INVALID_ARGUMENT')
    } finally {
      await teardown()
    }
  })

  // createSessions is optional too: the test is skipped for an adapter without it.
  t.own('createSessions: each new session with its events, a taken id passed over, bad input refused with nothing written', async ({ skip }) => {
    const { adapter, teardown } = await t.setup()
    try {
      if (!adapter.createSessions) return skip('the adapter has no createSessions (optional: an import then creates sessions one at a time)')
      await adapter.createSession(rootHeader('c2'))
      await adapter.append('c2', evs('c2', 0, 2))
      const c2 = await adapter.getSession('c2')
      const fork = rootHeader('c4', { origin: 'fork', forkedFrom: 'c2', seedLength: 2 })
      const before = await snapshotStore(adapter)
      const head = await adapter.feed?.head()
      for (const bad of [
        'c1',
        [
          { header: rootHeader('c1'), events: evs('c1', 0, 2) },
          { header: rootHeader('c3'), events: evs('c3', 1, 3) },
        ], // not from seq 0
        [
          { header: rootHeader('c1'), events: evs('c1', 0, 2) },
          { header: rootHeader('c3'), events: [ev('c3', 0), ev('c3', 2)] },
        ], // a gap
        [
          { header: rootHeader('c1'), events: [] },
          { header: rootHeader('c1'), events: [] },
        ], // an id twice
        [{ header: fork, events: evs('c4', 0, 1) }], // fewer events than the seed
        [{ header: { id: 'c1' }, events: [] }], // a header without its fields
        [{ header: rootHeader('c1') }], // no events
        [null],
      ])
        await expectCode(adapter.createSessions(bad as never), 'INVALID_ARGUMENT')
      expect(await snapshotStore(adapter)).toEqual(before)
      if (adapter.feed) expect(await adapter.feed.read(head!, 100)).toEqual([])
      expect(await adapter.createSessions([])).toEqual([])
      const made = await adapter.createSessions([
        { header: rootHeader('c3', { cwd: '/w' }), events: evs('c3', 0, 3) },
        { header: rootHeader('c2', { createdAt: 5 }), events: evs('c2', 0, 5) },
        { header: rootHeader('c1'), events: [] },
        { header: fork, events: evs('c4', 0, 4) }, // a fork: its seed and what followed it
      ])
      expect(made).toEqual([true, false, true, true])
      expect(await adapter.getSession('c2')).toEqual(c2) // a taken id: left as it is
      expect(await adapter.getSession('c3')).toEqual({ header: rootHeader('c3', { cwd: '/w' }), length: 3 })
      expect(await readAll(adapter, 'c3')).toEqual(evs('c3', 0, 3).map((e) => e.event))
      expect(await adapter.getSession('c1')).toEqual({ header: rootHeader('c1'), length: 0 })
      expect(await adapter.getSession('c4')).toEqual({ header: fork, length: 4 })
      expect(await readAll(adapter, 'c4', { from: 1, to: 3 })).toEqual(evs('c4', 1, 2).map((e) => e.event))
      await adapter.append('c3', [ev('c3', 3)])
      await expectCode(adapter.append('c4', [ev('c4', 5)]), 'SEQ_CONFLICT')
      expect((await adapter.listSessions()).map((h) => h.id)).toEqual(['c1', 'c2', 'c3', 'c4'])
      if (adapter.feed) {
        const entries = (await adapter.feed.read(head!, 100)).map(({ id, from, to }) => ({ id, from, to }))
        expect(entries.slice(0, 3).sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual([
          { id: 'c1', from: 0, to: 0 },
          { id: 'c3', from: 0, to: 3 },
          { id: 'c4', from: 0, to: 4 },
        ])
        expect(entries.slice(3)).toEqual([{ id: 'c3', from: 3, to: 4 }])
      }
    } finally {
      await teardown()
    }
  })

  t.test('appends contiguously; a gap, a repeat or a broken batch is SEQ_CONFLICT and writes nothing', async ({ adapter }) => {
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
  })

  t.test('reads ranges at every boundary', async ({ adapter }) => {
    await adapter.createSession(rootHeader('r'))
    const n = 1300 // spans several read pages and index blocks
    for (let at = 0; at < n; at += 100) await adapter.append('r', evs('r', at, 100))
    const seqs = async (from?: number, to?: number) => (await readAll(adapter, 'r', { from, to })).map((e) => e.seq)
    const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i)
    expect(await seqs()).toEqual(range(0, n))
    for (const [from, to] of [
      [0, 1],
      [63, 65],
      [64, 128],
      [511, 513],
      [512, 1024],
      [1299, 1300],
      [700, 1300],
      [1, 1299],
    ] as const) {
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
  })

  t.test('reads ranges as texts (readTexts, where the adapter has it): each event as the JSON it was appended as', async ({ adapter }) => {
    if (!adapter.readTexts) return
    await adapter.createSession(rootHeader('x'))
    // Batches of one and of many (a codec stores them plain and in blocks), 600 events in all.
    for (let at = 0; at < 600; ) {
      const size = at % 200 === 0 ? 150 : 1
      await adapter.append('x', evs('x', at, size))
      at += size
    }
    const texts = async (from?: number, to?: number) => {
      const out: string[] = []
      for await (const page of adapter.readTexts!('x', { from, to })) out.push(...page)
      return out
    }
    const json = (events: readonly SessionEvent[]) => events.map((e) => JSON.stringify({ seq: e.seq, type: e.type, time: e.time, data: e.data }))
    expect(await texts()).toEqual(json(await readAll(adapter, 'x')))
    for (const [from, to] of [
      [0, 1],
      [1, 149],
      [149, 152],
      [200, 350],
      [210, 600],
      [599, 600],
      [600, 700],
    ] as const) {
      expect(await texts(from, to), `[${from}, ${to})`).toEqual(json(await readAll(adapter, 'x', { from, to })))
    }
    // Told to skip: the three records after each seq that is a multiple of 10 may come as '', no other.
    const all = json(await readAll(adapter, 'x'))
    for (const from of [0, 5, 598]) {
      const asked: number[] = []
      const skip = (text: string, seq: number) => {
        expect(text, `the text given to skip at ${seq}`).toBe(all[seq])
        asked.push(seq)
        return seq % 10 === 0 ? 3 : 0
      }
      const got: string[] = []
      for await (const page of adapter.readTexts('x', { from }, skip)) got.push(...page)
      expect(got).toHaveLength(600 - from)
      got.forEach((text, i) => {
        const seq = from + i
        const skippable = seq % 10 >= 1 && seq % 10 <= 3 && seq - (seq % 10) >= from
        if (text === '') expect(skippable, `'' at seq ${seq}`).toBe(true)
        else expect(text, `seq ${seq}`).toBe(all[seq])
      })
      for (const seq of asked) expect(got[seq - from]).not.toBe('')
    }
  })

  t.test('stops a read when its signal aborts', async ({ adapter }) => {
    await adapter.createSession(rootHeader('c'))
    await adapter.append('c', evs('c', 0, 2000))
    const ac = new AbortController()
    const seen: number[] = []
    await expectCode(
      (async () => {
        for await (const page of adapter.readEvents('c', { signal: ac.signal })) {
          seen.push(...page.map((e) => e.seq))
          ac.abort()
        }
      })(),
      'CANCELLED',
    )
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.length).toBeLessThan(2000)
  })

  t.test('round-trips a 1 MiB event and data exactly as given', async ({ adapter }) => {
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
  })

  t.test('lists 1,000 sessions through pages, ordered by id', async ({ adapter }) => {
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
  })

  t.test('keeps ids that differ only in case apart', async ({ adapter }) => {
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
  })

  t.test('deletes a session with its checkpoint; the id can be created again, empty', async ({ adapter }) => {
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
  })
}
