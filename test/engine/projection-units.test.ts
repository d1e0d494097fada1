// Contract: §3 projections — the built-in units subagent, subagentCatalog, subagentTiming; chunked list; registry (docs/CONTRACT.md)
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import * as zm from 'zod/mini'
import { ChunkedList } from '../../src/core/chunked-list'
import { chunkedListSchema } from '../../src/core/chunked-list-schema'
import type { SessionEvent, SessionHeader } from '../../src/core/model'
import { ProjectionRegistry, defineProjection } from '../../src/core/projection'
import { subagentCatalogUnit, subagentTimingUnit, subagentUnit } from '../../src/core/units'
import { catalogEntrySchema, type CatalogEntry } from '../../src/core/units/catalog'
import { foldEvent, initSlots, snapshotOf } from '../../src/engine/units'
import { expectCode, rootHeader } from '../support/helpers'

const e = (seq: number, type: string, data: unknown = null, time = 1000 + seq): SessionEvent => ({ seq, type, time, data: data as never })
const fact = (seq: number, childId: string, extra: Record<string, unknown> = {}) =>
  e(seq, 'subagent/catalog', { v: 2, childId, childCreatedAt: 5, mode: 'one-shot', ...extra })
const entry = (i: number) => ({ id: `c${i}`, createdAt: i, mode: 'one-shot' as const, seq: i })

describe('chunked list', () => {
  it('1,025 appends give chunks [1, 64 x 16] and keep order across a JSON round trip at every step', () => {
    const schema = chunkedListSchema(catalogEntrySchema)
    let list = ChunkedList.empty<CatalogEntry>()
    for (let i = 0; i < 1025; i++) {
      list = list.append(entry(i))
      const back = schema.parse(JSON.parse(JSON.stringify(list)))
      expect(back.length).toBe(i + 1)
      if (i % 97 === 0 || i === 1024) expect(back.toArray()).toEqual(list.toArray())
      list = back // keep appending to the round-tripped form
    }
    expect(list.chunks().map((c) => c.length)).toEqual([1, ...Array(16).fill(64)])
    expect(list.toArray().map((x) => x.seq)).toEqual([...Array(1025).keys()])
    expect(JSON.stringify(list).startsWith('[[{')).toBe(true) // nesting stays two levels deep
  })

  it('is persistent: an append copies at most the head chunk and never changes an earlier list', () => {
    let list = ChunkedList.empty<number>()
    for (let i = 0; i < 70; i++) list = list.append(i)
    const before = list.toArray()
    const chunksBefore = list.chunks()
    const a = list.append(70)
    const b = list.append(-1)
    expect(list.toArray()).toEqual(before)
    expect(a.toArray().at(-1)).toBe(70)
    expect(b.toArray().at(-1)).toBe(-1)
    expect(a.chunks()[1]).toBe(chunksBefore[1]) // the full chunk below the head is shared, not copied
    expect(chunksBefore[0]).toEqual([64, 65, 66, 67, 68, 69]) // the old head was copied, not pushed onto
  })

  it('has a strict schema: no empty chunk, none over 64, full chunks below the head, valid items', () => {
    const schema = chunkedListSchema(catalogEntrySchema)
    const full = Array.from({ length: 64 }, (_, i) => entry(i))
    expect(schema.safeParse([[entry(64)], full]).success).toBe(true)
    expect(schema.safeParse([]).success).toBe(true)
    for (const bad of [
      [[]],
      [[...full, entry(64)]],
      [[entry(1)], [entry(0)]],
      [[{ ...entry(0), extra: 1 }]],
      [[{ ...entry(0), seq: -1 }]],
      [[entry(0)], 'x'],
      { chunks: [] },
    ]) {
      expect(schema.safeParse(bad).success, JSON.stringify(bad).slice(0, 80)).toBe(false)
    }
  })
})

describe('registry', () => {
  const unit = (v: number) => defineProjection({ key: 'mine', stateVersion: v, stateSchema: z.number(), init: () => 0, apply: (s: number) => s })
  it('throws when a key is registered twice with different stateVersions', async () => {
    const r = new ProjectionRegistry([unit(1)])
    r.register(unit(1))
    await expectCode(() => r.register(unit(2)), 'INVALID_ARGUMENT')
    await expectCode(() => new ProjectionRegistry([subagentUnit, { ...subagentUnit, stateVersion: 99 }]), 'INVALID_ARGUMENT')
  })
  it('checks definitions when they are made', async () => {
    for (const bad of [
      { ...unit(1), key: '' },
      { ...unit(1), key: '9x' },
      { ...unit(1), stateVersion: -1 },
      { ...unit(1), stateSchema: {} },
      { ...unit(1), apply: 1 },
      { ...unit(1), view: { view: () => 1 } },
    ]) {
      await expectCode(() => defineProjection(bad as never), 'INVALID_ARGUMENT')
    }
  })
})

describe('subagent (identity)', () => {
  const u = subagentUnit
  it('is last-wins over own descriptors and returns the same state for events it ignores', () => {
    let s = u.init(rootHeader('c'), 0)
    expect(u.apply(s, e(0, 'agent/message', { text: 'hi' }))).toBe(s)
    s = u.apply(s, e(1, 'subagent/descriptor', { v: 2, mode: 'one-shot' }))
    expect(u.view!.view(s)).toEqual({ mode: 'one-shot', seq: 1 })
    s = u.apply(s, e(2, 'subagent/descriptor', { v: 2, mode: 'continuable', label: 'researcher' }))
    expect(u.view!.view(s)).toEqual({ mode: 'continuable', label: 'researcher', seq: 2 })
    expect(u.apply(s, e(3, 'turn/start'))).toBe(s)
  })
  it('resets to null on a corrupt or unknown-version descriptor', () => {
    for (const bad of [{ v: 3, mode: 'one-shot' }, { v: 2, mode: 'continuable' }, { v: 2, mode: 'weird' }, null, 'x', { v: 2, mode: 'one-shot', extra: 1 }]) {
      let s = u.init(rootHeader('c'), 0)
      s = u.apply(s, e(0, 'subagent/descriptor', { v: 2, mode: 'one-shot', label: 'a' }))
      s = u.apply(s, e(1, 'subagent/descriptor', bad))
      expect(u.view!.view(s), JSON.stringify(bad)).toBeNull()
    }
  })
  it('ignores descriptors in a fork’s inherited prefix, with the identical state', () => {
    const s = u.init(rootHeader('f'), 3)
    expect(u.apply(s, e(1, 'subagent/descriptor', { v: 2, mode: 'one-shot' }))).toBe(s)
    expect(u.view!.view(u.apply(s, e(3, 'subagent/descriptor', { v: 2, mode: 'one-shot' })))).toEqual({ mode: 'one-shot', seq: 3 })
  })
})

describe('subagentCatalog', () => {
  const u = subagentCatalogUnit
  it('lists children in fact order across payload versions v0, v1 and v2', () => {
    let s = u.init(rootHeader('p'), 0)
    s = u.apply(s, e(0, 'subagent/catalog', { v: 0, childId: 'a', childCreatedAt: 1, mode: 'continuable', label: 'A' }))
    s = u.apply(s, e(1, 'subagent/catalog', { v: 1, childId: 'b', childCreatedAt: 2, mode: 'unknown' }))
    const same = u.apply(s, e(2, 'turn/end'))
    expect(same).toBe(s)
    s = u.apply(s, e(3, 'subagent/catalog', { v: 2, childId: 'c', childCreatedAt: 3, mode: 'external', label: 'ci' }))
    s = u.apply(s, e(4, 'subagent/catalog', { v: 2, childId: 'd', childCreatedAt: 4, mode: 'one-shot' }))
    expect(u.view!.view(s)).toEqual([
      { id: 'a', createdAt: 1, mode: 'continuable', label: 'A', seq: 0 },
      { id: 'b', createdAt: 2, mode: 'unknown', seq: 1 },
      { id: 'c', createdAt: 3, mode: 'external', label: 'ci', seq: 3 },
      { id: 'd', createdAt: 4, mode: 'one-shot', seq: 4 },
    ])
  })
  it('folds 1,025 facts into chunks [1, 64 x 16], keeping order across a checkpoint round trip at every step', () => {
    let s = u.init(rootHeader('p'), 0)
    for (let i = 0; i < 1025; i++) {
      const next = u.apply(s, fact(i, `c${i}`))
      expect(next).not.toBe(s)
      s = z.parse(u.stateSchema, JSON.parse(JSON.stringify(next))) // what a checkpoint stores and a cold read restores
    }
    expect(s.entries.chunks().map((c) => c.length)).toEqual([1, ...Array(16).fill(64)])
    expect(u.view!.view(s).map((x) => x.id)).toEqual(Array.from({ length: 1025 }, (_, i) => `c${i}`))
  })

  it('rejects the fold on an invalid own fact or unsupported version: never a shortened list', () => {
    const bad = [
      { v: 9, childId: 'x', childCreatedAt: 1, mode: 'one-shot' },
      { v: 2, childId: 'x', childCreatedAt: 1, mode: 'continuable' },
      { v: 2, childId: 'x', childCreatedAt: -1, mode: 'one-shot' },
      { v: 0, childId: 'x', childCreatedAt: 1, mode: 'unknown' },
      { v: 1, childId: 'x', childCreatedAt: 1, mode: 'external' },
      { v: 2, childId: '../x', childCreatedAt: 1, mode: 'one-shot' },
      { v: 2, childId: 'x', childCreatedAt: 1, mode: 'one-shot', extra: true },
      'not an object',
    ]
    for (const data of bad) {
      const slots = initSlots([u], rootHeader('p'))
      foldEvent(slots, fact(0, 'ok'))
      foldEvent(slots, e(1, 'subagent/catalog', data))
      foldEvent(slots, fact(2, 'later'))
      const snap = snapshotOf(slots, 2)
      expect(snap.faults, JSON.stringify(data)).toEqual({ subagentCatalog: 'corrupt' })
      expect(snap.values.subagentCatalog).toBeNull()
    }
  })
  it('ignores facts in a fork’s inherited prefix, even invalid ones', () => {
    const s = u.init(rootHeader('f'), 2)
    expect(u.apply(s, fact(0, 'parents-child'))).toBe(s)
    expect(u.apply(s, e(1, 'subagent/catalog', { v: 9 }))).toBe(s)
    expect(u.view!.view(u.apply(s, fact(2, 'mine')))).toEqual([{ id: 'mine', createdAt: 5, mode: 'one-shot', seq: 2 }])
  })
})

describe('subagentTiming', () => {
  const u = subagentTimingUnit
  it('turn/start opens, turn/end settles, an own descriptor resets', () => {
    let s = u.init(rootHeader('t'), 0)
    expect(u.apply(s, e(0, 'turn/end', null, 10))).toBe(s) // nothing running
    s = u.apply(s, e(1, 'turn/start', null, 100))
    expect(u.view!.view(s)).toEqual({ turns: 1, settledMs: 0, runningSince: 100 })
    expect(u.apply(s, e(2, 'turn/start', null, 150))).toBe(s)
    s = u.apply(s, e(3, 'turn/end', null, 400))
    s = u.apply(s, e(4, 'turn/start', null, 500))
    s = u.apply(s, e(5, 'turn/end', null, 550))
    expect(u.view!.view(s)).toEqual({ turns: 2, settledMs: 350, runningSince: null })
    s = u.apply(s, e(6, 'subagent/descriptor', { v: 2, mode: 'one-shot' }))
    expect(u.view!.view(s)).toEqual({ turns: 0, settledMs: 0, runningSince: null })
  })
  it('a descriptor inherited by a fork does not reset it', () => {
    let s = u.init(rootHeader('f'), 3)
    s = u.apply(s, e(0, 'turn/start', null, 0))
    s = u.apply(s, e(1, 'turn/end', null, 10))
    expect(u.apply(s, e(2, 'subagent/descriptor', { v: 2, mode: 'one-shot' }))).toBe(s)
  })
})

describe('a fork of a subagent', () => {
  it('inherits neither its identity nor its children', () => {
    const sub: SessionHeader = { version: 1, id: 's', createdAt: 1, parentSession: 'p', seedLength: 0, delegationDepth: 1, origin: 'subagent' }
    const log = [
      e(0, 'subagent/descriptor', { v: 2, mode: 'continuable', label: 'worker' }),
      fact(1, 'grandchild'),
      e(2, 'turn/start', null, 10),
      e(3, 'turn/end', null, 30),
    ]
    const original = initSlots([subagentUnit, subagentCatalogUnit, subagentTimingUnit], sub)
    log.forEach((ev) => foldEvent(original, ev))
    expect(snapshotOf(original, 3).values).toMatchObject({ subagent: { label: 'worker' }, subagentCatalog: [{ id: 'grandchild' }] })
    const fork: SessionHeader = { version: 1, id: 'f', createdAt: 2, seedLength: 4, delegationDepth: 1, origin: 'fork', forkedFrom: 's' }
    const slots = initSlots([subagentUnit, subagentCatalogUnit, subagentTimingUnit], fork)
    log.forEach((ev) => foldEvent(slots, ev))
    expect(snapshotOf(slots, 3).values).toEqual({
      subagent: null,
      subagentCatalog: [],
      subagentTiming: { turns: 1, settledMs: 20, runningSince: null },
    })
  })
})

// A list view that only grew has its new items checked alone (src/engine/units.ts), whichever zod
// API built its `array(item)`: classic, as apps write, or zod/mini, as the built-in units are.
describe('a list view that grew: only the new items meet its schema', () => {
  const arrays = {
    classic: (item: z.ZodType<number>) => z.array(item),
    mini: (item: z.ZodType<number>) => zm.array(item),
    'mini with a rule on the whole list': (item: z.ZodType<number>) => zm.array(item).check(zm.maxLength(100)),
  }
  for (const [api, array] of Object.entries(arrays)) {
    it(`${api}: 10 appends check ${api.includes('rule') ? 'the whole list each time (55 items)' : 'each item once (10)'}`, () => {
      let checked = 0
      const item = z.number().refine(() => ++checked > 0)
      const list = defineProjection<number[], number[]>({
        key: 'list',
        stateVersion: 1,
        stateSchema: z.array(z.number()),
        init: () => [],
        apply: (s, ev) => (ev.type === 'app/n' ? [...s, ev.seq] : s),
        view: { schema: array(item), view: (s) => s },
      })
      const slots = initSlots([list], rootHeader('p'))
      for (let seq = 0; seq < 10; seq++) {
        foldEvent(slots, e(seq, 'app/n'))
        expect(snapshotOf(slots, seq).values.list).toEqual([...Array(seq + 1).keys()])
      }
      expect(checked).toBe(api.includes('rule') ? 55 : 10)
      expect(slots[0]!.fault).toBeUndefined()
    })
  }

  it('mini: a new item that fails its schema faults the unit, naming its index', () => {
    const list = defineProjection<number[], number[]>({
      key: 'list',
      stateVersion: 1,
      stateSchema: zm.array(zm.number()),
      init: () => [],
      apply: (s, ev) => (ev.type === 'app/n' ? [...s, ev.seq === 3 ? -1 : ev.seq] : s),
      view: { schema: zm.array(zm.number().check(zm.nonnegative())), view: (s) => s },
    })
    const slots = initSlots([list], rootHeader('p'))
    for (let seq = 0; seq < 4; seq++) {
      foldEvent(slots, e(seq, 'app/n'))
      snapshotOf(slots, seq)
    }
    expect(slots[0]!.fault).toBe('corrupt')
    expect(slots[0]!.faultReason).toBe('view of "list" fails its schema: [3]: Too small: expected number to be >=0')
  })

  // A schema that lets anything through (z.any(), z.custom()), or an optional field left
  // undefined, must not let through what is not plain JSON: the client refuses such a frame
  // whole, and a port cannot carry a function at all.
  it('a view that is not plain JSON faults the unit, naming where; a promise too, its rejection taken', () => {
    const rejected = Promise.reject(new Error('async view'))
    const cases: [unknown, string | undefined][] = [
      [{ n: 1, f: () => 1 }, 'function at .f'],
      [{ deep: [{ s: Symbol('x') }] }, 'symbol at .deep[0].s'],
      [{ p: Promise.resolve(1) }, 'Promise at .p'],
      [{ label: undefined, n: 1 }, 'undefined at .label'],
      [{ at: new Date(0) }, 'Date at .at'],
      [{ n: Number.NaN }, 'NaN at .n'],
      [{ n: 1n }, '1n at .n'],
      [new Map([['k', 1]]), 'Map at the top'],
      [{ a: [1, 'two', { three: null }], b: true }, undefined],
    ]
    for (const [value, problem] of cases) {
      const any = defineProjection<number, unknown>({
        key: 'any',
        stateVersion: 1,
        stateSchema: z.number(),
        init: () => 0,
        apply: (s) => s + 1,
        view: { schema: z.any(), view: (s) => (s > 0 ? value : null) },
      })
      const slots = initSlots([any], rootHeader('p'))
      expect(snapshotOf(slots, -1).values.any).toBeNull()
      foldEvent(slots, e(0, 'app/n'))
      const snap = snapshotOf(slots, 0)
      if (problem === undefined) {
        expect(slots[0]!.fault).toBeUndefined()
        expect(snap.values.any).toBe(value)
      } else {
        expect(slots[0]!.fault).toBe('corrupt')
        expect(slots[0]!.faultReason).toBe(`view of "any" is not plain JSON: ${problem}`)
        expect(snap.values.any).toBeNull()
      }
    }
    const asyncView = defineProjection<number, unknown>({
      key: 'asyncView',
      stateVersion: 1,
      stateSchema: z.number(),
      init: () => 0,
      apply: (s) => s + 1,
      view: { schema: z.any(), view: () => rejected },
    })
    const slots = initSlots([asyncView], rootHeader('p'))
    expect(snapshotOf(slots, -1).values.asyncView).toBeNull()
    expect(slots[0]!.faultReason).toBe('view returned a promise: units are synchronous')
  })

  it('an init or apply that returns a promise, or throws what String() cannot show, faults its unit alone', () => {
    const unit = (key: string, init: () => unknown, apply: (s: unknown) => unknown) =>
      defineProjection<unknown, unknown>({ key, stateVersion: 1, stateSchema: z.any(), init, apply, view: { schema: z.any(), view: () => 1 } })
    const slots = initSlots(
      [
        unit(
          'asyncInit',
          () => Promise.reject(new Error('no')),
          (s) => s,
        ),
        unit(
          'asyncApply',
          () => 0,
          () => Promise.resolve(1),
        ),
        unit(
          'nullProto',
          () => 0,
          () => {
            throw Object.create(null)
          },
        ),
        unit(
          'fine',
          () => 0,
          (s) => (s as number) + 1,
        ),
      ],
      rootHeader('p'),
    )
    expect(foldEvent(slots, e(0, 'app/n'))).toBe(true)
    expect(slots.map((s) => s.faultReason)).toEqual([
      'init returned a promise: units are synchronous',
      'apply returned a promise: units are synchronous',
      'something thrown that cannot be shown as text',
      undefined,
    ])
    expect(snapshotOf(slots, 0).values).toEqual({ asyncInit: null, asyncApply: null, nullProto: null, fine: 1 })
  })

  it('a list view that only grew has its new items checked for what cannot be sent, not the old ones again', () => {
    let walked = 0
    const items: unknown[] = []
    const list = defineProjection<number, unknown[]>({
      key: 'list',
      stateVersion: 1,
      stateSchema: z.number(),
      init: () => 0,
      apply: (s) => s + 1,
      view: {
        schema: z.array(z.any()),
        view: (s) => {
          while (items.length < s) {
            const i = items.length
            // A getter counts the walks of each item.
            items.push(i === 4 ? { f: () => i } : Object.defineProperty({}, 'i', { enumerable: true, get: () => (walked++, i) }))
          }
          return items.slice()
        },
      },
    })
    const slots = initSlots([list], rootHeader('p'))
    for (let seq = 0; seq < 4; seq++) {
      foldEvent(slots, e(seq, 'app/n'))
      snapshotOf(slots, seq)
    }
    expect(slots[0]!.fault).toBeUndefined()
    expect(walked).toBe(4) // each item once, though the list was checked four times
    foldEvent(slots, e(4, 'app/n'))
    snapshotOf(slots, 4)
    expect(slots[0]!.faultReason).toBe('view of "list" is not plain JSON: function at .f of item [4]')
  })
})
