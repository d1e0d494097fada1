// The public shapes of store.connect (its options, the state a Replication reports, what a
// replication uses of its store) and of store.follow (its options and state).
import type { ApplyResult, ChangeBatch, ChangeCursor, Changes, ChangesOptions, ConflictFork } from '../core/changes'
import type { SessionId } from '../core/model'
import type { StreamAnswer, StreamRequest } from '../core/streams'

/** Options of `store.connect`. */
export interface ConnectOptions {
  /** Headers of every request (a token), or a function called before each request (fresh tokens). */
  headers?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>)
  /** Only these sessions, both ways (default: every session the server lets this caller read, and every local one). */
  sessions?: SessionId[]
  /**
   * Receive the server's appends as they happen: `true`, server-sent events (falling back to
   * long-poll when the answer does not stream); `'long-poll'`, pulls the server holds until
   * something changes; `false` (default), a pull every `pollMs`.
   */
  live?: boolean | 'long-poll'
  /** Aborting it closes the replication. */
  signal?: AbortSignal
  /** How often local writes are looked for, and the server pulled when not live (default 250 ms). */
  pollMs?: number
  /**
   * Longest wait between retries while offline (default 30 s); the first is about 250 ms, each
   * next one doubles, with jitter. Local writes do not shorten a wait; the browser's `online`
   * event and any request to the server that succeeds end it at once.
   */
  maxBackoffMs?: number
  /** The fetch to use (default: the global one). Only with `worker: false`: a function cannot cross to a worker. */
  fetch?: typeof fetch
  /**
   * What happens when this device and the server hold different events at one seq of a
   * session (both wrote while apart). `'fork'` (default): the server's history keeps the id;
   * this device's events after the point where the two part move to a new session, a fork of
   * the common prefix (`origin: 'fork'`, `forkedFrom` the session), which is pushed like any
   * new session; the conflict entry names it (`forkedAs`). Nothing anyone wrote is lost, and
   * every device ends with the same sessions. The move waits while the session is open for
   * writing here; open views of it get the server's values with `meta.reset`. `'report'`: the
   * conflict is only reported, and neither history moves.
   */
  onConflict?: 'fork' | 'report'
}

export type { ReplicationState, ReplicationStatus } from '../core/changes'
import type { ReplicationState, ReplicationStatus } from '../core/changes'

/** What a replication uses of its store: the engine's calls, seen through this narrow interface. */
export interface ReplicationStore {
  /** See `Store.changesSince`. */
  changesSince(cursor: ChangeCursor | null, options?: ChangesOptions): Promise<Changes>
  /** See `Store.applyChanges`. */
  applyChanges(batch: ChangeBatch): Promise<ApplyResult>
  /** Moves this store's events of a conflicted session to a fork and gives the session the server's copy (one entry from seq 0). */
  forkConflict(serverCopy: ChangeBatch): Promise<ConflictFork>
  /** Whether some client holds the session open for writing (a fork waits for it to close). */
  isOpenForWriting(id: SessionId): Promise<boolean>
  /** A record of the store's own (the replication's cursors). */
  getMeta(key: string): Promise<string | undefined>
  /** Stores a record of the store's own. */
  putMeta(key: string, value: string): Promise<void>
}

/** What the loop needs of its Replication. */
export interface LoopHost {
  readonly store: ReplicationStore
  readonly base: string
  readonly key: string
  readonly options: ConnectOptions
  readonly fetch: typeof fetch
  readonly signal: AbortSignal
  state(): ReplicationState
  set(patch: Partial<ReplicationState>): void
  /** The whenSynced() promises registered so far, handed over (a round that starts now settles them). */
  takeWaiting(): (() => void)[]
  /** Gives back promises a failed round could not settle: the next round takes them. */
  returnWaiting(waiting: (() => void)[]): void
  /** The function that ends the loop's current sleep (undefined while it is not sleeping). */
  setKick(kick: (() => void) | undefined): void
  /** Whether a kick came while the loop was not sleeping (and forgets it). */
  consumeKick(): boolean
  /** Calls `f` when the network comes back (the browser's `online` event) until the returned function is called. */
  whenOnline?(f: () => void): () => void
}

/** Options of `store.follow`. */
export interface FollowOptions {
  /** The session the stream is copied into (default: the URL's last segment, when it is a session id). */
  id?: SessionId
  /** Tail the stream as it grows (default true; false: copy up to its tail, then look again every `pollMs`). */
  live?: boolean
  /** Headers of every request (a function: called before each). */
  headers?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>)
  /** Aborting it is `close()`. */
  signal?: AbortSignal
  /** Between looks when not live, and after a copy the store could not take yet (default 1000 ms). */
  pollMs?: number
  /** The longest wait between tries while the server is away (default 30 s). */
  maxBackoffMs?: number
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch
}

/** What a follow's subscribers receive. */
export interface FollowState {
  /** As a replication's (see `ReplicationStatus`); `closed` once the stream was closed by its writer and copied whole. */
  status: ReplicationStatus | 'closed'
  /** The session the stream is copied into. */
  id: SessionId
  /** The stream's offset this copy reached (null before the first message). */
  offset: string | null
  /** Events copied since follow began. */
  copied: number
  /** The last failure, while status is offline or error (as a replication's). */
  error?: {
    /** A SessionfoldError code, or HTTP_<status> for the stream's server's refusal. */
    code: string
    /** What happened, for people. */
    message: string
    /** The HTTP status, when the server answered. */
    status?: number
  }
  /** While offline or refused: when the next try is due (ms since the epoch). */
  retryAt?: number
}

/** What the loop (follow-loop.ts) works with. */
export interface FollowHost {
  readonly url: string
  readonly options: FollowOptions
  request(request: StreamRequest): Promise<StreamAnswer>
  readonly signal: AbortSignal
  state(): FollowState
  set(patch: Partial<FollowState>): void
  setKick(kick: (() => void) | undefined): void
}
