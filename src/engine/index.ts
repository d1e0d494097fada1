// The engine: one facade over its parts. It runs in a worker or in the caller's thread alike;
// storage is whatever adapter it is given. Each part lives in its own file and takes only what
// it needs: the read path (reader), live sessions, the append pipeline, the checkpoint policy,
// the change feed, follow, lineage (spawn, external, fork), list-children, verify, and
// store-to-store changes (changes-since, apply-changes).
import type { NewSession, StorageAdapter } from '../storage/types'
import type { ApplyResult, Changes, ConflictFork } from '../core/changes'
import type { SubagentListEntry } from '../core/children'
import { SessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import { ProjectionRegistry, type ProjectionDefinition, type ProjectionSnapshot } from '../core/projection'
import type { AppendResult, VerifyStep, VerifyTotals } from '../core/protocol'
import { BUILTIN_PROJECTIONS } from '../core/units'
import type { CatalogEntry } from '../core/units/catalog'
import { DEFAULT_MAX_EVENT_BYTES } from '../core/limits'
import { assertSessionId, isPlainObject, type EncodedEvent } from '../core/validate'
import { createLocalLocks, type WriterLocks } from '../storage/locks'
import { snapshotOf } from './units'
import { AppendPipeline } from './append-pipeline'
import { EventRegistry } from './event-registry'
import { applyChanges, type ImportTarget } from './apply-changes'
import { forkConflict } from './conflict-fork'
import { notify, watch, type ChangeListener } from './watchers'
import { changesSince } from './changes-since'
import { CheckpointPolicy } from './checkpoints'
import { ChainKeeper } from './chains'
import { follow, type FollowTail } from './follow'
import { HistoryKeeper } from './history'
import { atOption, catalogsAt, readAt, type AtReader } from './read-at'
import { createRoot, fork, recordExternal, spawn, type LineageHost } from './lineage'
import { catalogEntries, listChildren } from './list-children'
import { deleteSessions, type DeleteOptions } from './delete-tree'
import { LiveSessions, type LiveSession } from './live-sessions'
import { CloseWatch, endAll } from './close-watch'
import { StoreReader, type ColdRead } from './reader'
import { verifyPlan, verifyStep } from './verify'
import { sessionIndexOf, sessionsPage, type SessionIndex } from './session-index'
import { hintOfNew } from './session-rows'
import { Tombstones } from './tombstones'
import { noStreams, type StreamsRunner } from './streams-lazy'
import { recordsOf } from '../storage/records'
import type { SessionsPage } from '../core/session-list'
export type { ChangeListener, ProjectionChange } from './watchers'
export type { ColdRead } from './reader'
export { newSessionId } from './lineage'
import { positive, type EngineOptions } from './options'
export type { EngineOptions }

export class Engine {
  /** Told after each local write lands (appends, imports, creations): replications push at once. */
  readonly written = new Set<() => void>()
  /** Every read of the store goes through here (the host, sync and the CLI included). */
  readonly reader: StoreReader
  readonly registry: ProjectionRegistry
  readonly events: EventRegistry // the event definitions, reserved and the app's (event-registry.ts)
  readonly locks: WriterLocks
  /** The same locks, each taken after letting go of a stream writer this engine keeps for the session (a delete's, a conflict fork's). */
  readonly #lettingGo: WriterLocks
  private readonly storage: StorageAdapter
  private readonly defs: readonly ProjectionDefinition[] // the units, each folding through `events`
  private readonly maxEventBytes: number
  private readonly now: () => number
  private readonly onError: (err: SessionfoldError) => void
  private readonly onDelete: ((id: SessionId) => void) | undefined
  private readonly sessions: LiveSessions
  private readonly pipeline: AppendPipeline<LiveSession>
  private readonly checkpoints: CheckpointPolicy
  /** Keeps history rows (time travel), where the adapter stores them. */
  readonly history: HistoryKeeper | undefined
  /** Chain values: the witness of a prefix that change batches carry (chains.ts). */
  readonly chains: ChainKeeper
  /** What lineage (spawn, external, fork) and imports may do with the engine. */
  private readonly lineage: LineageHost<LiveSession>
  private readonly importTarget: ImportTarget
  /** The store-wide session index (`store.sessions()`), where the storage has a feed (session-index.ts). */
  readonly index: SessionIndex | undefined
  /** What is kept of deleted sessions, so their deletes reach every store this one syncs with (tombstones.ts). */
  readonly tombstones: Tombstones
  /** Durable Streams (streams.ts): each stream a session, its protocol state a record beside it. */
  readonly streams: StreamsRunner
  private isClosed = false
  readonly closeWatch = new CloseWatch() // a close on storage that stopped answering (close-watch.ts): a host begins it, then ends its handles

  constructor(options: EngineOptions) {
    this.storage = options.storage
    this.events = new EventRegistry(options.events)
    this.registry = new ProjectionRegistry([...BUILTIN_PROJECTIONS, ...(options.projections ?? [])].map((unit) => this.events.folding(unit)))
    this.defs = this.registry.list()
    this.locks = options.locks ?? createLocalLocks()
    this.#lettingGo = { ...this.locks, acquire: async (id) => (await this.streams.letGo([id]), this.locks.acquire(id)) }
    this.maxEventBytes = positive(options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES, 'maxEventBytes')
    this.now = options.now ?? Date.now
    this.onError = this.closeWatch.wrap(options.onError ?? ((err) => console.warn(`sessionfold: ${err.message}`)))
    this.onDelete = options.onDelete
    this.reader = new StoreReader(this.storage, this.defs)
    this.tombstones = new Tombstones(recordsOf(this.storage))
    if (this.storage.history) this.history = new HistoryKeeper(this.storage.history, this.reader, this.defs, this.onError)
    this.chains = new ChainKeeper(this.storage.kv, this.reader, this.onError)
    this.checkpoints = new CheckpointPolicy({
      alongside: (session) => void this.chains.save(session as LiveSession),
      storage: this.storage,
      everyEvents: positive(options.checkpoint?.everyEvents ?? 256, 'checkpoint.everyEvents'),
      everyMs: positive(options.checkpoint?.everyMs ?? 2000, 'checkpoint.everyMs'),
      onError: this.onError,
      ...(this.history ? { history: this.history } : {}),
    })
    const onGrow = options.onGrow
    const index = (this.index = sessionIndexOf(this.storage, { reader: this.reader, locks: this.locks, onError: this.onError, wake: options.watchFeed }))
    if (index) this.written.add(() => index.soon())
    this.pipeline = new AppendPipeline<LiveSession>({
      storage: this.storage,
      events: this.events,
      maxEventBytes: this.maxEventBytes,
      now: this.now,
      ...(this.history ? { reached: (session: LiveSession, at: number) => this.history!.reached(session, at) } : {}),
      appended: (session, encoded) => this.chains.appended(session, encoded),
      folded: (session, events, turnEnded, bytes, lastTime) => {
        index?.wroteLive(session, lastTime)
        notify(session, this.onError)
        this.checkpoints.afterWrite(session, events, turnEnded, bytes)
        onGrow?.(session.header.id, session.log.durable)
        for (const f of this.written) f()
      },
    })
    this.sessions = new LiveSessions({
      defs: this.defs,
      reader: this.reader,
      locks: this.locks,
      pipeline: this.pipeline,
      checkpoints: this.checkpoints,
      chains: this.chains,
      follow: (id) => this.follow(id),
      onError: this.onError,
      watchSession: options.watchSession,
      isClosed: () => this.isClosed,
    })
    this.lineage = {
      now: this.now,
      checked: this.events.check,
      maxEventBytes: this.maxEventBytes,
      reader: this.reader,
      writable: (id) => this.sessions.writable(id),
      settled: async (id) => {
        const live = this.sessions.get(id)
        if (!live) return this.reader.info(id)
        await this.pipeline.settle(live)
        return { header: live.header, length: live.log.durable }
      },
      create: (header, seed) => this.create(header, seed),
      appendNumbered: (session, events) => this.pipeline.appendNumbered(session, events),
      append: (id, input) => this.append(id, input),
      discard: (id) => this.sessions.discard(id),
    }
    const withWriter: ImportTarget['withWriter'] = async (id, write) => (await this.streams.letGo([id]), this.sessions.withImportWriter(id, write))
    const { reader, maxEventBytes, tombstones } = this
    const remove = async (id: SessionId) => void (await this.deleteSessions([id]))
    const createMany = this.storage.createSessions?.bind(this.storage)
    const wrote = (made: readonly NewSession[] = []) => (made.forEach((s) => this.index?.wrote(hintOfNew(s))), this.written.forEach((f) => f()))
    this.importTarget = { reader, maxEventBytes, withWriter, tombstones, remove, chainAt: (h, at) => this.chainAt(h, at), createMany, wrote }
    const host = { reader, kv: this.storage.kv, sessions: this.sessions, maxEventBytes, remove, now: this.now, open: () => this.open(), onError: this.onError }
    this.streams = (options.streams ?? noStreams)({ ...host, events: this.events, wrote })
  }

  /** Creates a root session and opens it for writing. */
  async createSession(options: { id?: string; cwd?: string } = {}): Promise<SessionHeader> {
    this.open()
    const header = await createRoot(this.lineage, options)
    for (const f of this.written) f()
    return header
  }

  /** Opens a session for writing: SESSION_LOCKED if some client already has it so. */
  async openSession(id: SessionId): Promise<{ header: SessionHeader; length: number }> {
    this.open()
    assertSessionId(id)
    await this.streams.letGo([id]) // a stream's writer held here, idle or about to be
    const live = await this.sessions.openWriter(id)
    this.index?.tell()
    return { header: live.header, length: live.log.durable }
  }

  /** Keeps a session's projections live here without writing to it. */
  async observe(id: SessionId): Promise<{ header: SessionHeader; length: number }> {
    this.open()
    assertSessionId(id)
    return this.sessions.observe(id).then((live) => ({ header: live.header, length: live.log.durable }))
  }

  /** The session as of its first `at` events (`options`: `{ at }`, checked), folded once from the nearest row (history.ts). */
  async observeAt(id: SessionId, options: unknown): Promise<{ header: SessionHeader; snapshot: ProjectionSnapshot; at: number }> {
    return this.coldReadAt(id, atOption(id, options)).then(({ header, snapshot, length }) => ({ header, snapshot, at: length }))
  }

  /** Folds a session as of its first `at` events, without keeping it (the CLI's --at). */
  async coldReadAt(id: SessionId, at: number): Promise<ColdRead> {
    const { header, slots } = await this.checked(id, () => readAt(this.atReader, id, at))
    return { header, length: at, slots, snapshot: snapshotOf(slots, at - 1), folded: 0 }
  }

  /** Ends a writer (waiting for its appends and writing the close checkpoint) or an observer. */
  async release(id: SessionId, role: 'writer' | 'observer'): Promise<void> {
    await this.sessions.release(id, role)
    if (role === 'writer') this.index?.tell()
  }

  /** Deletes sessions nobody holds open for writing (with `tree`, each with its descendants), all or nothing (delete-tree.ts). */
  async deleteSessions(ids: readonly SessionId[], options?: DeleteOptions): Promise<SessionId[]> {
    this.open()
    const { reader, index, sessions, onDelete, tombstones } = this
    const locks = this.#lettingGo // a tree's descendants' kept stream writers too, as the delete finds them
    return deleteSessions({ reader, locks, index, sessions, onDelete, tombstones, listChildren: (id, o) => this.listChildren(id, o) }, ids, options)
  }

  /** A page of the session list (`store.sessions()`): `query` checked, `count` rows after `after`. */
  sessionsPage(query: unknown, count: number, after?: string): Promise<SessionsPage> {
    this.open()
    return sessionsPage(this.index, this.storage.kind, query, count, after)
  }

  /** Appends to a session open for writing here, once durable and folded; `expectedSeq`: the first event's seq, else SEQ_CONFLICT. */
  append(id: SessionId, input: unknown, options?: { expectedSeq?: number }): Promise<AppendResult> {
    return this.checked(id, () => this.pipeline.appendInputs(this.sessions.writable(id), input, options))
  }

  /** Appends events encoded as bodies by the client (`encodeEventBody`): checked again here. */
  appendBodies(id: SessionId, bodies: unknown, options?: unknown): Promise<AppendResult> {
    return this.checked(id, () => this.pipeline.appendBodies(this.sessions.writable(id), bodies, options))
  }

  /** Creates a subagent of `parentId`, then records it in the parent's catalog (see lineage.ts). */
  spawn(parentId: SessionId, options: unknown, bodies?: readonly string[]): Promise<SessionHeader> {
    return this.checked(parentId, () => spawn(this.lineage, parentId, options, bodies))
  }

  /** Records in `parentId`'s catalog an execution outside this store (no local session). */
  recordExternal(parentId: SessionId, options: unknown): Promise<AppendResult> {
    return this.checked(parentId, () => recordExternal(this.lineage, parentId, options))
  }

  /** A new session seeded with `sourceId`'s events `[0, at)` (default: all), open for writing here. */
  fork(sourceId: SessionId, options: unknown = {}): Promise<SessionHeader> {
    return this.checked(sourceId, () => fork(this.lineage, sourceId, options))
  }

  /** Folds a session from storage without keeping it (see reader.ts). */
  coldRead(id: SessionId, options: { signal?: AbortSignal } = {}): Promise<ColdRead> {
    return this.checked(id, () => this.reader.coldRead(id, options))
  }

  /** The session's values: live if it is open here, else a cold read. */
  async read(id: SessionId, options: { signal?: AbortSignal } = {}): Promise<ProjectionSnapshot> {
    this.open()
    assertSessionId(id)
    const live = this.sessions.get(id)
    return live ? snapshotOf(live.slots, live.log.asOfSeq) : (await this.reader.coldRead(id, options)).snapshot
  }

  /** The live values of a session open here. */
  snapshot(id: SessionId): ProjectionSnapshot {
    const live = this.sessions.liveOf(id)
    return snapshotOf(live.slots, live.log.asOfSeq)
  }

  /** The last seq folded into a session open here. */
  liveSeq(id: SessionId): number {
    return this.sessions.liveOf(id).log.asOfSeq
  }

  /** True while session `id` is followed here for a writer elsewhere (its storage is watched). */
  isFollowed(id: SessionId): boolean {
    return this.sessions.get(id)?.unwatch !== undefined
  }

  /** The header of a session open here. */
  liveHeader(id: SessionId): SessionHeader {
    return this.sessions.liveOf(id).header
  }

  /** The live state of one unit (for hosts such as listChildren), or undefined when faulted. */
  liveState(id: SessionId, key: string): { state: unknown; header: SessionHeader } | undefined {
    const live = this.sessions.get(id)
    const slot = live?.slots.find((s) => s.def.key === key)
    return live && slot && !slot.fault ? { state: slot.state, header: live.header } : undefined
  }

  /** A session's catalog and header, live when it is open here (no reads), else cold; `entries` null: catalog rejected. */
  async catalogOf(id: SessionId, signal?: AbortSignal): Promise<{ header: SessionHeader; entries: CatalogEntry[] | null; live: boolean }> {
    // Followed here but written elsewhere (another tab or process): catch up from storage first, not from notices.
    const followed = this.sessions.get(id)
    if (followed && !followed.writer) await this.follow(id)
    const live = this.sessions.get(id)
    const { header, slots } = live ?? (await this.reader.coldRead(id, { signal }))
    return { header, entries: catalogEntries(slots), live: !!live }
  }

  /** The tree under a session from parent-owned catalogs (see list-children.ts). */
  async listChildren(id: SessionId, options?: unknown): Promise<SubagentListEntry[]> {
    this.open()
    if (!isPlainObject(options) || options.at === undefined) return listChildren(this, id, options)
    // As of a point of this session's log: its catalog as it was then, each child as it is now.
    const { at, ...rest } = options
    return listChildren(catalogsAt(this, this.atReader, id, atOption(id, { at })), id, rest)
  }

  private readonly recentAt: NonNullable<AtReader['recent']> = new Map()
  private get atReader(): AtReader {
    return { reader: this.reader, history: this.storage.history, defs: this.defs, recent: this.recentAt }
  }

  /** Pushes changes of a live session's views to `listener` until the returned function is called. */
  watch(id: SessionId, listener: ChangeListener): () => void {
    return watch(this.sessions.liveOf(id), listener)
  }

  /** Another engine appended to a session followed here, not written: fold what is new (up to `length`; the notice's `tail`), tell listeners. */
  follow(id: SessionId, length?: number, tail?: FollowTail): Promise<void> {
    const live = this.sessions.get(id)
    if (!live || live.writer || this.isClosed) return Promise.resolve()
    const gone = (s: LiveSession) => this.sessions.gone(s, `${where(id)} was deleted by another client of the store`)
    const { reader, onError } = this
    return follow(live, { reader, isCurrent: (s) => this.sessions.isCurrent(s), folded: (s) => notify(s, onError), gone, onError }, length, tail)
  }

  /** How much `verify` will read: stored sessions and their events. */
  verifyPlan(): Promise<VerifyTotals> {
    this.open()
    return verifyPlan(this.reader)
  }

  /** Verifies sessions after `after` until about `budget` events are read (see verify.ts). */
  verifyStep(after: SessionId | undefined, budget: number, signal?: AbortSignal): Promise<VerifyStep> {
    this.open()
    return verifyStep(this.reader, this.defs, after, budget, signal, this.index)
  }

  /** A bounded batch of this store's headers and events after `cursor`. */
  changesSince(cursor: unknown, options?: unknown): Promise<Changes> {
    this.open()
    return changesSince(this.reader, this.tombstones, (header, position) => this.chainAt(header, position), cursor, options)
  }

  /** The chain value of a session at `position` (at most its length): the witness of its events before it. */
  chainAt(header: SessionHeader, position: number): Promise<string> {
    return this.chains.at(header, position, this.sessions.get(header.id))
  }

  /** The store's own small records (a replication's cursors, stored durably); STORAGE_UNAVAILABLE where it keeps none. */
  metaRecords(): Required<Pick<StorageAdapter, 'getMeta' | 'putMeta'>> {
    this.open()
    const storage = this.storage
    if (!storage.getMeta || !storage.putMeta) throw new SessionfoldError('STORAGE_UNAVAILABLE', `the ${storage.kind} storage keeps no meta records`)
    return { getMeta: (key) => storage.getMeta!(key), putMeta: (key, value) => storage.putMeta!(key, value) }
  }

  /** Imports a batch from another store, headers and seqs unchanged; conflicts are reported, not applied. */
  applyChanges(batch: unknown): Promise<ApplyResult> {
    this.open()
    return applyChanges(this.importTarget, batch)
  }

  /** Resolves a sync conflict by a fork of this store's events, given the server's whole copy (conflict-fork.ts). */
  forkConflict(serverCopy: unknown): Promise<ConflictFork> {
    this.open()
    return forkConflict({ ...this.importTarget, locks: this.#lettingGo, sessions: this.sessions, index: this.index, now: this.now }, serverCopy)
  }

  /** Waits for every append, writes close checkpoints, releases locks, closes storage. */
  async close(): Promise<void> {
    if (this.isClosed) return
    this.isClosed = true
    this.closeWatch.begin()
    await this.streams.close()
    await this.sessions.loaded()
    await endAll(this.sessions, this.onError)
    await this.history?.close()
    await this.index?.close({ write: this.closeWatch.writes })
    await this.storage.close()
  }

  /** Runs a call on an open engine, with the session id checked first. */
  private async checked<T>(id: SessionId, call: () => Promise<T>): Promise<T> {
    this.open()
    assertSessionId(id)
    return call()
  }

  /** Stores a new session and opens it for writing here (see LiveSessions.create). */
  private async create(header: SessionHeader, seed: readonly EncodedEvent[], held?: () => Promise<void>): Promise<LiveSession> {
    this.open()
    const live = await this.sessions.create(header, seed, held)
    this.index?.wroteLive(live, seed.at(-1)?.event.time ?? header.createdAt)
    return live
  }

  private open(): void {
    if (this.isClosed) throw new SessionfoldError('CLOSED', 'the engine is closed')
  }
}
