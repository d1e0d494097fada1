// The engine: live sessions, the append pipeline (validate, durable append, fold, change feed),
// the checkpoint policy, and cold reads. It runs in a worker or in the caller's thread alike;
// storage is whatever adapter it is given.
import type { StorageAdapter } from '../adapters/types'
import type { SubagentListEntry } from '../src/children'
import { SessionfoldError, where } from '../src/errors'
import type { Json, SessionEvent, SessionHeader, SessionId } from '../src/model'
import { ProjectionRegistry, type ProjectionDefinition, type ProjectionFault, type ProjectionSnapshot } from '../src/projection'
import { BUILTIN_PROJECTIONS } from '../src/units'
import type { CatalogEntry, CatalogState } from '../src/units/catalog'
import { CATALOG, DESCRIPTOR, TURN_END, labelSchema } from '../src/units/payloads'
import { encodeEvent } from '../src/validate'
import { DEFAULT_MAX_EVENT_BYTES, assertSessionId, describe, encodeEventBody, encodeEventInput, eventFromBody, isPlainObject, type EncodedEvent } from '../src/validate'
import type { VerifyDamage, VerifyStep, VerifyTotals } from '../src/protocol'
import { listChildren } from './children'
import { applyChanges, changesSince } from './sync'
import type { ApplyResult, Changes } from '../src/changes'
import { createLocalLocks, type WriterLocks } from './locks'
import { checkpointRowOf, foldEvent, initSlots, restoreSlots, snapshotOf, viewOf, type UnitSlot } from './units'

export interface EngineOptions {
  storage: StorageAdapter
  /** The app's units, registered after the built-in ones. */
  projections?: readonly ProjectionDefinition[]
  /** Checkpoint a live session after this many events (default 256) or this long after an unsaved event (default 2000 ms). */
  checkpoint?: { everyEvents?: number; everyMs?: number }
  /** Largest encoded event (default 1 MiB). */
  maxEventBytes?: number
  /** Who holds sessions open for writing (default: this engine only). */
  locks?: WriterLocks
  /** Told of failures that must not fail a call, such as a checkpoint that could not be written. */
  onError?: (err: SessionfoldError) => void
  /** Told after each durable append here, so other engines on the same store can follow it. */
  onGrow?: (sessionId: SessionId, length: number) => void
  /**
   * Starts noticing appends that other engines make to a session followed here, where they
   * are not announced (processes sharing a folder); returns its stop. Growth found calls follow().
   */
  watchSession?: (sessionId: SessionId) => () => void
  now?: () => number
}

/** Sessions listed per storage call while verifying. */
const VERIFY_PAGE = 256

const isCorrupt = (err: unknown) => err instanceof SessionfoldError && err.code === 'CORRUPT_LOG'

/** JSON with sorted keys, to compare values built in different orders. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : v))
}

export interface AppendResult {
  firstSeq: number
  lastSeq: number
}

/** What changed after a fold: the new `asOfSeq`, the views that differ from the last push, and the faults. */
export interface ProjectionChange {
  seq: number
  values: Record<string, Json | null>
  faults: Record<string, ProjectionFault>
}

export type ChangeListener = (change: ProjectionChange) => void

/** Checkpoints may take at most 1/CHECKPOINT_BUDGET of a writer's time (see afterWrite). */
const CHECKPOINT_BUDGET = 10

/** In-flight appends of one session may hold this many encoded bytes before new ones wait. */
const WRITE_BUFFER_BYTES = 16 * 1024 * 1024

interface Live {
  header: SessionHeader
  slots: UnitSlot[]
  /** Last seq folded. */
  asOfSeq: number
  /** Durable length: the seq after the last durable, folded event. */
  durable: number
  /** Length including appends in flight: the seq the next append gets. */
  nextSeq: number
  writer?: { release: () => Promise<void> }
  observers: number
  /** Folds run in seq order on this chain. */
  chain: Promise<void>
  inflight: number
  inflightBytes: number
  /** The first failure among appends in flight: the ones behind it report it too. */
  failed?: unknown
  sinceCheckpoint: number
  /** performance.now() when the last checkpoint was built, and what building it cost (ms). */
  lastCheckpointAt: number
  lastCheckpointCost: number
  timer?: ReturnType<typeof setTimeout>
  checkpointing?: Promise<void>
  checkpointAgain: boolean
  watchers: Set<ChangeListener>
  /** Per key, the value last pushed to watchers and its JSON. */
  pushed: Map<string, { value: Json | null; json: string }>
  /** Stops watching storage for other engines' appends (while followed here without a writer). */
  unwatch?: () => void
}

export interface ColdRead {
  header: SessionHeader
  length: number
  slots: UnitSlot[]
  snapshot: ProjectionSnapshot
}

const closedError = () => new SessionfoldError('CLOSED', 'the engine is closed')

export class Engine {
  readonly storage: StorageAdapter
  readonly registry: ProjectionRegistry
  readonly locks: WriterLocks
  private readonly defs: readonly ProjectionDefinition[]
  private readonly everyEvents: number
  private readonly everyMs: number
  private readonly maxEventBytes: number
  private readonly now: () => number
  private readonly onError: (err: SessionfoldError) => void
  private readonly onGrow?: (sessionId: SessionId, length: number) => void
  private readonly watchSession?: (sessionId: SessionId) => () => void
  private readonly live = new Map<SessionId, Live>()
  private readonly loading = new Map<SessionId, Promise<Live>>()
  private isClosed = false

  constructor(options: EngineOptions) {
    this.storage = options.storage
    this.registry = new ProjectionRegistry([...BUILTIN_PROJECTIONS, ...(options.projections ?? [])])
    this.defs = this.registry.list()
    this.locks = options.locks ?? createLocalLocks()
    this.everyEvents = positive(options.checkpoint?.everyEvents ?? 256, 'checkpoint.everyEvents')
    this.everyMs = positive(options.checkpoint?.everyMs ?? 2000, 'checkpoint.everyMs')
    this.maxEventBytes = positive(options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES, 'maxEventBytes')
    this.now = options.now ?? Date.now
    this.onError = options.onError ?? ((err) => console.warn(`sessionfold: ${err.message}`))
    this.onGrow = options.onGrow
    this.watchSession = options.watchSession
  }

  // ---- sessions -----------------------------------------------------------------------

  /** Creates a root session and opens it for writing. */
  async createSession(options: { id?: string; cwd?: string } = {}): Promise<SessionHeader> {
    this.open()
    if (!isPlainObject(options)) throw new SessionfoldError('INVALID_ARGUMENT', `createSession options must be an object, got ${describe(options)}`)
    const id = options.id === undefined ? newSessionId() : options.id // null is no id: INVALID_ARGUMENT
    assertSessionId(id)
    if (options.cwd !== undefined && (typeof options.cwd !== 'string' || options.cwd.length > 4096)) {
      throw new SessionfoldError('INVALID_ARGUMENT', `cwd of ${where(id)} must be a string of at most 4096 characters`, { sessionId: id })
    }
    const header: SessionHeader = { version: 1, id, createdAt: this.now(), seedLength: 0, delegationDepth: 0, origin: 'root' }
    if (options.cwd !== undefined) header.cwd = options.cwd
    await this.createLive(header, [])
    return header
  }

  /**
   * Stores a new session (with a fork's seed), opens it for writing and writes its first
   * checkpoint. The caller has validated the header.
   */
  private async createLive(header: SessionHeader, seed: readonly EncodedEvent[]): Promise<Live> {
    this.open()
    const release = await this.locks.acquire(header.id)
    try {
      await this.storage.createSession(header, seed)
    } catch (err) {
      await release()
      throw err
    }
    const slots = initSlots(this.defs, header)
    for (const e of seed) foldEvent(slots, e.event)
    const live = newLive(header, slots, seed.length)
    live.writer = { release }
    this.live.set(header.id, live)
    await this.checkpointNow(live)
    return live
  }

  /** Opens a session for writing: SESSION_LOCKED if some client already has it so. */
  async openSession(id: SessionId): Promise<{ header: SessionHeader; length: number }> {
    this.open()
    assertSessionId(id)
    const release = await this.locks.acquire(id)
    try {
      const live = await this.attach(id)
      // If we were only following it, another writer may have appended since: catch up first.
      await this.follow(id)
      live.writer = { release }
      this.syncWatch(id, live)
      return { header: live.header, length: live.durable }
    } catch (err) {
      await release()
      throw err
    }
  }

  /** Keeps a session's projections live here without writing to it. */
  async observe(id: SessionId): Promise<{ header: SessionHeader; length: number }> {
    this.open()
    assertSessionId(id)
    const live = await this.attach(id)
    live.observers++
    this.syncWatch(id, live)
    return { header: live.header, length: live.durable }
  }

  /** Ends a writer (waiting for its appends and writing the close checkpoint) or an observer. */
  async release(id: SessionId, role: 'writer' | 'observer'): Promise<void> {
    const live = this.live.get(id)
    if (!live) return
    if (role === 'writer' && live.writer) {
      const writer = live.writer
      await this.settle(live)
      await this.checkpointNow(live)
      while (live.checkpointing) await live.checkpointing
      live.writer = undefined
      await writer.release()
    } else if (role === 'observer' && live.observers > 0) {
      live.observers--
    }
    if (!live.writer && live.observers === 0 && this.live.get(id) === live) {
      this.live.delete(id)
      live.watchers.clear()
    }
    this.syncWatch(id, live)
  }

  /** The tree under a session from parent-owned catalogs (see worker/children.ts). */
  listChildren(id: SessionId, options?: unknown): Promise<SubagentListEntry[]> {
    this.open()
    return listChildren(this, id, options)
  }

  /** Whether `id` is open for writing by some client of this store. */
  isRunning(id: SessionId): Promise<boolean> {
    return this.locks.isHeld(id)
  }

  /** Deletes a session that nobody holds open for writing. */
  async deleteSession(id: SessionId): Promise<void> {
    this.open()
    assertSessionId(id)
    const release = await this.locks.acquire(id) // SESSION_LOCKED while a writer has it
    try {
      const live = this.live.get(id)
      if (live) {
        this.live.delete(id)
        live.watchers.clear()
        this.syncWatch(id, live)
      }
      await this.storage.deleteSession(id)
    } finally {
      await release()
    }
  }

  private async attach(id: SessionId): Promise<Live> {
    const existing = this.live.get(id)
    if (existing) return existing
    let p = this.loading.get(id)
    if (!p) {
      p = this.coldRead(id).then(({ header, length, slots }) => newLive(header, slots, length))
      const done = () => this.loading.delete(id)
      p.then(done, done)
      this.loading.set(id, p)
    }
    const loaded = await p
    const raced = this.live.get(id)
    if (raced) return raced
    this.live.set(id, loaded)
    return loaded
  }

  // ---- subagents and forks ------------------------------------------------------------

  /**
   * Creates a subagent of `parentId` (open for writing here), appends its descriptor and
   * initial events, and only then the parent's catalog fact. If anything fails before the
   * fact is stored, the child is deleted: a fact never names a child that is not there.
   */
  async spawn(parentId: SessionId, options: unknown, bodies?: readonly string[]): Promise<SessionHeader> {
    this.open()
    assertSessionId(parentId)
    const parent = this.writable(parentId)
    if (!isPlainObject(options)) throw new SessionfoldError('INVALID_ARGUMENT', `spawn options for ${where(parentId)} must be an object, got ${describe(options)}`, { sessionId: parentId })
    const { mode, label, events = [], id = newSessionId() } = options as { mode?: unknown; label?: unknown; events?: unknown; id?: unknown }
    for (const key of Object.keys(options)) {
      if (!['mode', 'label', 'events', 'id'].includes(key)) throw new SessionfoldError('INVALID_ARGUMENT', `spawn options for ${where(parentId)} have an unknown field ${describe(key)}`, { sessionId: parentId })
    }
    if (mode !== 'one-shot' && mode !== 'continuable') {
      throw new SessionfoldError('INVALID_ARGUMENT', `spawn mode for ${where(parentId)} must be 'one-shot' or 'continuable', got ${describe(mode)}`, { sessionId: parentId })
    }
    if (label !== undefined && !labelSchema.safeParse(label).success) {
      throw new SessionfoldError('INVALID_ARGUMENT', `spawn label for ${where(parentId)} must be a string of 1-256 characters, got ${describe(label)}`, { sessionId: parentId })
    }
    if (mode === 'continuable' && label === undefined) {
      throw new SessionfoldError('INVALID_ARGUMENT', `a continuable spawn of ${where(parentId)} needs a label`, { sessionId: parentId })
    }
    if (!Array.isArray(events)) throw new SessionfoldError('INVALID_ARGUMENT', `spawn events for ${where(parentId)} must be an array`, { sessionId: parentId })
    assertSessionId(id, 'child id')
    const header: SessionHeader = {
      version: 1, id, createdAt: this.now(), parentSession: parentId, seedLength: 0,
      delegationDepth: parent.header.delegationDepth + 1, origin: 'subagent',
    }
    if (parent.header.cwd !== undefined) header.cwd = parent.header.cwd
    // Everything is validated and encoded before anything is written.
    const descriptor = label === undefined ? { v: 2, mode } : { v: 2, mode, label }
    const encode = (e: unknown) => encodeEventBody(e, id, { maxBytes: this.maxEventBytes, now: header.createdAt })
    if (bodies !== undefined && (events as unknown[]).length > 0) {
      throw new SessionfoldError('INVALID_ARGUMENT', `spawn of ${where(parentId)} takes events or encoded bodies, not both`, { sessionId: parentId })
    }
    const childEvents = [encode({ type: DESCRIPTOR, data: descriptor, time: header.createdAt }), ...(bodies ?? events.map(encode))]
      .map((b, i) => eventFromBody(b, i, id, this.maxEventBytes))
    const factData = label === undefined
      ? { v: 2, childId: id, childCreatedAt: header.createdAt, mode }
      : { v: 2, childId: id, childCreatedAt: header.createdAt, mode, label }
    encodeEventInput({ type: CATALOG, data: factData }, parent.nextSeq, parentId, { maxBytes: this.maxEventBytes })

    const child = await this.createLive(header, [])
    try {
      await this.write(child, childEvents, childEvents.reduce((n, e) => n + e.json.length, 0))
      await this.append(parentId, { type: CATALOG, data: factData })
    } catch (err) {
      await this.discard(id)
      throw err
    }
    return header
  }

  /** Records in `parentId`'s catalog an execution outside this store (no local session). */
  async recordExternal(parentId: SessionId, options: unknown): Promise<AppendResult> {
    this.open()
    assertSessionId(parentId)
    this.writable(parentId)
    if (!isPlainObject(options)) throw new SessionfoldError('INVALID_ARGUMENT', `recordExternal options for ${where(parentId)} must be an object`, { sessionId: parentId })
    const { childId, label } = options as { childId?: unknown; label?: unknown }
    assertSessionId(childId, `recordExternal on ${where(parentId)}: child id`)
    if (label !== undefined && !labelSchema.safeParse(label).success) {
      throw new SessionfoldError('INVALID_ARGUMENT', `external label for ${where(parentId)} must be a string of 1-256 characters, got ${describe(label)}`, { sessionId: parentId })
    }
    const data = label === undefined
      ? { v: 2, childId, childCreatedAt: this.now(), mode: 'external' }
      : { v: 2, childId, childCreatedAt: this.now(), mode: 'external', label }
    return this.append(parentId, { type: CATALOG, data })
  }

  /**
   * A new session whose log starts with copies of `sourceId`'s events `[0, at)` (default: all
   * durable events); its units start with inheritedEventCount = at, so it inherits no
   * children and no identity. Open for writing here.
   */
  async fork(sourceId: SessionId, options: unknown = {}): Promise<SessionHeader> {
    this.open()
    assertSessionId(sourceId)
    if (!isPlainObject(options)) throw new SessionfoldError('INVALID_ARGUMENT', `fork options for ${where(sourceId)} must be an object`, { sessionId: sourceId })
    const { at: atOption, id = newSessionId() } = options as { at?: unknown; id?: unknown }
    assertSessionId(id, 'fork id')
    const live = this.live.get(sourceId)
    if (live) await this.settle(live)
    const info = live ? { header: live.header, length: live.durable } : await this.storage.getSession(sourceId)
    if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `${where(sourceId)} does not exist`, { sessionId: sourceId })
    const at = atOption ?? info.length
    if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0 || at > info.length) {
      throw new SessionfoldError('INVALID_ARGUMENT', `fork of ${where(sourceId)}: at must be an integer in 0..${info.length}, got ${describe(at)}`, { sessionId: sourceId })
    }
    const seed: EncodedEvent[] = []
    for await (const page of this.storage.readEvents(sourceId, { from: 0, to: at })) {
      for (const e of page) seed.push(encodeEvent(e, id, Number.MAX_SAFE_INTEGER))
    }
    const header: SessionHeader = {
      version: 1, id, createdAt: this.now(), seedLength: at,
      delegationDepth: info.header.delegationDepth, origin: 'fork', forkedFrom: sourceId,
    }
    if (info.header.cwd !== undefined) header.cwd = info.header.cwd
    await this.createLive(header, seed)
    return header
  }

  /** Deletes a session this engine just created and still holds (spawn's undo). */
  private async discard(id: SessionId): Promise<void> {
    const live = this.live.get(id)
    if (live) {
      await this.settle(live)
      this.live.delete(id)
      if (live.timer) clearTimeout(live.timer)
      while (live.checkpointing) await live.checkpointing
    }
    try {
      await this.storage.deleteSession(id)
    } catch (err) {
      this.onError(err instanceof SessionfoldError ? err : new SessionfoldError('STORAGE_UNAVAILABLE', `could not delete the unpublished child ${where(id)}`, { sessionId: id, cause: err }))
    } finally {
      await live?.writer?.release()
    }
  }

  /**
   * A session's catalog and header, from its live state when it is open here (no reads),
   * else from a cold read. `entries` is null when the catalog was rejected.
   */
  async catalogOf(id: SessionId, signal?: AbortSignal): Promise<{ header: SessionHeader; entries: CatalogEntry[] | null; live: boolean }> {
    // Followed here but written elsewhere (another tab or process): catch up from storage
    // first, rather than answer from whatever notices have arrived so far.
    if (this.live.get(id) && !this.live.get(id)!.writer) await this.follow(id)
    const live = this.live.get(id)
    const { header, slots } = live ?? (await this.coldRead(id, { signal }))
    const slot = slots.find((s) => s.def.key === 'subagentCatalog')
    return { header, entries: slot && !slot.fault ? (slot.state as CatalogState).entries.toArray() : null, live: !!live }
  }

  // ---- appending ----------------------------------------------------------------------

  /**
   * Appends events to a session open for writing here. Resolves once they are durable and
   * folded. `expectedSeq`: the seq the first event must receive, else SEQ_CONFLICT.
   */
  async append(id: SessionId, input: unknown, options?: { expectedSeq?: number }): Promise<AppendResult> {
    this.open()
    assertSessionId(id)
    this.writable(id)
    const inputs = Array.isArray(input) ? input : [input]
    const now = this.now()
    return this.appendBodies(id, inputs.map((e) => encodeEventBody(e, id, { maxBytes: this.maxEventBytes, now })), options)
  }

  /**
   * Appends events already encoded as bodies (`encodeEventBody`, as clients send them):
   * checked again, numbered, made durable and folded. All-or-nothing per call.
   */
  async appendBodies(id: SessionId, bodies: unknown, options?: unknown): Promise<AppendResult> {
    this.open()
    assertSessionId(id)
    const live = this.writable(id)
    if (!Array.isArray(bodies) || bodies.length === 0) throw new SessionfoldError('INVALID_ARGUMENT', `append to ${where(id)} needs at least one event`, { sessionId: id })
    if (options !== undefined && !isPlainObject(options)) throw new SessionfoldError('INVALID_ARGUMENT', `append options for ${where(id)} must be an object, got ${describe(options)}`, { sessionId: id })
    const expected = (options as { expectedSeq?: unknown } | undefined)?.expectedSeq
    if (expected !== undefined && (typeof expected !== 'number' || !Number.isSafeInteger(expected) || expected < 0)) {
      throw new SessionfoldError('INVALID_ARGUMENT', `expectedSeq for ${where(id)} must be an integer >= 0, got ${describe(expected)}`, { sessionId: id })
    }
    while (live.inflightBytes > WRITE_BUFFER_BYTES) await live.chain // bounded write buffer
    if (expected !== undefined && expected !== live.nextSeq) {
      throw new SessionfoldError('SEQ_CONFLICT', `append to ${where(id)} expected seq ${expected}, but the next seq is ${live.nextSeq}`, { sessionId: id, seq: expected })
    }
    const first = live.nextSeq
    const encoded = bodies.map((b: unknown, i) => eventFromBody(b as string, first + i, id, this.maxEventBytes))
    return this.write(live, encoded, encoded.reduce((n, e) => n + e.json.length, 0))
  }

  /** Sends validated, numbered events to storage, then folds them in seq order. */
  private write(live: Live, encoded: readonly EncodedEvent[], bytes: number): Promise<AppendResult> {
    const first = encoded[0]!.event.seq
    live.nextSeq = first + encoded.length
    live.inflight++
    live.inflightBytes += bytes
    const durable = this.storage.append(live.header.id, encoded)
    durable.catch(() => {}) // observed on the chain below
    const step = live.chain.then(async () => {
      try {
        if (live.failed !== undefined) throw live.failed
        try {
          await durable
        } catch (err) {
          live.failed = err
          throw err
        }
        // e.event was parsed from the stored JSON: what a cold read sees, so live and cold agree.
        const events = encoded.map((e) => e.event)
        let turnEnded = false
        for (const e of events) {
          foldEvent(live.slots, e)
          if (e.type === TURN_END) turnEnded = true
        }
        live.durable = live.asOfSeq + 1 + events.length
        live.asOfSeq = live.durable - 1
        this.notify(live)
        this.afterWrite(live, events.length, turnEnded)
        this.onGrow?.(live.header.id, live.durable)
      } finally {
        live.inflightBytes -= bytes
        if (--live.inflight === 0) {
          // Appends numbered after a failed one failed too: number from what is durable again.
          live.nextSeq = live.durable
          live.failed = undefined
        }
      }
    })
    live.chain = step.catch(() => {})
    return step.then(() => ({ firstSeq: first, lastSeq: first + encoded.length - 1 }))
  }

  /** Waits until every append in flight has settled. */
  private async settle(live: Live): Promise<void> {
    while (live.inflight > 0) await live.chain
  }

  // ---- checkpoints --------------------------------------------------------------------

  private afterWrite(live: Live, events: number, turnEnded: boolean): void {
    live.sinceCheckpoint += events
    const due = turnEnded || live.sinceCheckpoint >= this.everyEvents
    // A row is O(state): a big one (a catalog of 10,000 children) costs milliseconds to build.
    // Keep that under a tenth of the time: a due checkpoint waits until 10x its last cost has
    // passed since the last one, so appends stay O(1) amortised whatever the state's size.
    const budgetWait = live.lastCheckpointAt + CHECKPOINT_BUDGET * live.lastCheckpointCost - performance.now()
    if (due && budgetWait <= 0) {
      void this.checkpointNow(live)
      return
    }
    // Due but over budget: as soon as the budget allows. Not due: after the quiet period.
    const delay = due ? budgetWait : Math.max(this.everyMs, budgetWait)
    if (live.timer && !due) return
    if (live.timer) clearTimeout(live.timer)
    live.timer = setTimeout(() => {
      live.timer = undefined
      if (live.sinceCheckpoint > 0 && live.writer) void this.checkpointNow(live)
    }, delay)
    ;(live.timer as { unref?: () => void }).unref?.()
  }

  /**
   * Writes the row of the current states. Built from folded states only, so it is never ahead
   * of the durable log; one write at a time per session, the latest states winning.
   */
  private checkpointNow(live: Live): Promise<void> {
    if (live.timer) {
      clearTimeout(live.timer)
      live.timer = undefined
    }
    if (live.checkpointing) {
      live.checkpointAgain = true
      return live.checkpointing
    }
    const started = performance.now()
    const { row, skipped } = checkpointRowOf(live.header, live.slots)
    for (const key of skipped) {
      this.onError(new SessionfoldError('INVALID_ARGUMENT', `state of projection "${key}" for ${where(live.header.id)} is not JSON; it will refold`, { sessionId: live.header.id }))
    }
    live.sinceCheckpoint = 0
    live.checkpointing = this.storage
      .putCheckpoint(live.header.id, row)
      .catch((err: unknown) => {
        this.onError(new SessionfoldError(
          err instanceof SessionfoldError ? err.code : 'STORAGE_UNAVAILABLE',
          `checkpoint of ${where(live.header.id, row.witness ? live.asOfSeq : undefined)} was not written: ${(err as Error)?.message ?? err}`,
          { sessionId: live.header.id, cause: err },
        ))
      })
      .finally(() => {
        live.checkpointing = undefined
        if (live.checkpointAgain) {
          live.checkpointAgain = false
          void this.checkpointNow(live)
        }
      })
    // Building the row and the adapter's synchronous part (its stringify) are the cost to bound.
    live.lastCheckpointAt = performance.now()
    live.lastCheckpointCost = live.lastCheckpointAt - started
    return live.checkpointing
  }

  /**
   * Another engine (another tab, thread or process) appended to a session this engine follows
   * without writing it: fold what is new from storage and push it to watchers. Appends made
   * while it reads are picked up by the next call; calls run one at a time per session.
   */
  follow(id: SessionId): Promise<void> {
    const live = this.live.get(id)
    if (!live || live.writer || this.isClosed) return Promise.resolve()
    const step = live.chain.then(async () => {
      if (live.writer || this.live.get(id) !== live) return
      const info = await this.storage.getSession(id)
      if (!info || info.length <= live.durable) return
      for await (const page of this.storage.readEvents(id, { from: live.durable, to: info.length })) {
        for (const e of page) foldEvent(live.slots, e)
        live.durable += page.length
        live.asOfSeq = live.durable - 1
        live.nextSeq = live.durable
        this.notify(live)
      }
    })
    live.chain = step.catch((err: unknown) => {
      this.onError(err instanceof SessionfoldError ? err : new SessionfoldError('STORAGE_UNAVAILABLE', `could not follow ${where(id)}: ${(err as Error)?.message ?? err}`, { sessionId: id, cause: err }))
    })
    return live.chain
  }

  // ---- sync between stores (worker/sync.ts) ---------------------------------------------

  /** A bounded batch of this store's headers and events after `cursor`. */
  changesSince(cursor: unknown, options?: unknown): Promise<Changes> {
    this.open()
    return changesSince(this, cursor, options)
  }

  /** Imports a batch from another store, headers and seqs unchanged; conflicts are reported, not applied. */
  applyChanges(batch: unknown): Promise<ApplyResult> {
    this.open()
    return applyChanges(this, batch, this.maxEventBytes)
  }

  /**
   * Events were imported into `id` (now `length` long) by applyChanges: handles here follow
   * them like another writer's, and other engines on the store are told.
   */
  async imported(id: SessionId, length: number): Promise<void> {
    this.onGrow?.(id, length)
    await this.follow(id)
  }

  // ---- reading ------------------------------------------------------------------------

  /**
   * Folds a session from storage without keeping it: the checkpoint row where it can be
   * trusted, then only the events after the lowest kept watermark. Never writes back.
   */
  async coldRead(id: SessionId, options: { signal?: AbortSignal } = {}): Promise<ColdRead> {
    this.open()
    assertSessionId(id)
    const info = await this.storage.getSession(id)
    if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `${where(id)} does not exist`, { sessionId: id })
    const row = await this.storage.getCheckpoint(id).catch(() => undefined) // any doubt: ignore it
    const { slots, from } = restoreSlots(this.defs, info.header, row, info.length)
    if (from < info.length) {
      for await (const page of this.storage.readEvents(id, { from, to: info.length, signal: options.signal })) {
        for (const e of page) foldEvent(slots, e)
      }
    }
    return { header: info.header, length: info.length, slots, snapshot: snapshotOf(slots, info.length - 1) }
  }

  // ---- verify -------------------------------------------------------------------------

  /** How much `verify` will read: stored sessions and their events (a moving target if written meanwhile). */
  async verifyPlan(): Promise<VerifyTotals> {
    this.open()
    const totals: VerifyTotals = { sessions: 0, events: 0 }
    for (let after: SessionId | undefined; ;) {
      const ids = await this.storage.listIds({ after, limit: VERIFY_PAGE })
      const infos = await Promise.all(ids.map((id) => this.storage.getSession(id).catch(() => undefined)))
      totals.sessions += ids.length
      for (const info of infos) totals.events += info?.length ?? 0
      if (ids.length < VERIFY_PAGE) return totals
      after = ids[ids.length - 1]
    }
  }

  /**
   * Verifies sessions in id order after `after`, until about `budget` events are read, and
   * says where to go on (`next: null` at the end). Changes nothing: reads go straight to
   * storage, damaged checkpoints are reported, not replaced.
   */
  async verifyStep(after: SessionId | undefined, budget: number, signal?: AbortSignal): Promise<VerifyStep> {
    this.open()
    const step: VerifyStep = { sessions: 0, events: 0, damaged: [], next: null }
    for (;;) {
      const ids = await this.storage.listIds({ after, limit: VERIFY_PAGE })
      for (const id of ids) {
        if (signal?.aborted) throw new SessionfoldError('CANCELLED', 'verify was cancelled')
        const checked = await this.verifySession(id, signal)
        if (checked === undefined) continue // deleted meanwhile
        step.sessions++
        step.events += checked.events
        step.damaged.push(...checked.damaged)
        if (step.events >= budget) return { ...step, next: id }
      }
      if (ids.length < VERIFY_PAGE) return step
      after = ids[ids.length - 1]
    }
  }

  /**
   * One session: its header, every event (whole records, seqs 0..length-1 in order), and its
   * checkpoint row (usable, and giving the same values as a full refold). Undefined when the
   * session is gone.
   */
  private async verifySession(id: SessionId, signal?: AbortSignal): Promise<{ events: number; damaged: VerifyDamage[] } | undefined> {
    const damaged: VerifyDamage[] = []
    let info
    try {
      info = await this.storage.getSession(id)
    } catch (err) {
      if (!isCorrupt(err)) throw err
      return { events: 0, damaged: [{ id, code: 'CORRUPT_LOG', detail: (err as Error).message }] }
    }
    if (!info) return undefined
    const { header, length } = info
    let row: unknown
    try {
      row = await this.storage.getCheckpoint(id)
    } catch (err) {
      if (!isCorrupt(err)) throw err
      damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: (err as Error).message })
    }
    const full = initSlots(this.defs, header)
    const cold = restoreSlots(this.defs, header, row, length)
    if (cold.problem) damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `checkpoint of ${where(id)} is not used: ${cold.problem}` })
    let next = 0
    try {
      for await (const page of this.storage.readEvents(id, { from: 0, to: length, signal })) {
        for (const e of page) {
          if (e.seq !== next) throw new SessionfoldError('CORRUPT_LOG', `${where(id)}: expected seq ${next}, read seq ${e.seq}`, { sessionId: id, seq: next })
          foldEvent(full, e)
          // Only a row that was used can disagree with the refold; foldEvent skips what it holds.
          if (cold.kept > 0) foldEvent(cold.slots, e)
          next++
        }
      }
      if (next !== length) throw new SessionfoldError('CORRUPT_LOG', `${where(id)} holds ${next} readable events of ${length}`, { sessionId: id, seq: next })
    } catch (err) {
      if (!isCorrupt(err)) throw err
      damaged.push({ id, code: 'CORRUPT_LOG', detail: (err as Error).message })
      return { events: next, damaged }
    }
    if (cold.kept > 0) {
      const a = snapshotOf(full, length - 1)
      const b = snapshotOf(cold.slots, length - 1)
      for (const key of new Set([...Object.keys(a.values), ...Object.keys(b.values)])) {
        if (canonical(a.values[key]) !== canonical(b.values[key]) || a.faults[key] !== b.faults[key]) {
          damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `checkpoint of ${where(id)} gives "${key}" a value that a full refold does not` })
        }
      }
    }
    return { events: next, damaged }
  }

  /** The session's values: live if it is open here, else a cold read. */
  async read(id: SessionId, options: { signal?: AbortSignal } = {}): Promise<ProjectionSnapshot> {
    this.open()
    assertSessionId(id)
    const live = this.live.get(id)
    return live ? snapshotOf(live.slots, live.asOfSeq) : (await this.coldRead(id, options)).snapshot
  }

  /** The live values of a session open here. */
  snapshot(id: SessionId): ProjectionSnapshot {
    return snapshotOf(this.liveOf(id).slots, this.liveOf(id).asOfSeq)
  }

  /** The last seq folded into a session open here. */
  liveSeq(id: SessionId): number {
    return this.liveOf(id).asOfSeq
  }

  /** The header of a session open here. */
  liveHeader(id: SessionId): SessionHeader {
    return this.liveOf(id).header
  }

  /** The live state of one unit (for hosts such as listChildren), or undefined when faulted. */
  liveState(id: SessionId, key: string): { state: unknown; header: SessionHeader } | undefined {
    const live = this.live.get(id)
    const slot = live?.slots.find((s) => s.def.key === key)
    return live && slot && !slot.fault ? { state: slot.state, header: live.header } : undefined
  }

  /** Pushes changes of a live session's views to `listener` until the returned function is called. */
  watch(id: SessionId, listener: ChangeListener): () => void {
    const live = this.liveOf(id)
    if (live.watchers.size === 0) {
      // Start from the current values: later pushes carry only what differs from them.
      live.pushed.clear()
      for (const slot of live.slots) {
        if (!slot.def.view) continue
        const value = viewOf(slot)
        live.pushed.set(slot.def.key, { value, json: JSON.stringify(value) })
      }
    }
    live.watchers.add(listener)
    return () => {
      live.watchers.delete(listener)
    }
  }

  private notify(live: Live): void {
    if (live.watchers.size === 0) return // views are computed only while someone listens
    const values: Record<string, Json | null> = {}
    const faults: Record<string, ProjectionFault> = {}
    for (const slot of live.slots) {
      if (slot.fault) faults[slot.def.key] = slot.fault
      if (!slot.def.view) continue
      const value = viewOf(slot) // cached while the state reference is unchanged
      const last = live.pushed.get(slot.def.key)
      if (last?.value === value) continue
      const json = JSON.stringify(value)
      if (last?.json === json) continue
      live.pushed.set(slot.def.key, { value, json })
      values[slot.def.key] = value
    }
    const change: ProjectionChange = { seq: live.asOfSeq, values, faults }
    for (const listener of live.watchers) {
      try {
        listener(change)
      } catch (err) {
        this.onError(new SessionfoldError('INVALID_ARGUMENT', `a projection listener of ${where(live.header.id)} threw: ${(err as Error)?.message ?? err}`, { sessionId: live.header.id, cause: err }))
      }
    }
  }

  // ---- lifecycle ----------------------------------------------------------------------

  /** Waits for every append, writes close checkpoints, releases locks, closes storage. */
  async close(): Promise<void> {
    if (this.isClosed) return
    this.isClosed = true
    await Promise.allSettled([...this.loading.values()])
    for (const [id, live] of [...this.live]) {
      if (live.writer) await this.release(id, 'writer').catch((err) => this.onError(err as SessionfoldError))
      this.live.delete(id)
      this.syncWatch(id, live)
    }
    await this.storage.close()
  }

  /** Storage is watched for other engines' appends exactly while a session is followed here without a writer. */
  private syncWatch(id: SessionId, live: Live): void {
    const want = this.watchSession !== undefined && !this.isClosed && !live.writer && this.live.get(id) === live
    if (want && !live.unwatch) {
      live.unwatch = this.watchSession!(id)
    } else if (!want && live.unwatch) {
      live.unwatch()
      live.unwatch = undefined
    }
  }

    private writable(id: SessionId): Live {
    const live = this.live.get(id)
    if (!live?.writer) throw new SessionfoldError('CLOSED', `${where(id)} is not open for writing`, { sessionId: id })
    return live
  }

  private liveOf(id: SessionId): Live {
    const live = this.live.get(id)
    if (!live) throw new SessionfoldError('CLOSED', `${where(id)} is not open in this engine`, { sessionId: id })
    return live
  }

  private open(): void {
    if (this.isClosed) throw closedError()
  }
}

function newLive(header: SessionHeader, slots: UnitSlot[], length: number): Live {
  return {
    header, slots, asOfSeq: length - 1, durable: length, nextSeq: length, observers: 0,
    chain: Promise.resolve(), inflight: 0, inflightBytes: 0, sinceCheckpoint: 0, lastCheckpointAt: -Infinity, lastCheckpointCost: 0, checkpointAgain: false,
    watchers: new Set(), pushed: new Map(),
  }
}

function positive(n: number, name: string): number {
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) {
    throw new SessionfoldError('INVALID_ARGUMENT', `${name} must be a number > 0, got ${describe(n)}`)
  }
  return n
}

/** A fresh id: 32 hex digits from crypto.randomUUID (browsers and Node alike). */
export function newSessionId(): SessionId {
  return globalThis.crypto.randomUUID().replace(/-/g, '')
}
