// Support: the checks of test/reliability/stores-v01.test.ts and its Chromium variant, on a store
// opened over a copy of a fixture that sessionfold 0.1 wrote (test/fixtures/stores/v0.1/, made by
// scripts/make-v01-fixtures.ts). Each check compares what today's code reads with the fixture's
// manifest, what 0.1 read from the same store. Platform-neutral (no Node module): the browser
// test runs the same checks on real IndexedDB.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { openStore, sync, type ChangeCursor, type SessionEvent, type SessionHeader, type Store, type SubagentListEntry, type VerifyReport } from 'sessionfold'
import { CHAIN_ZERO, chainOver, eventJson } from '../../src/core/chain'
import type { ProjectionSnapshot } from '../../src/core/projection'
import { dumpStore } from './helpers'

/** What 0.1 read from the store, as of one point or now. */
export interface V01Reading {
  values: ProjectionSnapshot
  children: SubagentListEntry[]
}

/** One session of a manifest: the short ones with their events, the long one as a hash. */
export interface V01Session extends V01Reading {
  header: SessionHeader
  length: number
  events?: SessionEvent[]
  /** SHA-256 (hex) of the events' stored JSONs (eventJson), joined by "\n". */
  eventsSha256?: string
  head?: SessionEvent[]
  tail?: SessionEvent[]
  /** Readings as of points (`observe(id, { at })`), by point. */
  at: Record<string, V01Reading>
}

/** A fixture's manifest (test/fixtures/stores/v0.1/<name>.manifest.json). */
export interface V01Manifest {
  format: 1
  madeBy: string
  storage: string
  /** listSessions, in its order. */
  ids: string[]
  /** Sessions deleted before the store was dumped (their parents' catalogs still name them). */
  deleted: string[]
  verify: VerifyReport
  /** The feed cursor of a replication that had pulled everything from 0.1 (changesSince until done). */
  feedHead: ChangeCursor
  sessions: Record<string, V01Session>
}

/** Strings the fixture's data, labels and cwds hold: none may show in an encrypted store's bytes. */
export const V01_SECRETS = ['sk-fixture-secret-7f3a9c', 'weltkarte', 'Suche', 'finde die Dateien', '/srv/agent']

/** Each session's events as the store holds them now: the model every later check compares with. */
export type V01Model = Map<string, SessionEvent[]>

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}

async function eventsOf(store: Store, id: string, at?: number): Promise<SessionEvent[]> {
  const view = at === undefined ? await store.observe(id) : await store.observe(id, { at })
  const out: SessionEvent[] = []
  try {
    for await (const e of view.events()) out.push(e)
  } finally {
    await view.close()
  }
  return out
}

/**
 * A snapshot as 0.1 had it: the same asOfSeq, faults and the value of every key 0.1 had (a unit
 * added since may add a key; none may change or drop one).
 */
function expectSnapshot(got: ProjectionSnapshot, want: ProjectionSnapshot, what: string): void {
  expect(got.asOfSeq, what).toBe(want.asOfSeq)
  expect(got.faults, what).toEqual(want.faults)
  for (const [key, value] of Object.entries(want.values)) expect(got.values[key], `${what}: ${key}`).toEqual(value)
}

/** Events compared as stored (seq, type, time, data, data's key order included). */
function expectSameEvents(got: SessionEvent[], want: SessionEvent[], what: string): void {
  expect(got.length, what).toBe(want.length)
  expect(got.map(eventJson), what).toEqual(want.map(eventJson))
}

/**
 * Everything the manifest says 0.1 read: the sessions listed, each header, its events (the long
 * log by hash and length), values, tree, values and tree as of every point, and verify's report.
 * Resolves with the model: the events as read.
 */
export async function expectReadsAsManifest(store: Store, manifest: V01Manifest): Promise<V01Model> {
  expect((await store.listSessions({ limit: 10_000 })).map((h) => h.id)).toEqual(manifest.ids)
  for (const gone of manifest.deleted) await expect(store.observe(gone)).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
  const model: V01Model = new Map()
  for (const id of manifest.ids) {
    const want = manifest.sessions[id]!
    const events = await eventsOf(store, id)
    if (want.events) {
      expectSameEvents(events, want.events, `events of ${id}`)
    } else {
      expect(events.length, `length of ${id}`).toBe(want.length)
      expectSameEvents(events.slice(0, want.head!.length), want.head!, `first events of ${id}`)
      expectSameEvents(events.slice(-want.tail!.length), want.tail!, `last events of ${id}`)
      expect(await sha256Hex(events.map(eventJson).join('\n')), `events of ${id}`).toBe(want.eventsSha256)
    }
    model.set(id, events)
    const view = await store.observe(id)
    try {
      expect({ ...view.header }, `header of ${id}`).toEqual(want.header)
      expectSnapshot(view.projections.snapshot(), want.values, `values of ${id}`)
      expect(await view.listChildren({ recursive: true }), `children of ${id}`).toEqual(want.children)
    } finally {
      await view.close()
    }
    await expectReadingsAt(store, id, want)
  }
  expect(await store.verify()).toEqual(manifest.verify)
  return model
}

/** The values and trees as of each of the manifest's points (time travel through history rows and checkpoints). */
export async function expectReadingsAt(store: Store, id: string, want: V01Session): Promise<void> {
  for (const [point, reading] of Object.entries(want.at)) {
    const then = await store.observe(id, { at: Number(point) })
    try {
      expectSnapshot(then.projections.snapshot(), reading.values, `values of ${id} as of ${point}`)
      expect(await then.listChildren({ recursive: true }), `children of ${id} as of ${point}`).toEqual(reading.children)
    } finally {
      await then.close()
    }
  }
}

/** Where a session is sent from, past the start: near its ends, and around the 64-event chain marks. */
function sendPoints(length: number): number[] {
  const points = [1, 2, 63, 64, 65, Math.floor(length / 2), 1024, 2047, length - 1]
  return [...new Set(points.filter((p) => p > 0 && p < length))].sort((a, b) => a - b)
}

/**
 * changesSince from a cursor past the start of each session: every entry carries the chain value
 * of the events before it, as computed from the log alone (0.1 stored no chain marks).
 */
export async function expectChainsFromLog(store: Store, model: V01Model): Promise<void> {
  for (const [id, events] of model) {
    const header = await headerOf(store, id)
    for (const from of sendPoints(events.length)) {
      const changes = await store.changesSince({ v: 1, sessions: { [id]: [header.createdAt, from] } }, { sessions: [id], maxEvents: 10 })
      expect(changes.failed).toEqual([])
      const entry = changes.batch.sessions.find((s) => s.header.id === id)
      expect(entry, `${id} from ${from}`).toBeDefined()
      expect(entry!.from, `${id} from ${from}`).toBe(from)
      expect(entry!.chain, `chain of ${id} at ${from}`).toBe(chainOver(CHAIN_ZERO, events.slice(0, from).map(eventJson)))
      expectSameEvents(entry!.events, events.slice(from, from + entry!.events.length), `${id} sent from ${from}`)
    }
  }
}

/** The feed cursor after everything `store` holds now (the first walk over every session done). */
async function feedHead(store: Store): Promise<ChangeCursor> {
  for (let cursor: ChangeCursor | null = null; ; ) {
    const changes = await store.changesSince(cursor)
    cursor = changes.cursor
    if (changes.done) {
      expect(cursor.v).toBe(2)
      return cursor
    }
  }
}

/** The events `store` sends after `cursor`, by session and seq (a run sent again must hold the same events). */
async function feedAfter(store: Store, cursor: ChangeCursor): Promise<Map<string, Map<number, SessionEvent>>> {
  const out = new Map<string, Map<number, SessionEvent>>()
  for (let at = cursor; ; ) {
    const changes = await store.changesSince(at)
    expect(changes.failed).toEqual([])
    for (const entry of changes.batch.sessions) {
      const got = out.get(entry.header.id) ?? new Map<number, SessionEvent>()
      for (const e of entry.events) {
        const before = got.get(e.seq)
        if (before) expect(eventJson(e), `${entry.header.id} seq ${e.seq} sent twice, differently`).toBe(eventJson(before))
        got.set(e.seq, e)
      }
      out.set(entry.header.id, got)
    }
    if (changes.done) return out
    at = changes.cursor
  }
}

/**
 * What was sent after a cursor holds every event written since (each session's events from
 * `since.get(id)`, 0 for a session made since), as the model has them; with `only`, nothing else.
 */
function expectSentSince(sent: Map<string, Map<number, SessionEvent>>, model: V01Model, since: (id: string) => number, only: boolean): void {
  for (const [id, events] of model) {
    const got = sent.get(id) ?? new Map<number, SessionEvent>()
    for (const e of got.values()) expect(eventJson(e), `${id} seq ${e.seq} as sent`).toBe(eventJson(events[e.seq]!))
    const missing = events
      .slice(since(id))
      .filter((e) => !got.has(e.seq))
      .map((e) => e.seq)
    expect(missing, `events of ${id} written since the cursor and never sent`).toEqual([])
    if (only) expect([...got.keys()].filter((seq) => seq < since(id)).length, `events of ${id} sent again though written before the cursor`).toBe(0)
  }
}

/** Every session of the model holds exactly its events, and nothing else is listed. */
export async function expectModel(store: Store, model: V01Model): Promise<void> {
  expect((await store.listSessions({ limit: 10_000 })).map((h) => h.id)).toEqual([...model.keys()].sort())
  for (const [id, events] of model) expectSameEvents(await eventsOf(store, id), events, `events of ${id}`)
}

const sum = (model: V01Model) => [...model.values()].reduce((n, e) => n + e.length, 0)
const t = (n: number) => 1_800_000_000_000 + n

/** `inputs` appended through `store`'s writer of `id` (opened and closed here), checked, and added to the model. */
async function appendTo(store: Store, model: V01Model, id: string, inputs: { type: string; data: never; time: number }[]): Promise<void> {
  const events = model.get(id)!
  const session = await store.openSession(id)
  try {
    const result = await session.append(inputs, { expectedSeq: events.length })
    expect(result).toEqual({ firstSeq: events.length, lastSeq: events.length + inputs.length - 1 })
    expect(session.projections.snapshot().asOfSeq).toBe(events.length + inputs.length - 1)
  } finally {
    await session.close()
  }
  events.push(...inputs.map((e, i) => ({ seq: events.length + i, type: e.type, time: e.time, data: e.data })))
}

/**
 * The fixture synced whole to a fresh store, which then appends to old sessions (a short one no
 * writer ever opened in the fixture, the long one) and creates one; synced back, the fixture
 * takes exactly those, with no conflict: its chain values at the old ends come from its log.
 */
export async function expectSyncRoundTrip(store: Store, fresh: Store, model: V01Model): Promise<void> {
  const there = await sync(store, fresh)
  expect(there).toEqual({ copiedSessions: model.size, copiedEvents: sum(model), deletedSessions: 0, conflicts: [], skipped: [], failed: [] })
  const dump = await dumpStore(store)
  expect(await dumpStore(fresh)).toEqual(dump)
  await appendTo(fresh, model, 'root-oneshot', [{ type: 'app/message', data: { text: 'von drüben ↩' } as never, time: t(1) }])
  await appendTo(fresh, model, 'long', [
    { type: 'turn/start', data: { turn: 'synced' } as never, time: t(2) },
    { type: 'turn/end', data: null as never, time: t(3) },
  ])
  const created = await fresh.createSession({ id: 'from-fresh', cwd: '/elsewhere' })
  await created.append({ type: 'app/message', data: { text: 'neu' }, time: t(4) })
  await created.close()
  model.set('from-fresh', await eventsOf(fresh, 'from-fresh'))
  const back = await sync(fresh, store)
  expect(back).toEqual({ copiedSessions: 1, copiedEvents: 4, deletedSessions: 0, conflicts: [], skipped: [], failed: [] })
  expect(await dumpStore(store)).toEqual(await dumpStore(fresh))
  await expectModel(store, model)
}

/**
 * The fixture takes new writes: appends to the root, to its continuable child and to the long
 * session (each continuing at its length), and a new child of the root; the root's tree is the
 * old one with the new child after it, the deleted child still `unavailable`.
 */
export async function expectNewWrites(store: Store, manifest: V01Manifest, model: V01Model): Promise<void> {
  const turns = (manifest.sessions.root!.values.values.subagentTiming as { turns: number }).turns
  await appendTo(store, model, 'root', [
    { type: 'turn/start', data: { prompt: 'noch einmal' } as never, time: t(10) },
    { type: 'app/message', data: { role: 'assistant', text: 'Weiter geht’s 🚀', nested: { a: [1, { b: null }] } } as never, time: t(11) },
    { type: 'turn/end', data: { ok: true } as never, time: t(12) },
  ])
  await appendTo(store, model, 'root-helper', [
    { type: 'turn/start', data: { task: 'weiter' } as never, time: t(13) },
    { type: 'turn/end', data: null as never, time: t(14) },
  ])
  await appendTo(
    store,
    model,
    'long',
    Array.from({ length: 30 }, (_, i) => ({ type: 'app/message', data: { i, text: `after ${i}` } as never, time: t(20 + i) })),
  )

  const root = await store.openSession('root')
  const kid = await root.spawn({ id: 'root-new', mode: 'one-shot', label: 'neu', events: [{ type: 'app/message', data: { text: 'hallo' }, time: t(60) }] })
  await kid.close()
  expect((root.projections.get('subagentTiming') as { turns: number }).turns).toBe(turns + 1)
  await root.close()
  model.set('root', await eventsOf(store, 'root'))
  model.set('root-new', await eventsOf(store, 'root-new'))
  const view = await store.observe('root')
  const children = await view.listChildren({ recursive: true })
  await view.close()
  expect(children.slice(0, -1)).toEqual(manifest.sessions.root!.children)
  expect(children.at(-1)).toEqual({
    kind: 'child',
    id: 'root-new',
    parentId: 'root',
    depth: 0,
    createdAt: (await headerOf(store, 'root-new')).createdAt,
    activity: 'inactive',
    hasChildren: false,
    mode: 'one-shot',
    label: 'neu',
  })
  expect(children).toContainEqual({ kind: 'diagnostic', id: 'root-doomed', parentId: 'root', depth: 0, reason: 'unavailable' })
}

async function headerOf(store: Store, id: string): Promise<SessionHeader> {
  const view = await store.observe(id)
  const header = view.header
  await view.close()
  return header
}

/** After new writes and a reopen: every event, verify clean over all of them, and the old points read as 0.1 read them. */
export async function expectWholeAfterWrites(store: Store, manifest: V01Manifest, model: V01Model): Promise<void> {
  await expectModel(store, model)
  expect(await store.verify()).toEqual({ sessions: model.size, events: sum(model), damaged: [] })
  for (const id of manifest.ids) await expectReadingsAt(store, id, manifest.sessions[id]!)
}

/** Where a fixture's layout is checked: before today's code opens it, and once it wrote to it. */
export interface V01Layout {
  before: () => Promise<void>
  after: () => Promise<void>
}

/**
 * The checks on one fixture, in order, each step on what the one before left: `open` opens
 * today's store over the same copy each time it is called. A step that finds the one before
 * failed says so, rather than failing on its leftovers.
 */
export function v01Suite(load: () => Promise<V01Manifest>, open: () => Promise<Store>, layout?: V01Layout): void {
  let manifest: V01Manifest
  let store: Store | undefined
  let model: V01Model | undefined
  const ready = () => {
    if (!store || !model) throw new Error('an earlier step of this fixture failed: see the first failure')
    return { store, model }
  }
  beforeAll(async () => {
    manifest = await load()
    await layout?.before()
    store = await open()
  })
  afterAll(async () => {
    await store?.close()
  })

  it('reads as 0.1 read it: sessions, headers, events, values, trees, values as of points, verify', async () => {
    model = await expectReadsAsManifest(store!, manifest)
  })

  it('sends change batches from past the start with the chain value of the log (0.1 kept none)', async () => {
    const { store, model } = ready()
    await expectChainsFromLog(store, model)
  })

  it('syncs whole to a fresh store and takes back what that one appended, with no conflict', async () => {
    const { store, model } = ready()
    const fresh = await openStore({ storage: 'memory', worker: false })
    try {
      await expectSyncRoundTrip(store, fresh, model)
    } finally {
      await fresh.close()
    }
  })

  let head: ChangeCursor | undefined
  let lengths: Map<string, number> | undefined
  it('takes appends to a session, a child and the long log, and a new child', async () => {
    const { store, model } = ready()
    lengths = new Map([...model].map(([id, events]) => [id, events.length]))
    head = await feedHead(store)
    await expectNewWrites(store, manifest, model)
    await expectChainsFromLog(store, model)
  })

  it('sends, after a feed cursor taken before those writes, exactly them (a pull costs what changed)', async () => {
    const { store, model } = ready()
    expect(head, 'the step before failed').toBeDefined()
    expectSentSince(await feedAfter(store, head!), model, (id) => lengths!.get(id) ?? 0, true)
  })

  it("sends, after 0.1's cursor of a replication that had pulled everything, every write since (none skipped)", async () => {
    const { store, model } = ready()
    expectSentSince(await feedAfter(store, manifest.feedHead), model, (id) => manifest.sessions[id]?.length ?? 0, false)
  })

  it('reopened: every event, verify clean, the old points as 0.1 read them, the layout migrated', async () => {
    const { store: before, model } = ready()
    store = undefined
    await before.close()
    store = await open()
    await expectWholeAfterWrites(store, manifest, model)
    await expectChainsFromLog(store, model)
    await layout?.after()
  })
}
