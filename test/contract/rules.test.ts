// Contract: §2 data model, §7 bad input — one rule, two checks: the client's hand checks and the worker's zod schemas agree on every generated input (docs/CONTRACT.md)
// Sections 2 (data model) and 5 (subagent payloads): each rule of src/core/limits.ts gives
// one verdict, whether the client's hand-written checks or the worker's zod schemas apply it.
// Both get the same generated inputs (valid ones, and ones just past a bound, of odd characters,
// of the wrong type, with links their origin does not allow), and must agree on every one.
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SessionView, isSessionfoldError, openStore, type Session, type Store } from 'sessionfold'
import { frameProblem, headerProblem } from '../../src/client/answer-checks'
import {
  CATALOG_MODES,
  CATALOG_VERSIONS,
  DESCRIPTOR_VERSION,
  HEADER_VERSION,
  MAX_CWD_LENGTH,
  MAX_EVENT_TYPE_LENGTH,
  MAX_LABEL_LENGTH,
  MAX_LIST_LIMIT,
  MAX_TAGS,
  MAX_TAG_LENGTH,
  MAX_TITLE_LENGTH,
  metaProblem,
  MAX_SESSION_ID_LENGTH,
  MODES_BY_VERSION,
  SESSION_ID_PATTERN,
  SESSION_ORIGINS,
  SPAWN_MODES,
  catalogFactProblem,
  childLabelProblem,
  isCount,
  isCwd,
  isEventType,
  isLabel,
  isSessionId,
  isTime,
} from '../../src/core/limits'
import {
  countSchema,
  cwdSchema,
  eventTypeSchema,
  safeParse,
  sessionEventSchema,
  sessionHeaderSchema,
  sessionIdSchema,
  timeSchema,
  type AnySchema,
} from '../../src/core/schemas'
import {
  appendInputSchema,
  createSessionInputSchema,
  forkInputSchema,
  listSessionsInputSchema,
  deleteSessionInputSchema,
  observeAtInputSchema,
  recordExternalInputSchema,
  spawnInputSchema,
} from '../../src/core/inputs'
import { catalogViewSchema } from '../../src/core/units/catalog'
import { metaViewSchema } from '../../src/core/units/meta'
import { catalogFactSchema, descriptorSchema, labelSchema, metaSchema } from '../../src/core/units/payloads'
import { subagentViewSchema } from '../../src/core/units/subagent'
import { timingViewSchema } from '../../src/core/units/timing'
import { assertSessionId, encodeEventBody, eventFromBody, isPlainObject } from '../../src/core/validate'
import { expectCode } from '../support/helpers'

const RUNS = 2000

/**
 * The two verdicts on `RUNS` generated inputs: they must be equal on each, and both verdicts must
 * occur often enough that the generator says something about the bound.
 */
function agree<T>(inputs: fc.Arbitrary<T>, hand: (v: T) => boolean, zod: (v: T) => boolean): void {
  const seen = { accepted: 0, refused: 0 }
  fc.assert(
    fc.property(inputs, (v) => {
      const verdict = hand(v)
      seen[verdict ? 'accepted' : 'refused']++
      return verdict === zod(v)
    }),
    { numRuns: RUNS },
  )
  expect(seen.accepted, 'inputs the rule accepts').toBeGreaterThan(RUNS / 20)
  expect(seen.refused, 'inputs the rule refuses').toBeGreaterThan(RUNS / 20)
}

const passes = (schema: AnySchema) => (v: unknown) => safeParse(schema, v).success
const noThrow =
  <T>(fn: (v: T) => unknown) =>
  (v: T) => {
    try {
      fn(v)
      return true
    } catch {
      return false
    }
  }

// ---- values ----------------------------------------------------------------------------------

/** JSON-shaped values of the wrong type for any field here. */
const wrongJson = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 3 }),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
)
/** Any wrong type, `undefined` and a bigint included. */
const wrongType = fc.oneof(wrongJson, fc.constant(undefined), fc.bigInt())

/** Characters that count differently: ASCII, id characters, a 2-unit astral character, lone surrogates, a combining mark, NUL. */
const ODD = ['a', 'Z', '0', '_', '-', ' ', '.', '/', '\\', '\n', '\0', 'é', 'e\u0301', '中', '😀', '\ud800', '\udc00']

/** Strings of 0, 1, about max/2, max-1, max and max+1 copies of one character, plus a tail, and short random strings. */
function aroundLength(max: number): fc.Arbitrary<string> {
  const half = Math.floor(max / 2)
  return fc.oneof(
    fc
      .tuple(fc.constantFrom(0, 1, 2, half - 1, half, half + 1, max - 1, max, max + 1), fc.constantFrom(...ODD), fc.constantFrom('', ...ODD))
      .map(([n, c, tail]) => c.repeat(n) + tail),
    fc.string({ unit: 'binary', maxLength: 6 }),
  )
}

const EDGE_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  1.7e12,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 1,
  2 ** 53 + 2,
  -Number.MAX_SAFE_INTEGER,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  -Number.MIN_VALUE,
  Infinity,
  -Infinity,
  NaN,
]
const numbers = fc.oneof(fc.constantFrom(...EDGE_NUMBERS), fc.integer({ min: -3, max: 3 }), fc.nat(), fc.double(), fc.integer())
const numberish = fc.oneof({ weight: 4, arbitrary: numbers }, { weight: 1, arbitrary: wrongType })

const validId = fc.stringMatching(SESSION_ID_PATTERN)
const ids = fc.oneof(validId, aroundLength(MAX_SESSION_ID_LENGTH), wrongType)
const labels = fc.oneof(aroundLength(MAX_LABEL_LENGTH), wrongType)
const cwds = fc.oneof(aroundLength(MAX_CWD_LENGTH), wrongType)
const eventTypes = fc.oneof(aroundLength(MAX_EVENT_TYPE_LENGTH), wrongType)
const validLabel = fc.string({ minLength: 1, maxLength: 12 })

/**
 * `base` with up to three changes: a field set to another value (undefined: present but
 * undefined), a field removed, or an unknown field added (`__proto__` as an own key too).
 */
function mutated(base: fc.Arbitrary<Record<string, unknown>>, keys: readonly string[], values: fc.Arbitrary<unknown>): fc.Arbitrary<Record<string, unknown>> {
  const change = fc.oneof(
    fc.record({ key: fc.constantFrom(...keys), value: values, remove: fc.constant(false) }),
    fc.record({ key: fc.constantFrom(...keys), value: fc.constant(undefined), remove: fc.constant(true) }),
    fc.record({ key: fc.constantFrom('x', 'extra', '__proto__', 'constructor'), value: values, remove: fc.constant(false) }),
  )
  return fc.tuple(base, fc.array(change, { maxLength: 3 })).map(([b, changes]) => {
    const o: Record<string, unknown> = { ...b }
    for (const { key, value, remove } of changes) {
      if (remove) delete o[key]
      else Object.defineProperty(o, key, { value, enumerable: true, configurable: true, writable: true })
    }
    return o
  })
}

const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined })
const without = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
const only = (o: Record<string, unknown>, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k))
const oneOf = (values: readonly unknown[], v: unknown) => values.includes(v)

// ---- the rules, one by one ---------------------------------------------------------------------

describe('one rule, one verdict: scalar rules', () => {
  it('session ids: isSessionId and assertSessionId agree with sessionIdSchema', () => {
    agree(ids, isSessionId, passes(sessionIdSchema))
    agree(ids, noThrow(assertSessionId), passes(sessionIdSchema))
  })
  it('labels: isLabel agrees with labelSchema', () => agree(labels, isLabel, passes(labelSchema)))
  it('cwds: isCwd agrees with the header cwd schema', () => agree(cwds, isCwd, passes(cwdSchema)))
  it('event types: isEventType agrees with the event type schema', () => agree(eventTypes, isEventType, passes(eventTypeSchema)))
  it('times and counts: isTime and isCount agree with their schemas', () => {
    agree(numberish, isTime, passes(timeSchema))
    agree(numberish, isCount, passes(countSchema))
  })
})

describe('one rule, one verdict: events', () => {
  const types = fc.oneof(aroundLength(MAX_EVENT_TYPE_LENGTH), wrongJson, fc.constant(undefined))
  const events = fc.record({ type: types, time: fc.oneof(numbers, wrongJson), data: fc.jsonValue({ maxDepth: 2 }) })
  it("the client's append check (encodeEventBody) agrees with sessionEventSchema", () => {
    agree(
      events,
      noThrow((e) => encodeEventBody(e, 's')),
      (e) => sessionEventSchema.safeParse({ seq: 0, ...e }).success,
    )
  })
  it("the stored form's check (eventFromBody) agrees with sessionEventSchema on the same JSON", () => {
    agree(
      events,
      noThrow((e) => eventFromBody(JSON.stringify(e), 0, 's')),
      (e) => sessionEventSchema.safeParse(JSON.parse(JSON.stringify({ seq: 0, ...e }))).success,
    )
  })
})

describe('one rule, one verdict: headers', () => {
  const HEADER_KEYS = ['version', 'id', 'createdAt', 'cwd', 'parentSession', 'seedLength', 'delegationDepth', 'origin', 'forkedFrom']
  /** Headers as the engine writes them: the origin decides the links. */
  const written = fc
    .record({
      id: validId,
      createdAt: fc.nat(),
      cwd: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
      origin: fc.constantFrom(...SESSION_ORIGINS),
      link: validId,
      seed: fc.nat(3),
      depth: fc.nat(3),
    })
    .map(({ id, createdAt, cwd, origin, link, seed, depth }) =>
      without({
        version: HEADER_VERSION,
        id,
        createdAt,
        cwd,
        origin,
        seedLength: origin === 'fork' ? seed : 0,
        delegationDepth: origin === 'root' ? 0 : depth,
        parentSession: origin === 'subagent' ? link : undefined,
        forkedFrom: origin === 'fork' ? link : undefined,
      }),
    )
  const values = fc.oneof(ids, cwds, numberish, fc.constantFrom(HEADER_VERSION, 2, '1', ...SESSION_ORIGINS, 'external', 'Root'))
  const headers = fc.oneof({ weight: 9, arbitrary: mutated(written, HEADER_KEYS, values) }, { weight: 1, arbitrary: wrongType })

  it("the client's check of a header (headerProblem) agrees with sessionHeaderSchema", () => {
    agree(headers, (h) => headerProblem(h) === undefined, passes(sessionHeaderSchema))
  })
})

describe('one rule, one verdict: subagent payloads and the views made of them', () => {
  const modes = fc.constantFrom(...CATALOG_MODES, 'sometimes', 'One-shot', '')
  const values = fc.oneof(ids, labels, numberish, modes, fc.constantFrom(...CATALOG_VERSIONS, 3, -1, '2'))

  it('catalog facts: the payload-version rules by hand agree with catalogFactSchema', () => {
    const KEYS = ['v', 'childId', 'childCreatedAt', 'mode', 'label']
    const facts = mutated(
      fc
        .constantFrom(...CATALOG_VERSIONS)
        .chain((v) =>
          fc.record({
            v: fc.constant(v),
            childId: validId,
            childCreatedAt: fc.nat(),
            mode: fc.constantFrom(...MODES_BY_VERSION[v]),
            label: fc.option(validLabel, { nil: undefined }),
          }),
        )
        .map(without),
      KEYS,
      values,
    )
    const byHand = (f: Record<string, unknown>) =>
      isPlainObject(f) &&
      only(f, KEYS) &&
      oneOf(CATALOG_VERSIONS, f.v) &&
      isSessionId(f.childId) &&
      isTime(f.childCreatedAt) &&
      oneOf(CATALOG_MODES, f.mode) &&
      (f.label === undefined || isLabel(f.label)) &&
      catalogFactProblem(f as Parameters<typeof catalogFactProblem>[0]) === undefined
    agree(facts, byHand, passes(catalogFactSchema))
  })

  it('descriptors: the mode and label rules by hand agree with descriptorSchema', () => {
    const KEYS = ['v', 'mode', 'label']
    const descriptors = mutated(
      fc.record({ v: fc.constant(DESCRIPTOR_VERSION), mode: fc.constantFrom(...SPAWN_MODES), label: fc.option(validLabel, { nil: undefined }) }).map(without),
      KEYS,
      values,
    )
    const byHand = (d: Record<string, unknown>) =>
      isPlainObject(d) &&
      only(d, KEYS) &&
      d.v === DESCRIPTOR_VERSION &&
      oneOf(SPAWN_MODES, d.mode) &&
      (d.label === undefined || isLabel(d.label)) &&
      childLabelProblem(d as { mode: unknown }) === undefined
    agree(descriptors, byHand, passes(descriptorSchema))
  })

  // Views cross the worker boundary as JSON (section 3): a field is absent, never undefined.
  // A faulted unit's value is null, which the client takes for every built-in view.
  const jsonValues = values.filter((v) => v !== undefined && typeof v !== 'bigint')
  const viewPasses = (schema: AnySchema) => (v: unknown) => v === null || safeParse(schema, v).success
  const inFrame = (key: string) => (v: unknown) => frameProblem({ n: 1, sessionId: 's', seq: 0, values: { [key]: v }, faults: {} }) === undefined
  const view = <T>(key: string, inputs: fc.Arbitrary<T>, schema: AnySchema) =>
    agree(fc.oneof({ weight: 9, arbitrary: inputs }, { weight: 1, arbitrary: wrongJson }), inFrame(key), viewPasses(schema))

  it("the client's check of the subagent view agrees with subagentViewSchema", () => {
    const identity = fc.record({ mode: fc.constantFrom(...SPAWN_MODES), label: fc.option(validLabel, { nil: undefined }), seq: fc.nat() }).map(without)
    view('subagent', mutated(identity, ['mode', 'label', 'seq'], jsonValues), subagentViewSchema)
  })

  it("the client's check of the subagentCatalog view agrees with catalogViewSchema", () => {
    const entry = mutated(
      fc
        .record({
          id: validId,
          createdAt: fc.nat(),
          mode: fc.constantFrom(...CATALOG_MODES),
          label: fc.option(validLabel, { nil: undefined }),
          seq: fc.nat(),
        })
        .map(without),
      ['id', 'createdAt', 'mode', 'label', 'seq'],
      jsonValues,
    )
    view('subagentCatalog', fc.array(entry, { maxLength: 3 }), catalogViewSchema)
    // A catalog that only grew crosses as its new entries: each checked like an entry of the list.
    const grownBy = (items: unknown) =>
      frameProblem({ n: 1, sessionId: 's', seq: 0, values: {}, grown: { subagentCatalog: { from: 0, items } }, faults: {} }) === undefined
    agree(fc.array(entry, { minLength: 1, maxLength: 3 }), grownBy, viewPasses(catalogViewSchema))
  })

  it("the client's check of the subagentTiming view agrees with timingViewSchema", () => {
    const timing = fc.record({ turns: fc.nat(), settledMs: fc.nat(), runningSince: fc.option(fc.nat(), { nil: null }) })
    view('subagentTiming', mutated(timing, ['turns', 'settledMs', 'runningSince'], jsonValues), timingViewSchema)
  })
})

describe('one rule, one verdict: session metadata (§14)', () => {
  const titles = fc.oneof(aroundLength(MAX_TITLE_LENGTH), fc.constant(null), wrongType)
  const tag = fc.oneof({ weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 8 }) }, { weight: 1, arbitrary: aroundLength(MAX_TAG_LENGTH) }, wrongType)
  const tagLists = fc.oneof(
    fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: MAX_TAGS }),
    fc.array(tag, { maxLength: 4 }),
    fc.array(fc.constantFrom('a', 'b'), { maxLength: 3 }),
    fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: MAX_TAGS - 1, maxLength: MAX_TAGS + 2 }),
    wrongType,
  )
  const metas = fc.oneof(
    { weight: 9, arbitrary: mutated(fc.record({ title: maybe(titles), tags: maybe(tagLists) }).map(without), ['title', 'tags'], fc.oneof(titles, tagLists)) },
    { weight: 1, arbitrary: wrongType },
  )

  it('session/meta data: the hand rule (metaProblem) agrees with metaSchema', () => {
    agree(metas, (m) => metaProblem(m) === undefined, passes(metaSchema))
  })

  it("the client's check of the sessionMeta view agrees with metaViewSchema", () => {
    const views = mutated(fc.record({ title: titles, tags: tagLists }), ['title', 'tags'], fc.oneof(titles, tagLists))
    const inFrame = (v: unknown) => frameProblem({ n: 1, sessionId: 's', seq: 0, values: { sessionMeta: v }, faults: {} }) === undefined
    agree(fc.oneof({ weight: 9, arbitrary: views }, { weight: 1, arbitrary: wrongJson }), inFrame, (v) => v === null || passes(metaViewSchema)(v))
  })
})

describe('one rule, one verdict: end to end', () => {
  // Before the zod schemas counted like the client, the worker took this label (200 code
  // points), stored the child and its catalog fact, and the client then refused the worker's
  // answer as PROJECTIONS_UNAVAILABLE, leaving the child behind.
  it('a label of 200 astral characters (400 UTF-16 units) is refused before anything is written', async () => {
    const store = await openStore({ storage: 'memory', worker: false })
    try {
      const parent = await store.createSession({ id: 'p' })
      const label = '😀'.repeat(200)
      await expectCode(parent.spawn({ mode: 'continuable', label }), 'INVALID_ARGUMENT')
      await expectCode(parent.recordExternal({ childId: 'x', label }), 'INVALID_ARGUMENT')
      expect((await store.listSessions()).map((h) => h.id)).toEqual(['p'])
      expect(parent.projections.get('subagentCatalog')).toEqual([])
    } finally {
      await store.close()
    }
  })
})

describe("one shape, one source: the host's inputs are their schemas (src/core/inputs.ts)", () => {
  // The input types of src/core/protocol.ts are inferred from these schemas, and the engine parses
  // every input with them; the client checks only the keys it passes on. Generated options go
  // through the public API (a memory store in this thread) and through the schema alone: the API
  // refuses one with INVALID_ARGUMENT exactly when the schema does. Any other outcome (done,
  // SESSION_EXISTS, SEQ_CONFLICT) means the input's shape was taken.
  const RUNS_API = 300
  let store: Store
  let w: Session

  beforeAll(async () => {
    store = await openStore({ storage: 'memory', worker: false })
    w = await store.createSession({ id: 'w' })
    await w.append([{ type: 'a' }, { type: 'b' }, { type: 'c' }])
  })
  afterAll(async () => {
    await store?.close()
  })

  /** Runs `call` on each input: its verdict (refused with INVALID_ARGUMENT or not) must be the schema's. */
  async function agreeThroughApi<T>(inputs: fc.Arbitrary<T>, call: (v: T) => Promise<unknown>, schema: AnySchema): Promise<void> {
    const seen = { accepted: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(inputs, async (v) => {
        const taken = await call(v).then(
          async (made) => {
            if (made instanceof SessionView) await made.close()
            return true
          },
          (err) => !isSessionfoldError(err, 'INVALID_ARGUMENT'),
        )
        seen[taken ? 'accepted' : 'refused']++
        return taken === passes(schema)(v)
      }),
      { numRuns: RUNS_API },
    )
    expect(seen.accepted, 'inputs the schema takes').toBeGreaterThan(RUNS_API / 20)
    expect(seen.refused, 'inputs the schema refuses').toBeGreaterThan(RUNS_API / 20)
  }

  /** Offsets within w's log (a fork or a view past its end is refused for that, not for its shape). */
  const offsets = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom(-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '2', null), wrongType)
  const spawnModes = fc.constantFrom(...SPAWN_MODES, 'external', 'One-shot', '')

  it('createSession options', async () => {
    const options = mutated(
      fc
        .record({ id: maybe(validId), cwd: maybe(fc.string({ maxLength: 8 })), title: maybe(fc.string({ maxLength: 8 })), tags: maybe(fc.constant(['a'])) })
        .map(without),
      ['id', 'cwd', 'title', 'tags'],
      fc.oneof(ids, cwds, aroundLength(MAX_TITLE_LENGTH), fc.constantFrom(['a', 'a'], [], null)),
    )
    await agreeThroughApi(options, (v) => store.createSession(v as never), createSessionInputSchema)
  })

  it('spawn options', async () => {
    const base = fc
      .record({ mode: fc.constantFrom(...SPAWN_MODES), label: maybe(validLabel), id: maybe(validId), title: maybe(fc.string({ maxLength: 8 })) })
      .map(without)
    const values = fc.oneof(ids, labels, spawnModes, aroundLength(MAX_TITLE_LENGTH), fc.constantFrom(['a', 'a'], ['t'], null))
    await agreeThroughApi(mutated(base, ['mode', 'label', 'id', 'title', 'tags'], values), (v) => w.spawn(v as never), spawnInputSchema)
  })

  it('fork options', async () => {
    const base = fc.record({ at: maybe(fc.integer({ min: 0, max: 3 })), id: maybe(validId) }).map(without)
    await agreeThroughApi(mutated(base, ['at', 'id'], fc.oneof(ids, offsets)), (v) => w.fork(v as never), forkInputSchema)
  })

  it('recordExternal options', async () => {
    const base = fc.record({ childId: validId, label: maybe(validLabel) }).map(without)
    await agreeThroughApi(mutated(base, ['childId', 'label'], fc.oneof(ids, labels)), (v) => w.recordExternal(v as never), recordExternalInputSchema)
  })

  it('append options', async () => {
    const base = fc.record({ expectedSeq: maybe(fc.nat({ max: 5000 })) }).map(without)
    await agreeThroughApi(mutated(base, ['expectedSeq'], numberish), (v) => w.append({ type: 'x' }, v as never), appendInputSchema)
  })

  it('listSessions options', async () => {
    const limits = fc.oneof(fc.integer({ min: 1, max: MAX_LIST_LIMIT }), fc.constantFrom(0, MAX_LIST_LIMIT + 1, 2.5, -1, '5', null), wrongType)
    const base = fc.record({ after: maybe(validId), limit: maybe(limits) }).map(without)
    await agreeThroughApi(mutated(base, ['after', 'limit'], fc.oneof(ids, limits)), (v) => store.listSessions(v as never), listSessionsInputSchema)
  })

  it('deleteSession options (of a session that is not there: an accepted delete resolves quietly)', async () => {
    const trees = fc.oneof(fc.boolean(), fc.constantFrom(0, 1, 'true', null), wrongType)
    const base = fc.record({ tree: maybe(trees) }).map(without)
    await agreeThroughApi(mutated(base, ['tree'], trees), (v) => store.deleteSession('nobody', v as never), deleteSessionInputSchema)
  })

  it('observe options with at (without it, observe follows the session and sends no options)', async () => {
    const options = mutated(fc.record({ at: fc.integer({ min: 0, max: 3 }) }), ['at'], offsets).filter((v) => v.at !== undefined)
    await agreeThroughApi(options, (v) => store.observe('w', v as never), observeAtInputSchema)
  })
})
