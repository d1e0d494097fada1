// The one read path of a store: every read of sessions, events and checkpoint rows that the
// engine, its host, store-to-store sync and the CLI make goes through here, and so does the
// cold read (a session folded from storage without keeping it).
import { notFound } from '../storage/guard'
import type { ChangeFeed, HistoryRows, KeyValueStore, ReadRange, SessionInfo, SessionRead, StorageAdapter } from '../storage/types'
import type { SessionEvent, SessionHeader, SessionId } from '../core/model'
import type { ProjectionDefinition, ProjectionSnapshot } from '../core/projection'
import type { EventsPage } from '../core/protocol'
import { foldEvent, restoreSlots, snapshotOf, type UnitSlot } from './units'
import { encodeEvent } from '../core/validate'

/** What reading needs of an adapter: none of its writes. */
export type ReadableStorage = Pick<
  StorageAdapter,
  'getSession' | 'getSessions' | 'readEvents' | 'readTexts' | 'listIds' | 'listSessions' | 'getCheckpoint' | 'feed' | 'history' | 'kv'
>

/** A session folded from storage: its header, durable length, unit states and values. */
export interface ColdRead {
  header: SessionHeader
  length: number
  slots: UnitSlot[]
  snapshot: ProjectionSnapshot
  /** Events folded beyond the checkpoint row (all of them without a usable row). */
  folded: number
}

/** Ids listed per storage call when a walk goes over the whole store. */
const ID_PAGE = 1000

export class StoreReader {
  constructor(
    private readonly storage: ReadableStorage,
    private readonly defs: readonly ProjectionDefinition[],
  ) {}

  /** The sessions' history rows, when the adapter keeps them (read them only: a read never writes back). */
  get history(): Pick<HistoryRows, 'get' | 'list'> | undefined {
    return this.storage.history
  }

  /** The store's key-value records (chain marks), when its adapter keeps them (read them only). */
  get records(): Pick<KeyValueStore, 'get' | 'list'> | undefined {
    return this.storage.kv
  }

  /** The store's change feed, when its adapter keeps one. */
  get feed(): ChangeFeed | undefined {
    return this.storage.feed
  }

  /** The header and durable length, or undefined when there is no such session. */
  find(id: SessionId): Promise<SessionInfo | undefined> {
    return this.storage.getSession(id)
  }

  /** `find` of many sessions at once, with the events of those of at most `maxEvents`, where the storage can (getSessions). */
  get findMany(): ((ids: readonly SessionId[], maxEvents: number) => Promise<(SessionRead | undefined)[]>) | undefined {
    const { storage } = this
    return storage.getSessions && ((ids, maxEvents) => storage.getSessions!(ids, maxEvents))
  }

  /** The header and durable length; SESSION_NOT_FOUND when there is no such session. */
  async info(id: SessionId): Promise<SessionInfo> {
    const info = await this.storage.getSession(id)
    if (!info) throw notFound(id)
    return info
  }

  /** Events `[from, to)` in pages, oldest first. */
  pages(id: SessionId, range: ReadRange): AsyncIterable<SessionEvent[]> {
    return this.storage.readEvents(id, range)
  }

  /** As `pages`, each event as its JSON text (`encodeEvent`'s), unparsed where the storage keeps it so. */
  async *texts(id: SessionId, range: ReadRange): AsyncIterable<string[]> {
    if (this.storage.readTexts) return yield* this.storage.readTexts(id, range)
    for await (const page of this.storage.readEvents(id, range)) yield page.map((e) => encodeEvent(e, id, Number.MAX_SAFE_INTEGER).json)
  }

  /** The first page of events from `from`, up to `to` (default: the log's end now), which the answer fixes. */
  async page(id: SessionId, from: number, to: number | undefined): Promise<EventsPage> {
    const end = to ?? (await this.info(id)).length
    for await (const page of this.storage.readEvents(id, { from, to: end })) return { events: page, to: end }
    return { events: [], to: end }
  }

  /** Headers ordered by id, after `after`, at most `limit`. */
  listSessions(options?: { after?: SessionId; limit?: number }): Promise<SessionHeader[]> {
    return this.storage.listSessions(options)
  }

  /** Ids ordered by id, damaged headers included (see StorageAdapter.listIds). */
  listIds(options: { after?: SessionId; limit: number }): Promise<SessionId[]> {
    return this.storage.listIds(options)
  }

  /** Every id of the store after `after`, in id order, read page by page. */
  async *ids(after?: SessionId): AsyncGenerator<SessionId> {
    for (let from = after; ; ) {
      const page = await this.storage.listIds({ after: from, limit: ID_PAGE })
      yield* page
      if (page.length < ID_PAGE) return
      from = page[page.length - 1]!
    }
  }

  /** The stored checkpoint row as read back, unvalidated (it may throw CORRUPT_LOG). */
  checkpoint(id: SessionId): Promise<unknown> {
    return this.storage.getCheckpoint(id)
  }

  /**
   * Folds a session from storage without keeping it: the checkpoint row where it can be
   * trusted, then only the events after the lowest kept watermark. Never writes back.
   */
  async coldRead(id: SessionId, options: { signal?: AbortSignal } = {}): Promise<ColdRead> {
    // Both reads at once: each may wait on the disk, a database or (encrypted) a decrypt. A row
    // read ahead of the length read is refused by restoreSlots, as a row written meanwhile was.
    const [info, row] = await Promise.all([
      this.info(id),
      this.storage.getCheckpoint(id).catch(() => undefined), // any doubt: ignore it
    ])
    const { slots, from } = restoreSlots(this.defs, info.header, row, info.length)
    if (from < info.length) {
      for await (const page of this.storage.readEvents(id, { from, to: info.length, signal: options.signal })) {
        for (const e of page) foldEvent(slots, e)
      }
    }
    return { header: info.header, length: info.length, slots, snapshot: snapshotOf(slots, info.length - 1), folded: Math.max(0, info.length - from) }
  }
}
