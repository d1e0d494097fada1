import type { LifecycleWitness, SessionEvent, SessionHeader, SessionId } from '../core/model'
import type { EncodedEvent } from '../core/validate'

/** One unit's state in a checkpoint row: `seq` is the last event folded into `val` (-1: none). */
export interface CheckpointUnitRow {
  /** The unit's `stateVersion` when the row was written. */
  ver: number
  /** The last seq folded into `val` (-1: none). */
  seq: number
  /** The unit's state, as JSON. */
  val: unknown
}

/**
 * A session's checkpoint row, written and replaced whole. `sum` (added by the engine) is a
 * hash of the JSON of `{ witness, rows }`, so a flipped bit that still parses is not trusted.
 */
export interface CheckpointRow {
  /** The life of the session the row belongs to: a row whose witness differs from the header is ignored. */
  witness: LifecycleWitness
  /** One state per projection key. */
  rows: Record<string, CheckpointUnitRow>
  /** The engine's checksum of `{ witness, rows }`. */
  sum?: string
}

/** A history row as read back: its position and the row, unvalidated (the engine decides whether to trust it). */
export interface HistoryRow {
  /** The row holds the units folded over events `[0, at)`. */
  at: number
  /** The stored row. */
  row: unknown
}

/**
 * A session's history of checkpoint rows (time travel, `store.observe(id, { at })`): rows kept
 * by position, a row at position `at` holding the units folded over events `[0, at)`. Like the
 * latest row, a cache: the engine checks every row it reads and rebuilds missing ones.
 */
export interface HistoryRows {
  /** Stores `row` at position `at` (1 or more), replacing a row there. SESSION_NOT_FOUND without the session. */
  put(id: SessionId, at: number, row: CheckpointRow): Promise<void>
  /** The row at the largest position `<= at`, as read back (unvalidated), with its position; undefined when there is none. */
  get(id: SessionId, at: number): Promise<HistoryRow | undefined>
  /** The positions of the session's rows, ascending. */
  list(id: SessionId): Promise<number[]>
  /** Removes the rows at `positions` (absent ones are passed over). */
  remove(id: SessionId, positions: readonly number[]): Promise<void>
}

/** What a store knows of one session without reading its events. */
export interface SessionInfo {
  /** The session's header. */
  header: SessionHeader
  /** Events in the durable log: the next append must carry this seq. */
  length: number
}

/** A session as `getSessions` reads it: its events too when they were few enough. */
export interface SessionRead extends SessionInfo {
  /** Every event (`length` of them), when `length` is at most what was asked and they could all be read. */
  events?: SessionEvent[]
}

/** A session `createSessions` stores: its header and every event it starts with (seqs 0..n-1, its seed first). */
export interface NewSession {
  /** The session's header. */
  header: SessionHeader
  /** Its events from seq 0: at least its `seedLength` (the seed), and what followed it. */
  events: readonly EncodedEvent[]
}

/** Which events `readEvents` reads. */
export interface ReadRange {
  /** First seq to read (default 0). */
  from?: number
  /** Seq to stop before (default: the log's end at the time of the call). */
  to?: number
  /** Aborting it rejects the read with `CANCELLED` between pages. */
  signal?: AbortSignal
}

/**
 * How many records right after the one of `text` (seq `seq`) a reader of texts will not look at:
 * asked of each text an adapter makes in `readTexts`. The codec's reader says it of a block's
 * pointers (256 records a block, each a text made, checked and dropped otherwise).
 */
export type SkipTexts = (text: string, seq: number) => number

/** A torn or incomplete tail that an adapter cut from a log before writing to it. */
export interface RepairReport {
  /** The session whose log was cut. */
  sessionId: SessionId
  /** File (fs) or store (indexeddb) that was repaired. */
  file: string
  /** Offset the log was cut back to. */
  offset: number
  /** Bytes removed. */
  bytes: number
}

/** One write, as the change feed records it: session `id` gained events `[from, to)` (a creation: from 0). */
export interface FeedEntry {
  /** The entry's position: pass it as `after` to read the entries after it. Opaque, adapter-made. */
  at: string
  /** The session written. */
  id: SessionId
  /** Its first new seq (0 for a creation). */
  from: number
  /** The log's length after the write. */
  to: number
}

/**
 * A store-wide record of its writes (creations and appends) in commit order, so that a sync
 * finds what changed since its cursor in proportion to what changed, not by looking at every
 * session. A hint, never the data: an entry may name a session deleted since, or a range a
 * crash cut back; readers check the log. Positions are opaque strings made by the adapter.
 */
export interface ChangeFeed {
  /** This feed's identity: a cursor made on another store, or on a feed started over, names another. */
  id(): Promise<string>
  /** A position after every entry committed so far: `read(head)` gives only later entries. */
  head(): Promise<string>
  /** Entries committed after position `after` ('' for the first), oldest first, at most `limit`. */
  read(after: string, limit: number): Promise<FeedEntry[]>
}

/**
 * A key of the store's own records ({@link StorageAdapter.kv}): 1-6 parts, each 1-128
 * characters of `[A-Za-z0-9_-]`. A key of 3 parts or more whose first part is `'session'` and
 * whose second is a session id belongs to that session: it can be written only while the
 * session is there, and deleting the session deletes it (with the session, at once). Keys
 * whose first part is `'_meta'`, `'_index'` or `'_deleted'`, or whose third (of a session's key) is `'_checkpoint'` or
 * `'_history'`, hold the store's own rows: `StorageAdapter.kv` refuses them and lists without them.
 */
export type RecordKey = readonly string[]

/** Which keys {@link KeyValueStore.list} lists. */
export interface KeyRange {
  /** Only keys strictly after this one (in list order). */
  after?: RecordKey
  /** At most this many (default 1000, at most 10,000). */
  limit?: number
}

/**
 * How a {@link KeyValueStore.put} outlives a crash of the machine. 'cache' (the default): it may
 * be lost, or found damaged, and readers check what they read. 'whole': it may be lost, never
 * found damaged (the old value or the new one). 'durable': on disk once the put resolves.
 */
export type PutDurability = 'cache' | 'whole' | 'durable'

/** Options of {@link KeyValueStore.put}. */
export interface PutOptions {
  /** Default 'cache'. */
  durability?: PutDurability
  /**
   * A hint: this key is put again and again (a Durable Stream's record, once an append). An
   * adapter may keep it in a form cheaper to replace; durability is as asked all the same.
   */
  often?: boolean
}

/**
 * Small records the engine keeps beside the logs (a session's chain marks, for one), by key,
 * each value a string replaced whole: a reader finds the old value or the new one. For caches:
 * a put is not synced on its own, so a crash of the machine (not of the process) may take back
 * the latest puts, and a reader must check what it reads (the engine's records carry their own
 * check). Values are sealed by the record codec like every other record.
 */
export interface KeyValueStore {
  /** The value, or undefined when there is none. */
  get(key: RecordKey): Promise<string | undefined>
  /** Stores `value` (at most MAX_RECORD_VALUE characters) under `key`; SESSION_NOT_FOUND for a session's key without the session. */
  put(key: RecordKey, value: string, options?: PutOptions): Promise<void>
  /** Removes the value under `key`, if any. */
  delete(key: RecordKey): Promise<void>
  /** The keys that start with `prefix` and are longer than it, in order (part by part, each by UTF-16 code units). */
  list(prefix: RecordKey, range?: KeyRange): Promise<string[][]>
  /**
   * Optional: the values of `keys`, in their order, as `get` of each. An adapter that has it
   * reads them in one go (one query, one transaction); without it `getMany` (kv.ts) gets each.
   */
  getMany?(keys: readonly RecordKey[]): Promise<(string | undefined)[]>
  /**
   * Optional: puts (a value) and deletes (`undefined`) of distinct keys, in any order, each as
   * `put` or `delete` would, with `options` for every put. Bad writes (a bad key or value, a key
   * twice: `assertWrites` of kv.ts) are INVALID_ARGUMENT with nothing written; on a failure after
   * that (SESSION_NOT_FOUND for a session gone) some may be made and others not. An adapter that has it writes them in one go;
   * without it `writeMany` (kv.ts) writes each.
   */
  writeMany?(writes: readonly RecordWrite[], options?: PutOptions): Promise<void>
}

/** A write of {@link KeyValueStore.writeMany}: the key and its new value, `undefined` to delete it. */
export type RecordWrite = readonly [key: RecordKey, value: string | undefined]

/** What {@link StorageAdapter.replaceRecords} writes in place of what is stored. */
export interface RecordReplacement {
  /**
   * Records, each taking the place of the stored record of its seq (`event.seq`, below the
   * log's length, each seq at most once), each exactly as long as that record (its JSON, in
   * UTF-8 bytes).
   */
  records: readonly EncodedEvent[]
  /** The session's new header; its id, createdAt and seedLength must be the stored ones. */
  header?: SessionHeader
}

/**
 * The narrow half of the storage contract that every backend implements: sessions' logs and the
 * change feed. Beside it a backend has a {@link KeyValueStore}; checkpoint rows, history rows and
 * meta records are written once over the two (src/storage/records), which make the whole
 * {@link StorageAdapter}.
 *
 * Every method rejects with a `SessionfoldError`: INVALID_ARGUMENT for a bad id,
 * SESSION_NOT_FOUND, SESSION_EXISTS, SEQ_CONFLICT, CORRUPT_LOG, STORAGE_UNAVAILABLE,
 * STORAGE_QUOTA_EXCEEDED, CLOSED after `close()`.
 */
export interface LogStore {
  /** Short name for messages: 'memory', 'fs', 'indexeddb'. */
  readonly kind: string
  /**
   * Creates a session, atomically with its seed events (a fork's copies of `[0, at)`;
   * their seqs must be 0..n-1). SESSION_EXISTS when the id is taken.
   */
  createSession(header: SessionHeader, seed?: readonly EncodedEvent[]): Promise<void>
  /**
   * Appends a batch whose first seq must equal the stored length and whose seqs are
   * contiguous; otherwise SEQ_CONFLICT and nothing is written. Atomic: after a crash the
   * batch is there whole or not at all. Resolves once durable (per the adapter's durability).
   */
  append(id: SessionId, batch: readonly EncodedEvent[]): Promise<void>
  /** Events `[from, to)` in pages, oldest first, without parsing events before `from`. */
  readEvents(id: SessionId, range?: ReadRange): AsyncIterable<SessionEvent[]>
  /**
   * As `readEvents`, each event as the JSON text it was appended as (`encodeEvent`'s: `seq`,
   * `type`, `time`, `data` in that order), where the adapter keeps that text: a reader that
   * passes events on as JSON (a Durable Streams read) is spared parsing them. Optional.
   * With `skip`, an adapter may give `''` for the records it says the reader will not look at
   * (checked as stored all the same: a damaged one is still CORRUPT_LOG), and make no text of them.
   */
  readTexts?(id: SessionId, range?: ReadRange, skip?: SkipTexts): AsyncIterable<string[]>
  /** The header and durable length, or undefined when there is no such session. */
  getSession(id: SessionId): Promise<SessionInfo | undefined>
  /**
   * Optional: `getSession` of each of `ids` at once (undefined for one not there, in the order
   * of `ids`), each session of at most `maxEvents` events with all of them: one round trip for
   * many small sessions where each of getSession and readEvents is one (the first walk of
   * `changesSince` over a store of many sessions). A session whose events cannot all be read
   * comes without them (its own read reports why). INVALID_ARGUMENT for a bad id or count;
   * CORRUPT_LOG when a header is damaged (a caller then asks session by session, to learn whose).
   */
  getSessions?(ids: readonly SessionId[], maxEvents: number): Promise<(SessionRead | undefined)[]>
  /**
   * Optional: stores each of `sessions` that is not stored yet with its events, as
   * `createSession` with its seed and then `append` of the rest would, in one round trip for
   * many small sessions (an import of many sessions: `applyChanges`). Each is atomic (there
   * whole or not at all after a crash), and the call resolves once all are durable; an
   * adapter may commit them together (PostgreSQL and IndexedDB do: a call that fails made none
   * of them; fs makes them side by side, so one that fails may have made some). Answers per
   * session, in order: true when it was
   * created, false when its id was taken (that session left as it is). One change-feed entry
   * each, from 0. INVALID_ARGUMENT, with nothing written, for a bad header, events that do
   * not run 0..n-1 or are fewer than the seed, or an id given twice.
   */
  createSessions?(sessions: readonly NewSession[]): Promise<boolean[]>
  /** Headers ordered by id, strictly after `after`, at most `limit` (default 100). */
  listSessions(options?: { after?: SessionId; limit?: number }): Promise<SessionHeader[]>
  /**
   * Ids ordered like `listSessions`, without reading headers: a session whose header is
   * damaged is listed here (and skipped by `listSessions`), so `verify` can report it.
   */
  listIds(options?: { after?: SessionId; limit?: number }): Promise<SessionId[]>
  /** Deletes the session, its events, and its key-value records (the store's rows of it among them). Absent: resolves quietly. */
  deleteSession(id: SessionId): Promise<void>
  /** The store's change feed (every adapter of this package has one; a custom one may not). */
  readonly feed?: ChangeFeed
  /**
   * Replaces stored records of a session, and (given) its header, in place: same seqs, same
   * encoded lengths, so the log's length, offsets and change feed stay as they are. All or
   * nothing: a crash leaves the old records and header or the new ones, and readers (in any
   * process) read one or the other. The caller holds the session's writer lock, so no append
   * runs meanwhile. INVALID_ARGUMENT, with nothing written, for a record whose seq is not
   * stored or comes twice, or whose length differs from the stored record's, and for a header
   * of another id, createdAt or seedLength. The record codec re-encrypts a store with it
   * (`rotateKey`); every adapter of this package has it, and without it a store's key cannot
   * be rotated.
   */
  replaceRecords?(id: SessionId, replacement: RecordReplacement): Promise<void>
  /** Waits for pending writes, then releases files or connections. Later calls: CLOSED. */
  close(): Promise<void>
}

/**
 * The storage contract. It stores sessions, event ranges and checkpoint rows, and knows
 * nothing of projections or folding: sequence rules beyond "continue the stored seq" and
 * checkpoint policy live in the engine. Every adapter of this package is a {@link LogStore}
 * and a {@link KeyValueStore} composed (`composeStorage`, src/storage/records): its checkpoint
 * rows, history rows and meta records are key-value records.
 *
 * Every method rejects with a `SessionfoldError`: INVALID_ARGUMENT for a bad id,
 * SESSION_NOT_FOUND, SESSION_EXISTS, SEQ_CONFLICT, CORRUPT_LOG, STORAGE_UNAVAILABLE,
 * STORAGE_QUOTA_EXCEEDED, CLOSED after `close()`.
 */
export interface StorageAdapter extends LogStore {
  /** The stored row as read back, unvalidated: the engine decides whether to trust it. */
  getCheckpoint(id: SessionId): Promise<unknown>
  /** Replaces the session's checkpoint row, whole (a crash leaves the old row or the new one). */
  putCheckpoint(id: SessionId, row: CheckpointRow): Promise<void>
  /** Removes the session's checkpoint row, if any. */
  deleteCheckpoint(id: SessionId): Promise<void>
  /** The sessions' history rows (every adapter of this package has them; without them `observe({ at })` refolds from 0). Deleting a session deletes them. */
  readonly history?: HistoryRows
  /** The store's own records by key (every adapter of this package has them; without them sync recomputes what they cache). */
  readonly kv?: KeyValueStore
  /** A small record of the store's own (a replication's cursors), by key; undefined when unset. */
  getMeta?(key: string): Promise<string | undefined>
  /** Stores `value` under `key`, durably, replacing what was there (a crash leaves one or the other). */
  putMeta?(key: string, value: string): Promise<void>
}

export { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from '../core/limits'
/** Longest value {@link KeyValueStore.put} takes, in UTF-16 units. */
export const MAX_RECORD_VALUE = 1024 * 1024

/** Events per page yielded by `readEvents`. */
export const READ_PAGE = 512

/** The order of listed ids: UTF-16 code units, which for `[A-Za-z0-9_-]` is byte order everywhere. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
