// Contract: §5 subagents and forks, §6 client API — random call sequences checked against a model (docs/CONTRACT.md)
// Model-based fuzzing of the public client (issue 7): fast-check draws sequences of valid and
// invalid calls (create, open twice, observe, append single and batch with good and bad data,
// expectedSeq right and wrong, spawn, recordExternal, fork, close, delete, listChildren,
// event ranges, listSessions, and garbage arguments to every method), runs them against a real
// store and a plain model side by side, and checks:
// - every rejection is a SessionfoldError with a contract code, the one the model predicts;
// - every success returns what the model predicts (seqs, events, catalogs, children);
// - at checkpoints and at the end, every session's events equal the model's, and its values
//   (live through a writer, through a fresh observer, and for fs cold after reopening the store)
//   equal a full refold of its events by the built-in units, computed here independently.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  ERROR_CODES,
  isSessionfoldError,
  openStore,
  type ErrorCode,
  type Json,
  type OpenStoreOptions,
  type Session,
  type SessionEvent,
  type SessionHeader,
  type SessionView,
  type Store,
} from 'sessionfold'
import { SESSION_ID_PATTERN } from '../../src/core/limits'
import { safeParse } from '../../src/core/schemas'
import { BUILTIN_PROJECTIONS } from '../../src/core/units'
import { until } from '../contract/client'

const MAX_EVENT_BYTES = 4096
const IDS = ['a', 'b', 'B', 'c-1', 'CON']
const BAD_IDS = ['', '../a', 'a b', '\u0430', 'x'.repeat(129)]

// ---- the model ---------------------------------------------------------------------------

/** An event as the model expects it: `time` undefined when the store chose it (now). */
interface MEvent {
  type: string
  time?: number
  data: unknown
}
interface MSession {
  id: string
  events: MEvent[]
  catalog: { id: string; mode: string; label?: string }[]
}
interface MHandle {
  id: string
  writer: boolean
  h: SessionView
  closed: boolean
}

class Model {
  sessions = new Map<string, MSession>()
  handles: MHandle[] = []
  writerOf(id: string): MHandle | undefined {
    return this.handles.find((x) => x.id === id && x.writer && !x.closed)
  }
  open(): MHandle[] {
    return this.handles.filter((x) => !x.closed)
  }
}

// ---- inputs ------------------------------------------------------------------------------

const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as Json) // -0 is 0 in JSON
const descriptor = fc
  .oneof(
    fc.record({ v: fc.constant(2), mode: fc.constant('one-shot'), label: fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined }) }),
    fc.record({ v: fc.constant(2), mode: fc.constant('continuable'), label: fc.string({ minLength: 1, maxLength: 8 }) }),
  )
  .map((d) => JSON.parse(JSON.stringify(d)) as Json)
const goodEvent = fc
  .record({
    // Now and then a descriptor appended by the app: it changes the session's identity. (One of
    // the wrong shape, like a catalog fact the units would reject, is refused: BAD_EVENTS.)
    type: fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom('app/a', 'app/b', 'turn/start', 'turn/end') },
      { weight: 1, arbitrary: fc.constant('subagent/descriptor') },
    ),
    time: fc.option(fc.nat(2_000_000_000_000), { nil: undefined }),
    data: json,
  })
  .chain((e) => (e.type === 'subagent/descriptor' ? descriptor.map((data) => ({ ...e, data })) : fc.constant(e)))

/** Bad events, and the code each gets. */
const BAD_EVENTS: [ErrorCode, () => unknown][] = [
  ['INVALID_ARGUMENT', () => ({ type: '' })],
  ['INVALID_ARGUMENT', () => ({ type: 'app/x', data: 1n })],
  ['INVALID_ARGUMENT', () => ({ type: 'app/x', data: { u: undefined } })],
  ['INVALID_ARGUMENT', () => ({ type: 'app/x', data: [NaN] })],
  ['INVALID_ARGUMENT', () => ({ type: 'app/x', data: new Date(0) })],
  ['INVALID_ARGUMENT', () => ({ type: 'app/x', time: -1 })],
  ['INVALID_ARGUMENT', () => ({ type: 'app/x', extra: 1 })],
  ['INVALID_ARGUMENT', () => null],
  ['EVENT_TOO_LARGE', () => ({ type: 'app/x', data: 'x'.repeat(MAX_EVENT_BYTES) })],
  // The reserved events are checked by their definitions (DESIGN §19).
  ['INVALID_ARGUMENT', () => ({ type: 'subagent/descriptor', data: { v: 2, mode: 'continuable' } })],
  ['INVALID_ARGUMENT', () => ({ type: 'subagent/catalog', data: { v: 9, childId: 'x' } })],
  ['INVALID_ARGUMENT', () => ({ type: 'session/meta', data: 'a title' })],
]
const eventInput = fc.oneof(
  { weight: 6, arbitrary: goodEvent.map((e) => ({ good: true as const, e })) },
  { weight: 1, arbitrary: fc.nat(BAD_EVENTS.length - 1).map((i) => ({ good: false as const, i })) },
)
const anyId = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...IDS) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_IDS) })
const label = fc.oneof({ weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 10 }) }, { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(257)) })

/** Arguments nobody should pass; any method, any of them. */
const GARBAGE: (() => unknown)[] = [
  () => undefined,
  () => null,
  () => 42,
  () => 'x',
  () => [],
  () => ({}),
  () => ({ bogus: 1 }),
  () => 1n,
  () => Symbol('s'),
  () => () => 1,
  () => new Date(0),
  () => new Map(),
  () => ({ at: -1, from: 'x', mode: 7, childId: '..', expectedSeq: 1.5 }),
  () => JSON.parse('{"__proto__":{"x":1}}'),
]

const action = fc.oneof(
  { weight: 3, arbitrary: fc.record({ t: fc.constant('create' as const), id: fc.option(anyId, { nil: undefined }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('open' as const), id: anyId }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('observe' as const), id: anyId }) },
  {
    weight: 10,
    arbitrary: fc.record({
      t: fc.constant('append' as const),
      w: fc.nat(),
      batch: fc.boolean(),
      events: fc.array(eventInput, { minLength: 0, maxLength: 4 }),
      expected: fc.oneof(
        fc.constant('none' as const),
        fc.constant('right' as const),
        fc.constant('past' as const),
        fc.constant('future' as const),
        fc.constant('bad' as const),
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('spawn' as const),
      w: fc.nat(),
      mode: fc.constantFrom('one-shot', 'continuable', 'sometimes'),
      label: fc.option(label, { nil: undefined }),
      events: fc.array(eventInput, { maxLength: 2 }),
      id: fc.option(anyId, { nil: undefined, freq: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('external' as const), w: fc.nat(), childId: anyId, label: fc.option(label, { nil: undefined }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('fork' as const),
      w: fc.nat(),
      at: fc.option(fc.integer({ min: -2, max: 12 }), { nil: undefined }),
      id: fc.option(anyId, { nil: undefined, freq: 3 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('close' as const), h: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), id: anyId }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('children' as const), h: fc.nat(), recursive: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('events' as const),
      h: fc.nat(),
      from: fc.option(fc.integer({ min: -1, max: 12 }), { nil: undefined }),
      to: fc.option(fc.integer({ min: -1, max: 14 }), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('list' as const),
      after: fc.option(anyId, { nil: undefined }),
      limit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('garbage' as const),
      h: fc.nat(),
      g: fc.nat(GARBAGE.length - 1),
      method: fc.constantFrom(
        'createSession',
        'openSession',
        'observe',
        'deleteSession',
        'listSessions',
        'append',
        'appendOptions',
        'spawn',
        'recordExternal',
        'fork',
        'events',
        'listChildren',
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'check' as const }) },
)
type Action = typeof action extends fc.Arbitrary<infer A> ? A : never

// ---- running -----------------------------------------------------------------------------

async function drain(it: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
  const out: SessionEvent[] = []
  for await (const e of it) out.push(e)
  return out
}

/** What the model expects of stored events: exact where it knows, any number where the store chose. */
const expected = (events: MEvent[]) => events.map((e, seq) => ({ seq, type: e.type, time: e.time ?? expect.any(Number), data: e.data }))

/** A full refold of `events` by the built-in units, here, from nothing: the values a snapshot must hold. */
function refold(header: SessionHeader, events: SessionEvent[]): { values: Record<string, unknown>; faults: Record<string, string> } {
  const values: Record<string, unknown> = {}
  const faults: Record<string, string> = {}
  for (const def of BUILTIN_PROJECTIONS) {
    try {
      let state = def.init(header, header.seedLength)
      for (const e of events) state = def.apply(state, e)
      const value = def.view!.view(state)
      if (!safeParse(def.view!.schema, value).success) throw new Error('view fails its schema')
      values[def.key] = value ?? null
    } catch {
      values[def.key] = null
      faults[def.key] = 'corrupt'
    }
  }
  return { values, faults }
}

/** Pseudo codes for `call`: any contract code, or any code or success. */
const ANY = 'ANY' as ErrorCode
const MAY_PASS = 'MAY_PASS' as ErrorCode

interface Counts {
  calls: number
  rejected: number
  checks: number
}

async function run(store: Store, model: Model, a: Action, counts: Counts): Promise<void> {
  const pick = <T>(list: T[], n: number): T | undefined => (list.length === 0 ? undefined : list[n % list.length])
  const writers = () => model.open().filter((x) => x.writer)
  /** Runs a call the model expects to fail with `code` (or succeed, when code is undefined). */
  const call = async <T>(code: ErrorCode | undefined, fn: () => Promise<T> | T, what: string): Promise<T | undefined> => {
    counts.calls++
    let result: T
    try {
      result = await fn()
    } catch (err) {
      counts.rejected++
      if (!isSessionfoldError(err)) throw new Error(`${what}: not a SessionfoldError: ${String(err)}`, { cause: err })
      expect(ERROR_CODES, what).toContain(err.code)
      if (code === undefined) throw new Error(`${what}: expected success, got ${err.code}: ${err.message}`)
      if (code !== ANY && code !== MAY_PASS) expect(err.code, `${what}: ${err.message}`).toBe(code)
      return undefined
    }
    if (code !== undefined && code !== MAY_PASS) throw new Error(`${what}: expected ${code}, got success`)
    return result
  }
  const idCode = (id: string | undefined): ErrorCode | undefined => (id !== undefined && !SESSION_ID_PATTERN.test(id) ? 'INVALID_ARGUMENT' : undefined)
  /** A new session's id: refused if bad, locked while open for writing, taken if it exists. */
  const taken = (id: string | undefined): ErrorCode | undefined =>
    idCode(id) ?? (id === undefined ? undefined : model.writerOf(id) ? 'SESSION_LOCKED' : model.sessions.has(id) ? 'SESSION_EXISTS' : undefined)

  switch (a.t) {
    case 'create': {
      const exists = a.id !== undefined && model.sessions.has(a.id)
      // The request's own error first: a taken id is SESSION_EXISTS even while it is open for writing.
      const code = idCode(a.id) ?? (exists ? 'SESSION_EXISTS' : undefined)
      const s = await call(code, () => store.createSession(a.id === undefined ? {} : { id: a.id }), `createSession(${a.id})`)
      if (s) {
        model.sessions.set(s.id, { id: s.id, events: [], catalog: [] })
        model.handles.push({ id: s.id, writer: true, h: s, closed: false })
      }
      break
    }
    case 'open': {
      const code = idCode(a.id) ?? (!model.sessions.has(a.id) ? 'SESSION_NOT_FOUND' : model.writerOf(a.id) ? 'SESSION_LOCKED' : undefined)
      const s = await call(code, () => store.openSession(a.id), `openSession(${a.id})`)
      if (s) model.handles.push({ id: a.id, writer: true, h: s, closed: false })
      break
    }
    case 'observe': {
      const code = idCode(a.id) ?? (!model.sessions.has(a.id) ? 'SESSION_NOT_FOUND' : undefined)
      const v = await call(code, () => store.observe(a.id), `observe(${a.id})`)
      if (v) model.handles.push({ id: a.id, writer: false, h: v, closed: false })
      break
    }
    case 'append': {
      const w = pick(writers(), a.w)
      if (!w) break
      const m = model.sessions.get(w.id)!
      const inputs = a.events.map((e) => (e.good ? e.e : BAD_EVENTS[e.i]![1]()))
      const firstBad = a.events.find((e) => !e.good)
      const len = m.events.length
      const expectedSeq = { none: undefined, right: len, past: len - 1, future: len + 1 + (a.w % 3), bad: -1 }[a.expected]
      const sent = a.batch || inputs.length !== 1 ? inputs : inputs[0]
      let code: ErrorCode | undefined
      if (inputs.length === 0) code = 'INVALID_ARGUMENT'
      else if (firstBad && !firstBad.good) code = BAD_EVENTS[firstBad.i]![0]
      else if (expectedSeq === -1) code = 'INVALID_ARGUMENT'
      else if (expectedSeq !== undefined && expectedSeq !== len) code = 'SEQ_CONFLICT'
      const r = await call(code, () => (w.h as Session).append(sent as never, expectedSeq === undefined ? undefined : { expectedSeq }), `append to ${w.id}`)
      if (r) {
        expect(r).toEqual({ firstSeq: len, lastSeq: len + inputs.length - 1 })
        for (const e of a.events) if (e.good) m.events.push({ type: e.e.type, time: e.e.time, data: e.e.data })
        // Read your writes: the writer's values reflect the append when it resolves.
        expect(w.h.projections.snapshot().asOfSeq).toBe(m.events.length - 1)
      }
      break
    }
    case 'spawn': {
      const w = pick(writers(), a.w)
      if (!w) break
      const m = model.sessions.get(w.id)!
      const badLabel = a.label !== undefined && (a.label.length === 0 || a.label.length > 256)
      const firstBad = a.events.find((e) => !e.good)
      const code: ErrorCode | undefined =
        firstBad && !firstBad.good
          ? BAD_EVENTS[firstBad.i]![0]
          : a.mode === 'sometimes' || badLabel || (a.mode === 'continuable' && a.label === undefined)
            ? 'INVALID_ARGUMENT'
            : taken(a.id)
      const opts = {
        mode: a.mode as 'one-shot',
        ...(a.label === undefined ? {} : { label: a.label }),
        ...(a.id === undefined ? {} : { id: a.id }),
        events: a.events.map((e) => (e.good ? e.e : BAD_EVENTS[e.i]![1]())) as never,
      }
      const kid = await call(code, () => (w.h as Session).spawn(opts), `spawn from ${w.id}`)
      if (kid) {
        const descriptor = a.label === undefined ? { v: 2, mode: a.mode } : { v: 2, mode: a.mode, label: a.label }
        model.sessions.set(kid.id, {
          id: kid.id,
          catalog: [],
          events: [
            { type: 'subagent/descriptor', time: kid.header.createdAt, data: descriptor },
            ...a.events.map((e) => (e.good ? { type: e.e.type, time: e.e.time, data: e.e.data } : undefined)!),
          ],
        })
        const fact = { v: 2, childId: kid.id, childCreatedAt: kid.header.createdAt, mode: a.mode, ...(a.label === undefined ? {} : { label: a.label }) }
        m.events.push({ type: 'subagent/catalog', data: fact })
        m.catalog.push({ id: kid.id, mode: a.mode, ...(a.label === undefined ? {} : { label: a.label }) })
        model.handles.push({ id: kid.id, writer: true, h: kid, closed: false })
        expect(kid.header).toMatchObject({ origin: 'subagent', parentSession: w.id, seedLength: 0 })
      }
      break
    }
    case 'external': {
      const w = pick(writers(), a.w)
      if (!w) break
      const m = model.sessions.get(w.id)!
      const code = idCode(a.childId) ?? (a.label !== undefined && (a.label.length === 0 || a.label.length > 256) ? 'INVALID_ARGUMENT' : undefined)
      const r = await call(
        code,
        () => (w.h as Session).recordExternal({ childId: a.childId, ...(a.label === undefined ? {} : { label: a.label }) }),
        `recordExternal on ${w.id}`,
      )
      if (r) {
        expect(r).toEqual({ firstSeq: m.events.length, lastSeq: m.events.length })
        m.events.push({
          type: 'subagent/catalog',
          data: { v: 2, childId: a.childId, childCreatedAt: expect.any(Number), mode: 'external', ...(a.label === undefined ? {} : { label: a.label }) },
        })
        m.catalog.push({ id: a.childId, mode: 'external', ...(a.label === undefined ? {} : { label: a.label }) })
      }
      break
    }
    case 'fork': {
      const w = pick(writers(), a.w)
      if (!w) break
      const m = model.sessions.get(w.id)!
      const at = a.at ?? m.events.length
      const code = idCode(a.id) ?? (at < 0 || at > m.events.length ? 'INVALID_ARGUMENT' : taken(a.id))
      const f = await call(
        code,
        () => (w.h as Session).fork({ ...(a.at === undefined ? {} : { at: a.at }), ...(a.id === undefined ? {} : { id: a.id }) }),
        `fork of ${w.id} at ${a.at} as ${a.id}`,
      )
      if (f) {
        expect(f.header).toMatchObject({ origin: 'fork', forkedFrom: w.id, seedLength: at })
        // The copies are the stored events: what they hold exactly (times the store chose included).
        const copies = (await drain(w.h.events({ to: at }))).map((e) => ({ type: e.type, time: e.time, data: e.data }))
        expect(copies).toEqual(expected(m.events.slice(0, at)).map(({ seq: _, ...e }) => e))
        model.sessions.set(f.id, { id: f.id, events: copies, catalog: [] })
        model.handles.push({ id: f.id, writer: true, h: f, closed: false })
      }
      break
    }
    case 'close': {
      const h = pick(model.open(), a.h)
      if (!h) break
      await call(undefined, () => h.h.close(), `close ${h.id}`)
      h.closed = true
      break
    }
    case 'delete': {
      const code = idCode(a.id) ?? (model.writerOf(a.id) ? 'SESSION_LOCKED' : undefined)
      if (code === undefined) {
        for (const v of model.open().filter((x) => x.id === a.id)) {
          await v.h.close()
          v.closed = true
        }
      }
      await call(code, () => store.deleteSession(a.id), `deleteSession(${a.id})`)
      if (code === undefined) model.sessions.delete(a.id)
      break
    }
    case 'children': {
      const h = pick(model.open(), a.h)
      if (!h) break
      const m = model.sessions.get(h.id)!
      const corrupt = refold(h.h.header, await drain(h.h.events())).faults.subagentCatalog !== undefined
      const rows = await call(corrupt ? 'CORRUPT_LOG' : undefined, () => h.h.listChildren({ recursive: a.recursive }), `listChildren of ${h.id}`)
      if (!rows) break
      const direct = rows.filter((r) => r.depth === 0)
      expect(direct.map((r) => r.id)).toEqual(m.catalog.map((c) => c.id).filter((id, i, all) => all.indexOf(id) === i && id !== h.id))
      for (const r of direct) {
        const c = m.catalog.find((x) => x.id === r.id)!
        if (r.kind === 'child') {
          expect(r).toMatchObject({ mode: c.mode, parentId: h.id, activity: c.mode !== 'external' && model.writerOf(r.id) ? 'running' : 'inactive' })
          expect(r.label).toBe(c.label)
        } else {
          // A spawned child that was deleted is unavailable; one whose own catalog is rejected is corrupt.
          expect(c.mode).not.toBe('external')
          expect(model.sessions.has(r.id), JSON.stringify(r)).toBe(r.reason === 'corrupt')
        }
      }
      if (!a.recursive) expect(rows.length).toBe(direct.length)
      break
    }
    case 'events': {
      const h = pick(model.open(), a.h)
      if (!h) break
      const m = model.sessions.get(h.id)!
      const bad = (a.from !== undefined && a.from < 0) || (a.to !== undefined && a.to < 0)
      const got = await call(bad ? 'INVALID_ARGUMENT' : undefined, () => drain(h.h.events({ from: a.from, to: a.to })), `events of ${h.id}`)
      if (got) expect(got).toEqual(expected(m.events).slice(a.from ?? 0, a.to ?? m.events.length))
      break
    }
    case 'list': {
      const code = idCode(a.after) ?? (a.limit === 0 ? 'INVALID_ARGUMENT' : undefined)
      const got = await call(code, () => store.listSessions({ after: a.after, limit: a.limit }), 'listSessions')
      if (got) {
        const ids = [...model.sessions.keys()].sort().filter((id) => a.after === undefined || id > a.after)
        expect(got.map((x) => x.id)).toEqual(ids.slice(0, a.limit ?? 100))
      }
      break
    }
    case 'garbage': {
      const g = GARBAGE[a.g]!()
      const h = pick(model.open(), a.h)
      const w = pick(writers(), a.h)
      const target: Record<string, (() => unknown) | undefined> = {
        createSession: () => store.createSession(g as never),
        openSession: () => store.openSession(g as never),
        observe: () => store.observe(g as never),
        deleteSession: () => store.deleteSession(g as never),
        listSessions: () => store.listSessions(g as never),
        append: w && (() => (w.h as Session).append(g as never)),
        appendOptions: w && (() => (w.h as Session).append({ type: 'app/x' }, g as never)),
        spawn: w && (() => (w.h as Session).spawn(g as never)),
        recordExternal: w && (() => (w.h as Session).recordExternal(g as never)),
        fork: w && (() => (w.h as Session).fork(g as never)),
        events: h && (() => drain(h.h.events(g as never))),
        listChildren: h && (() => h.h.listChildren(g as never)),
      }
      const fn = target[a.method]
      // undefined or {} options are the defaults: such calls that would create or append are left out,
      // reads may succeed, and so may deleting a session that does not exist ('x').
      const empty = typeof g === 'object' && g !== null && !Array.isArray(g) && Object.getPrototypeOf(g) === Object.prototype && Reflect.ownKeys(g).length === 0
      if (!fn || g === undefined || (empty && ['createSession', 'fork', 'appendOptions'].includes(a.method))) break
      const mayPass = (empty && ['listSessions', 'events', 'listChildren'].includes(a.method)) || (g === 'x' && a.method === 'deleteSession')
      await call(
        mayPass ? MAY_PASS : ANY,
        fn,
        `${a.method}(${String(typeof g === 'symbol' ? 'symbol' : typeof g === 'bigint' ? 'bigint' : JSON.stringify(g))})`,
      )
      break
    }
    case 'check':
      await check(store, model, counts)
      break
  }
}

/** Every session: events as the model says, values (live, observed) equal to a full refold. */
async function check(store: Store, model: Model, counts: Counts, cold = false): Promise<void> {
  counts.checks++
  expect((await store.listSessions({ limit: 1000 })).map((h) => h.id).sort()).toEqual([...model.sessions.keys()].sort())
  for (const m of model.sessions.values()) {
    const v = await store.observe(m.id)
    try {
      const events = await drain(v.events())
      expect(events, m.id).toEqual(expected(m.events))
      const want = { asOfSeq: events.length - 1, ...refold(v.header, events) }
      expect(v.projections.snapshot(), `${m.id} observed${cold ? ' cold' : ''}`).toEqual(want)
      for (const h of model.open().filter((x) => x.id === m.id)) {
        if (!h.writer) await until(() => h.h.projections.snapshot().asOfSeq === want.asOfSeq)
        expect(h.h.projections.snapshot(), `${m.id} ${h.writer ? 'writer' : 'observer'}`).toEqual(want)
      }
      const catalog = (v.projections.get('subagentCatalog') ?? []) as { id: string }[]
      if (!want.faults.subagentCatalog) expect(catalog.map((c) => c.id)).toEqual(m.catalog.map((c) => c.id))
    } finally {
      await v.close()
    }
  }
}

// ---- the suites --------------------------------------------------------------------------

// A worker costs about half a second to start (tsx compiles its entry): fewer, longer runs there.
const CONFIGS: { name: string; storage: 'fs' | 'memory'; worker: boolean; runs: number; calls: [number, number] }[] = [
  { name: 'memory, in this thread', storage: 'memory', worker: false, runs: 160, calls: [20, 60] },
  { name: 'fs, in this thread', storage: 'fs', worker: false, runs: 30, calls: [20, 60] },
  { name: 'fs, worker_threads', storage: 'fs', worker: true, runs: 3, calls: [100, 150] },
  { name: 'memory, worker_threads', storage: 'memory', worker: true, runs: 3, calls: [100, 150] },
]
// FUZZ_SEED picks other sequences; FUZZ_SCALE=10 runs ten times as many (a longer hunt, not CI).
const SEED = Number(process.env.FUZZ_SEED ?? 7)
const SCALE = Number(process.env.FUZZ_SCALE ?? 1)

let tmp: string
beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sessionfold-fuzz-'))
})
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true })
})

describe('fuzzing the client against a model', () => {
  for (const config of CONFIGS) {
    it(`${config.name}: ${config.runs} runs of ${config.calls[0]}-${config.calls[1]} actions`, async () => {
      const counts: Counts = { calls: 0, rejected: 0, checks: 0 }
      let n = 0
      await fc.assert(
        fc.asyncProperty(fc.array(action, { minLength: config.calls[0], maxLength: config.calls[1], size: 'max' }), async (actions) => {
          const options: OpenStoreOptions = { storage: config.storage, dir: join(tmp, `run-${n++}`), worker: config.worker, maxEventBytes: MAX_EVENT_BYTES }
          let store = await openStore(options)
          const model = new Model()
          try {
            for (const a of actions) await run(store, model, a, counts)
            await check(store, model, counts)
          } finally {
            await store.close()
          }
          if (config.storage === 'fs') {
            // Cold: a new store on the same files reads the same events and the same values.
            for (const h of model.handles) h.closed = true
            store = await openStore(options)
            try {
              await check(store, model, counts, true)
            } finally {
              await store.close()
            }
          }
        }),
        { numRuns: config.runs * SCALE, seed: SEED + CONFIGS.indexOf(config), endOnFailure: true },
      )
      console.log(
        `fuzz ${config.name}: ${config.runs * SCALE} runs, ${counts.calls} calls (${counts.rejected} rejected as predicted), ${counts.checks} full checks`,
      )
      expect(counts.calls).toBeGreaterThan(config.runs * 10)
      expect(counts.rejected).toBeGreaterThan(0)
    }, 120_000)
  }
})
