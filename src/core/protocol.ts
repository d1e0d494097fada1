// The worker protocol: what the client asks of the engine host and what the host pushes
// back. Types only; the same surface is served in-process (worker: false) and over comlink.
import type { ApplyResult, Changes } from './changes'
import type { SubagentListEntry } from './children'
import type { Json, SessionEvent, SessionHeader } from './model'
import type { ProjectionFault, ProjectionSnapshot } from './projection'

/** Where a store keeps its sessions: IndexedDB (browsers), files (Node) or memory (nothing kept). */
export type StorageKind = 'indexeddb' | 'fs' | 'memory' | 'postgres'

/**
 * Which store, as the host receives it: one shape per backend, tagged by `storage`, each parsed
 * from openStore's options by its backend (src/backends/<name>/config.ts), defaults resolved.
 */
export type StoreConfig = MemoryConfig | IndexedDbConfig | FsConfig | PostgresConfig

/** Memory: nothing kept. In browsers, `name` scopes the Web Locks and the growth notices of tabs. */
export interface MemoryConfig {
  storage: 'memory'
  name: string
}

/** IndexedDB: the database `name`. */
export interface IndexedDbConfig {
  storage: 'indexeddb'
  name: string
  durability: 'strict' | 'relaxed'
}

/** Files: the store's root folder `dir`. */
export interface FsConfig {
  storage: 'fs'
  dir: string
  durability: 'strict' | 'relaxed'
}

/** PostgreSQL: the server and the schema the store's tables live in. */
export interface PostgresConfig {
  storage: 'postgres'
  url: string
  schema: string
  durability: 'strict' | 'relaxed'
  /** How long a write lease lives without renewal (ms). */
  leaseTtlMs?: number
  /** Bounds on opening a connection and on one statement (ms). */
  connectTimeoutMs?: number
  queryTimeoutMs?: number
}

/** Store options as the host receives them: defaults already resolved by the client. */
export interface HostOptions {
  /** Which store (see {@link StoreConfig}). */
  store: StoreConfig
  checkpoint?: { everyEvents?: number; everyMs?: number }
  maxEventBytes?: number
  /** The record codec (src/storage/codec): the store's key, and whether units are compressed. */
  encryption?: { key: Uint8Array | CryptoKey }
  compression?: 'deflate' | 'none'
  /**
   * Browsers: a Web Lock the host holds for as long as it lives. Browsers say nothing when a
   * worker dies; the client queues for this lock, and being granted it means the host is gone.
   */
  aliveLock?: string
  /**
   * Browsers, SharedWorker: a Web Lock the tab holds for as long as it lives. The shared host
   * queues for it; being granted it means the tab is gone, and its handles are closed.
   */
  tabLock?: string
}

/** A change of one session's values, pushed to every client that has a handle on it. */
/**
 * How a worker's host pushes frames: a plain message on the same port as the answers to calls
 * (so they keep their order with the frames that come with append answers), with no reply.
 */
export interface FramesMessage {
  type: typeof FRAMES_MESSAGE
  frames: Frame[]
}

export const FRAMES_MESSAGE = 'sessionfold/frames'

export interface Frame {
  /**
   * The frame's place among all frames of its host: 1, 2, 3… A client applies them in this
   * order whichever way each came (pushed, or with the answer of an append).
   */
  n: number
  sessionId: string
  /** The new asOfSeq. */
  seq: number
  /** Values that changed since the previous frame (absolute values, not diffs). */
  values: Record<string, Json | null>
  /**
   * List values that only grew since the previous frame, as their new items: the value is the
   * previous list (of length `from`) followed by `items`. A key is in `values` or here, not both.
   */
  grown?: Record<string, { from: number; items: Json[] }>
  faults: Record<string, ProjectionFault>
  /**
   * The session is gone (deleted here, or in another tab or process): its views end with this
   * error (code SESSION_NOT_FOUND), and the host pushes nothing more of it.
   */
  gone?: WireError
}

/** An open handle: its number, the session's header, and its values when it opened. */
export interface HandleInfo {
  handle: number
  header: SessionHeader
  snapshot: ProjectionSnapshot
  /** For spawn: the parent's asOfSeq once its catalog fact was folded (read your writes). */
  parentSeq?: number
  /**
   * For observe: true when the engine follows the session for a writer elsewhere (another
   * process), so its values may change without any call of this store.
   */
  followed?: boolean
  /** For observe with `{ at }`: the view shows the session after its first `at` events, and never changes. */
  at?: number
}

export interface EventsPage {
  events: SessionEvent[]
  /** The end of the range (exclusive), fixed by the first page. */
  to: number
}

/** How much `verify` read (or will read). */
export interface VerifyTotals {
  /** Sessions read. */
  sessions: number
  /** Events read. */
  events: number
}

/** A damaged session found by `verify`: CORRUPT_LOG for its header or events, CORRUPT_CHECKPOINT for its checkpoint row. */
export interface VerifyDamage {
  /** The damaged session. */
  id: string
  /** `CORRUPT_LOG`: its header or events cannot be read whole and in order; `CORRUPT_CHECKPOINT`: its checkpoint row is not used, or gives a value a full refold does not. */
  code: 'CORRUPT_LOG' | 'CORRUPT_CHECKPOINT'
  /** What is wrong, and where (file and byte offset on fs). */
  detail: string
}

/** What `store.verify()` resolves with: what it read, and every damaged session (empty: all is well). */
export interface VerifyReport extends VerifyTotals {
  /** One entry per damaged session. */
  damaged: VerifyDamage[]
}

export interface VerifyStep extends VerifyReport {
  /** The last session verified when the budget ran out; null when every session was. */
  next: string | null
}

/**
 * An append's answer across the worker: its result, with the frames due by then (its own
 * values among them), so the writer reads its write without waiting for a push.
 */
export interface AppendAnswer extends AppendResult {
  frames?: Frame[]
}

/** One append of a store's coalesced appends (see EngineApi.appendMany). */
export type AppendItem =
  | { kind: 'append'; handle: number; bodies: string[]; options?: unknown }
  | { kind: 'external'; handle: number; options: unknown }

/** What became of one item of appendMany: its answer, or the error it failed with. */
export type AppendOutcome = AppendAnswer | { error: WireError }

/** An error as it crosses the worker inside an answer (errors.ts: toWireError, fromWireError). */
export interface WireError {
  code?: string
  message: string
  sessionId?: string
  seq?: number
  stack?: string
}

/** The seqs an append gave its events: `firstSeq` to `lastSeq`, both included. */
export interface AppendResult {
  /** The seq of the first event appended. */
  firstSeq: number
  /** The seq of the last event appended (the log's length is now `lastSeq + 1`). */
  lastSeq: number
}

export interface EngineApi {
  /** `push` is called with frames; across a worker it stays on the client's side (FramesMessage). */
  init(options: HostOptions, push?: (frames: Frame[]) => void): Promise<void>
  createSession(options: unknown): Promise<HandleInfo>
  openSession(id: unknown): Promise<HandleInfo>
  /** With `{ at }`: a view frozen at that point (handle 0: nothing to close, nothing pushed). */
  observe(id: unknown, options?: unknown): Promise<HandleInfo>
  spawn(handle: number, options: unknown, bodies: string[]): Promise<HandleInfo>
  fork(handle: number, options: unknown): Promise<HandleInfo>
  /** Events as bodies made by `encodeEventBody` on the client. */
  append(handle: number, bodies: string[], options?: unknown): Promise<AppendAnswer>
  recordExternal(handle: number, options: unknown): Promise<AppendAnswer>
  /**
   * The appends a store made in one turn, in one message each way: each item is appended (or
   * fails) on its own, in order, as if called alone; concurrent ones share a group commit.
   */
  appendMany(items: AppendItem[]): Promise<AppendOutcome[]>
  closeHandle(handle: number): Promise<void>
  /** Store.rotateKey's first step: the key record flipped to `key`; how many sessions to re-encrypt. */
  rotateKeyStart(key: unknown): Promise<RotationStart>
  /** Re-encrypts the next session of this host's rotation (src/host/rotate-key.ts). */
  rotateKeyStep(): Promise<RotationStep>
  /** Drops the old data keys once every session was re-encrypted. */
  rotateKeyFinish(): Promise<void>
  listSessions(options?: unknown): Promise<SessionHeader[]>
  deleteSession(id: unknown): Promise<void>
  readEvents(id: unknown, from: number, to: number | undefined): Promise<EventsPage>
  listChildren(id: unknown, options: { recursive?: boolean }, cancelToken: number): Promise<SubagentListEntry[]>
  /** How much `verify` will read. */
  verifyPlan(): Promise<VerifyTotals>
  /** Verifies sessions after `after` until about `budget` events are read; `next` is where to go on. */
  verifyStep(after: string | null, budget: number, cancelToken: number): Promise<VerifyStep>
  cancel(token: number): Promise<void>
  /** Sync between stores: a bounded batch after a cursor, and importing one (src/core/changes.ts). */
  changesSince(cursor: unknown, options: unknown): Promise<Changes>
  applyChanges(batch: unknown): Promise<ApplyResult>
  /** Starts (or joins) a replication with a sync server; its id. */
  replicate(spec: ReplicationSpec): Promise<number>
  /** The replication's next event after version `seen` (a long-poll). */
  replicationEvent(id: number, seen: number): Promise<ReplicationEvent>
  /** Fresh headers asked for by a replicationEvent's `headersWanted`. */
  replicationHeaders(id: number, ticket: number, headers: Record<string, string> | { error: string }): Promise<void>
  /** Resolves once everything local was pushed and the server had nothing more, in a round begun after the call. */
  replicationSynced(id: number): Promise<void>
  /** The app's page saw the browser come back online (a worker's global may not be told): retry now. */
  replicationOnline(id: number): Promise<void>
  replicationClose(id: number): Promise<void>
  close(): Promise<void>
}

/** rotateKeyStart's answer: the sessions the rotation walks (those there when it began). */
export interface RotationStart {
  sessions: number
}

/** One step of a rotation: a session walked (its events; `locked`: left for a later run), or `done`. */
export interface RotationStep {
  done: boolean
  events: number
  locked?: boolean
}

/** What store.connect sends the engine: no functions (they cannot cross a worker). */
export interface ReplicationSpec {
  /** The server's base URL, resolved, without a trailing slash. */
  url: string
  /** The store's meta key for the cursors (from the URL and the sessions). */
  key: string
  options: { sessions?: string[]; live?: boolean | 'long-poll'; pollMs?: number; maxBackoffMs?: number }
  /** Static headers, when the app gave an object. */
  headers?: Record<string, string>
  /** The app gave a function: the engine asks for headers before each request. */
  headersFromClient: boolean
}

/** A replication's state, pushed by long-poll; `headersWanted` asks the client for fresh headers. */
export interface ReplicationEvent {
  version: number
  state: import('./changes').ReplicationState
  headersWanted?: number
  closed?: boolean
}

