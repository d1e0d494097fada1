// Live sessions: the sessions this engine keeps folded in memory while some client writes or
// observes them, and their life here: created or loaded, given a writer (who holds the
// session's writer lock) or observers, released. Each record holds the unit states and one
// part of state per engine part (the log's position, checkpoint bookkeeping, the feed's listeners).
import type { ProjectionDefinition } from '../core/projection'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { EncodedEvent } from '../core/validate'
import type { WriterLocks } from '../storage/locks'
import { foldEvent, initSlots, type UnitSlot } from './units'
import { newLogState, type AppendPipeline, type LogState } from './append-pipeline'
import { newWatchState, notifyGone, notifyReset, type WatchState } from './watchers'
import { newCheckpointState, type CheckpointPolicy, type CheckpointState } from './checkpoints'
import type { ImportWriter } from './apply-changes'

/** An import's writer of a session, held until released. */
export interface HeldImportWriter {
  writer: ImportWriter
  release(): Promise<void>
  wanted(since: number): Promise<boolean> // another engine was refused the lock since `since` (true: cannot tell)
}
import type { ChainKeeper, PrefixState } from './chains'
import type { StoreReader } from './reader'

export interface LiveSession {
  readonly header: SessionHeader
  readonly slots: UnitSlot[]
  readonly log: LogState
  readonly checkpoint: CheckpointState
  /** Its views' listeners (a replaced log's record takes its predecessor's: replaceLog). */
  feed: WatchState
  /** Set while a client of this engine holds the session open for writing. */
  writer?: { release: () => Promise<void>; imports?: boolean }
  observers: number
  /**
   * Writers catching it up with storage before they take it (attachWriter): while any is, the
   * record is kept even with no writer and no observer, so the writer gets the record it follows.
   */
  attaching: number
  /** Stops watching storage for other engines' appends (while followed here without a writer). */
  unwatch?: () => void
  /** The chain at the log's end, while a writer has it here (chains.ts). */
  prefix?: PrefixState
}

/** A session of `length` durable events, folded into `slots`. */
export function newLiveSession(header: SessionHeader, slots: UnitSlot[], length: number): LiveSession {
  return { header, slots, log: newLogState(length), checkpoint: newCheckpointState(), feed: newWatchState(), observers: 0, attaching: 0 }
}

export interface LiveSessionsOptions {
  defs: readonly ProjectionDefinition[]
  reader: Pick<StoreReader, 'coldRead'>
  locks: WriterLocks
  pipeline: AppendPipeline<LiveSession>
  checkpoints: CheckpointPolicy
  chains: ChainKeeper
  /** Catches a session followed here up with storage (another writer's appends). */
  follow: (id: SessionId) => Promise<void>
  onError: (err: SessionfoldError) => void
  /**
   * Starts noticing appends that other engines make to a session followed here, where they
   * are not announced (processes sharing a folder); returns its stop.
   */
  watchSession?: (id: SessionId) => () => void
  isClosed: () => boolean
}

export class LiveSessions {
  private readonly live = new Map<SessionId, LiveSession>()
  private readonly loading = new Map<SessionId, Promise<LiveSession>>()

  constructor(private readonly options: LiveSessionsOptions) {}

  get(id: SessionId): LiveSession | undefined {
    return this.live.get(id)
  }

  /** Keeps `session` live (a session just created here). */
  add(session: LiveSession): void {
    this.live.set(session.header.id, session)
  }

  /**
   * The live session, loading it from storage if it is not live yet (one load per id at a time).
   * `claim` runs on it at once, while it is still the record kept for its id: an await later,
   * the last observer or writer of that record may have let it go, and its holder would write
   * to (or listen on) a record nobody keeps, whose writer lock nobody releases.
   */
  async attach(id: SessionId, claim: (live: LiveSession) => void): Promise<LiveSession> {
    const existing = this.live.get(id)
    if (existing) {
      claim(existing)
      return existing
    }
    let p = this.loading.get(id)
    if (!p) {
      p = this.options.reader.coldRead(id).then(({ header, length, slots, folded }) => {
        const live = newLiveSession(header, slots, length)
        live.checkpoint.since = folded // not in the stored row: the policy counts them as unsaved
        return live
      })
      const done = () => this.loading.delete(id)
      p.then(done, done)
      this.loading.set(id, p)
    }
    const loaded = await p
    const raced = this.live.get(id)
    // Let go already (by the caller that kept it first): not kept again, loaded afresh.
    if (!raced && this.dropped.has(loaded)) return this.attach(id, claim)
    const live = raced ?? loaded
    if (!raced) this.live.set(id, loaded)
    claim(live)
    return live
  }

  /** Records no longer kept (see remove): never kept again, their state may lag storage. */
  private readonly dropped = new WeakSet<LiveSession>()

  /** True while `session` is the record kept for its id. */
  isCurrent(session: LiveSession): boolean {
    return this.live.get(session.header.id) === session
  }

  /** Stops keeping `session` live: its listeners are dropped and storage is no longer watched. */
  remove(session: LiveSession): void {
    if (this.isCurrent(session)) this.live.delete(session.header.id)
    this.dropped.add(session)
    session.feed.listeners.clear()
    this.updateWatch(session)
  }

  /** The session open for writing here; CLOSED otherwise. */
  writable(id: SessionId): LiveSession {
    const live = this.live.get(id)
    if (!live?.writer) throw new SessionfoldError('CLOSED', `${where(id)} is not open for writing`, { sessionId: id })
    return live
  }

  /** The session live here; CLOSED otherwise. */
  liveOf(id: SessionId): LiveSession {
    const live = this.live.get(id)
    if (!live) throw new SessionfoldError('CLOSED', `${where(id)} is not open in this engine`, { sessionId: id })
    return live
  }

  /** Every live session. */
  all(): LiveSession[] {
    return [...this.live.values()]
  }

  /** Waits for loads in flight (before closing). */
  async loaded(): Promise<void> {
    await Promise.allSettled([...this.loading.values()])
  }

  /**
   * Stores a new session (with a fork's seed), opens it for writing and writes its first
   * checkpoint. The caller has validated the header. `held`: the session's writer lock, when
   * the caller (an import) holds it already; that caller's release writes the first row.
   */
  async create(header: SessionHeader, seed: readonly EncodedEvent[], held?: () => Promise<void>): Promise<LiveSession> {
    const { pipeline, checkpoints } = this.options
    const release = held ?? (await this.options.locks.acquire(header.id))
    try {
      await pipeline.create(header, seed)
    } catch (err) {
      if (!held) await release()
      throw err
    }
    const slots = initSlots(this.options.defs, header)
    for (const e of seed) foldEvent(slots, e.event)
    const live = newLiveSession(header, slots, seed.length)
    live.writer = { release }
    this.options.chains.created(live, seed)
    this.add(live)
    if (!held) await checkpoints.write(live)
    return live
  }

  /** Opens a stored session for writing: SESSION_LOCKED if some client already has it so. */
  async openWriter(id: SessionId): Promise<LiveSession> {
    const release = await this.options.locks.acquire(id)
    try {
      return await this.attachWriter(id, release)
    } catch (err) {
      await release()
      throw err
    }
  }

  /** Makes a session live here with a writer holding `release`; catches up with storage first. */
  async attachWriter(id: SessionId, release: () => Promise<void>, imports = false): Promise<LiveSession> {
    // Kept while it catches up: an observer closing meanwhile must not let it go.
    const live = await this.attach(id, (l) => void l.attaching++)
    try {
      // If we were only following it, another writer may have appended since: catch up first.
      await this.options.follow(id)
      await this.options.chains.attach(live)
    } catch (err) {
      live.attaching--
      this.dropIfUnused(live)
      throw err
    }
    live.attaching--
    live.writer = imports ? { release, imports } : { release }
    this.updateWatch(live)
    return live
  }

  /**
   * Holds `id` open for writing while an import writes it (see apply-changes.ts): 'locked'
   * when another writer has it. The session is opened here only once the import writes.
   */
  async withImportWriter(id: SessionId, write: (writer: ImportWriter) => Promise<void>): Promise<'locked' | undefined> {
    const held = await this.holdImportWriter(id)
    if (held === 'locked') return 'locked'
    try {
      await write(held.writer)
    } finally {
      await held.release()
    }
    return undefined
  }

  /** As withImportWriter, the writer held until `release()` (a busy stream keeps its own, streams.ts). */
  async holdImportWriter(id: SessionId): Promise<HeldImportWriter | 'locked'> {
    let release: () => Promise<void>
    try {
      release = await this.options.locks.acquire(id)
    } catch (err) {
      if (isSessionfoldError(err, 'SESSION_LOCKED')) return 'locked'
      throw err
    }
    let live: LiveSession | undefined
    let released = false
    const writer: ImportWriter = {
      create: async (header, seed) => {
        live = await this.create(header, seed, release)
      },
      append: async (events) => {
        live ??= await this.attachWriter(id, release, true)
        await this.options.pipeline.appendNumbered(live, events)
      },
      chainAt: async (position) => {
        live ??= await this.attachWriter(id, release, true)
        return this.options.chains.at(live.header, position, live)
      },
    }
    return {
      writer,
      wanted: async (since) => this.options.locks.wanted?.(id, since) ?? true,
      release: async () => {
        if (released) return
        released = true
        // Releasing the writer writes a row when one is due: the next batch starts warm enough.
        // The record this import holds: its writer is the one to let go, with its lock.
        if (live) await this.releaseRecord(live, 'writer')
        else await release()
      },
    }
  }

  /**
   * Replaces the session's log by another history of the same life (a sync conflict resolved
   * by a fork, conflict-fork.ts); the caller holds its writer lock (`held`, released here as a
   * writer's). Storage: the session deleted and stored again with `events`; `forget` runs
   * between the two (the session list forgets the old row). Views open on it here move to the
   * new record and hear its values once, with `reset` (their asOfSeq may go back).
   */
  async replaceLog(header: SessionHeader, events: readonly EncodedEvent[], held: () => Promise<void>, forget: () => Promise<void>): Promise<void> {
    const { pipeline, chains, onError } = this.options
    const before = this.live.get(header.id)
    if (before) {
      // Held as a writer's meanwhile: no follow of it, and no delete heard of it (its views move).
      before.writer = { release: async () => {} }
      this.updateWatch(before)
      await before.log.folds.catch(() => {}) // a follow in flight ends first
    }
    chains.forget(header.id)
    await pipeline.remove(header.id)
    await forget()
    const live = await this.create(header, events.slice(0, header.seedLength), held)
    try {
      await pipeline.appendNumbered(live, events.slice(header.seedLength))
    } finally {
      if (before) {
        // The views move: their listeners (whose unwatch deletes from this very feed) and observers.
        live.feed = before.feed
        live.observers += before.observers
        before.observers = 0
        before.writer = undefined
        this.dropped.add(before)
        this.updateWatch(before)
        notifyReset(live, onError)
      }
      await this.releaseRecord(live, 'writer')
    }
  }

  /** Keeps a session live here for one more observer. */
  async observe(id: SessionId): Promise<LiveSession> {
    const live = await this.attach(id, (l) => void l.observers++)
    this.updateWatch(live)
    return live
  }

  /** Ends a writer (waiting for its appends and writing the close checkpoint) or an observer. */
  async release(id: SessionId, role: 'writer' | 'observer'): Promise<void> {
    const live = this.live.get(id)
    if (live) await this.releaseRecord(live, role)
  }

  /** Ends a writer or an observer of `live`, the record it holds. */
  private async releaseRecord(live: LiveSession, role: 'writer' | 'observer'): Promise<void> {
    if (role === 'writer' && live.writer) {
      const writer = live.writer
      await this.options.pipeline.settle(live)
      // A writer closing writes its row. An import's writer (a batch from another store, often
      // a few events) only when a row is due: a row per batch cost a commit per sync request.
      if (!writer.imports || this.options.checkpoints.isDue(live)) await this.options.checkpoints.write(live)
      await this.options.checkpoints.drain(live)
      await this.options.chains.release(live)
      live.writer = undefined
      await writer.release()
    } else if (role === 'observer' && live.observers > 0) {
      live.observers--
    }
    this.dropIfUnused(live)
  }

  /** Stops keeping a record nobody writes, observes or is attaching; else updates its watch. */
  private dropIfUnused(live: LiveSession): void {
    if (!live.writer && live.observers === 0 && live.attaching === 0 && this.isCurrent(live)) this.remove(live)
    else this.updateWatch(live)
  }

  /**
   * The session kept live here is gone from storage (deleted here, or by another engine: a
   * follow found no such session, or another life of its id): its listeners hear it one last
   * time, and the record is let go, so the next observe of the id reads storage (and rejects).
   */
  gone(session: LiveSession, message: string): void {
    if (!this.isCurrent(session) || session.writer) return
    notifyGone(session, message, this.options.onError)
    this.options.chains.forget(session.header.id)
    this.remove(session)
  }

  /** Deletes a session nobody holds open for writing (SESSION_LOCKED while a writer has it). */
  async delete(id: SessionId, held = false): Promise<void> {
    const release = held ? async () => {} : await this.options.locks.acquire(id)
    try {
      const live = this.live.get(id)
      if (live) this.gone(live, `${where(id)} was deleted`)
      this.options.chains.forget(id)
      await this.options.pipeline.remove(id)
    } finally {
      await release()
    }
  }

  /** Deletes a session this engine just created and still holds (spawn's undo). */
  async discard(id: SessionId): Promise<void> {
    const { pipeline, checkpoints } = this.options
    const live = this.live.get(id)
    if (live) {
      await pipeline.settle(live)
      this.remove(live)
      checkpoints.cancel(live)
      await checkpoints.drain(live)
      live.prefix = undefined
    }
    this.options.chains.forget(id)
    try {
      await pipeline.remove(id)
    } catch (err) {
      this.options.onError(
        err instanceof SessionfoldError
          ? err
          : new SessionfoldError('STORAGE_UNAVAILABLE', `could not delete the unpublished child ${where(id)}`, { sessionId: id, cause: err }),
      )
    } finally {
      await live?.writer?.release()
    }
  }

  /** Storage is watched for other engines' appends exactly while a session is followed here without a writer. */
  updateWatch(session: LiveSession): void {
    const watchSession = this.options.watchSession
    const want = watchSession !== undefined && !this.options.isClosed() && !session.writer && this.isCurrent(session)
    if (want && !session.unwatch) {
      session.unwatch = watchSession(session.header.id)
    } else if (!want && session.unwatch) {
      session.unwatch()
      session.unwatch = undefined
    }
  }
}
