// The shapes that move between stores: a change batch, the cursor that says what a receiver
// was already sent, and what applying a batch did. Types only, all plain JSON, so a batch
// crosses a worker, an Electron IPC channel or a socket as it is.
import type { LifecycleWitness, SessionEvent, SessionHeader, SessionId } from './model'

/** A run of one session's events, with its header: events[i].seq === from + i. */
export interface ChangeEntry {
  /** The session's header, as the sending store has it. */
  header: SessionHeader
  /** The seq of the first event of `events`. */
  from: number
  /** Contiguous events from seq `from`. */
  events: SessionEvent[]
  /**
   * The sending store's chain value at `from`: the witness of its events `[0, from)`, on every
   * entry with `from > 0` (see `src/core/chain.ts`). The receiver applies the entry only onto a log
   * with the same value there; otherwise the two histories parted before `from`, and it is a
   * conflict.
   */
  chain?: string
  /** The session's length in the sending store when the batch was made (informative). */
  length?: number
}

/**
 * A deleted session (DESIGN §15): the id and the `createdAt` of the life that was deleted.
 * Kept by every store that deleted it or was told of it, so a copy of that life that comes back
 * (from a device that was offline) is refused rather than imported. The id may be used again
 * for a new session, with another `createdAt`.
 */
export interface Tombstone {
  /** The session deleted. */
  id: SessionId
  /** The `createdAt` of its header: which life of the id was deleted. */
  createdAt: number
  /** When it was deleted (ms since the epoch), on the store that deleted it first. */
  deletedAt: number
}

/**
 * A bounded batch of headers and events, made by `store.changesSince` and applied by
 * `store.applyChanges`. Plain JSON (structured-clone and JSON safe).
 */
export interface ChangeBatch {
  /** The batch format's version. */
  v: 1
  /** One entry per session with something to send. */
  sessions: ChangeEntry[]
  /**
   * Sessions deleted on the sending side (or known to it as deleted): the receiver deletes its
   * copy of each (of that life) and keeps the tombstone. Applied before `sessions`.
   */
  deleted?: Tombstone[]
}

/**
 * Where a receiver stands. Plain JSON and small; keep it with the receiver and pass it back.
 * `null` (or no cursor) means "from the beginning"; sending again what the receiver has is
 * harmless. A store with a change feed (every adapter of this package) makes
 * {@link FeedCursor}s; {@link SessionMapCursor}s are still read, and made when `until` or
 * `head` is asked for.
 */
export type ChangeCursor = FeedCursor | SessionMapCursor

/**
 * A position in the sending store's change feed, so a call costs what was written since it,
 * whatever the number of sessions. Its size does not grow with the store.
 */
export interface FeedCursor {
  /** The cursor format's version. */
  v: 2
  /** The sending store's feed identity: a cursor of another store, or of a feed started over, starts over. */
  feed: string
  /** Everything written before this feed position was sent (during `walk`: the feed's head when the walk began). */
  at: string
  /** The first pass over every session, in id order, while it is not finished: the last id sent whole. */
  walk?: {
    /** The last session sent whole (none yet: from the first). */
    after?: SessionId
    /** While the walk's tombstones (sent before its sessions) are not all sent. */
    deleted?: {
      /** The last id whose tombstones were sent (none yet: from the first). */
      after?: SessionId
    }
  }
  /** A session sent in part: its id, the `createdAt` of its life, and how many of its events were sent. */
  part?: [id: SessionId, createdAt: number, sent: number]
}

/**
 * Where a receiver stands, per session: the `createdAt` of the life that was sent and how many
 * of its events were. Grows with the store: made only where `until` or `head` is asked for.
 */
export interface SessionMapCursor {
  /** The cursor format's version. */
  v: 1
  /** Per session sent: the `createdAt` of the life that was sent, and how many of its events. */
  sessions: Record<SessionId, [createdAt: number, length: number]>
  /** The last session of the last batch: the next one starts after it, so every session gets its turn. */
  after?: SessionId
  /**
   * The tombstones (sent before any session): `'sent'` once all were, else the last id whose
   * were (`{}`: none yet). Absent: they are sent from the first.
   */
  deleted?:
    | 'sent'
    | {
        /** The last id whose tombstones were sent (none yet: from the first). */
        after?: SessionId
      }
}

/** Options of `store.changesSince`. */
export interface ChangesOptions {
  /** Only these sessions (default: every session of the store). */
  sessions?: SessionId[]
  /** At most this many events (and headers) per batch, default 1000, at most 10,000. */
  maxEvents?: number
  /**
   * At most about this many bytes of event JSON per batch, default 4 MiB (a single event larger
   * than that still travels, alone). A fork's seed always travels whole, in the batch that
   * creates the fork, since a store creates a fork with its seed atomically.
   */
  maxBytes?: number
  /**
   * Send nothing beyond this state (a `head` of an earlier call): a catch-up that ends even
   * while writers keep appending. Sessions not in it are not sent.
   */
  until?: SessionMapCursor
  /** Also return `head`: every session's `[createdAt, length]` as found by this call (session-map cursors only). */
  head?: boolean
}

/** What `store.changesSince` resolves with. */
export interface Changes {
  /** The batch to pass to the receiving store's `applyChanges`. */
  batch: ChangeBatch
  /** The cursor after this batch: pass it to the next call. */
  cursor: ChangeCursor
  /** Events after the new cursor not in this batch, as counted during this call. */
  pending: number
  /** Nothing was left behind: the receiver has been sent everything there was. */
  done: boolean
  /** Sessions of this store that could not be read (a damaged log), left out of the batch. */
  failed: {
    /** The session. */
    id: SessionId
    /** Its error code, such as `CORRUPT_LOG`. */
    code: string
    /** What is wrong, and where. */
    detail: string
  }[]
  /** With `head: true`: the state of the store seen by this call (for `until`). */
  head?: SessionMapCursor
}

/**
 * Two stores hold different versions of a session: different headers (another life of the id,
 * `reason: 'header'`, `seq: 0`) or different histories (`reason: 'event'`: different events at
 * `seq`, the first seq that differs where the batch shows it, else `from - 1` of an entry whose
 * prefix witness differs: the histories parted at or before it). Neither side was overwritten.
 */
export interface SyncConflict {
  /** The session. */
  id: SessionId
  /** The first seq whose events differ, as far as the batch tells (0 for a header conflict). */
  seq: number
  /** `'header'`: another life of the id; `'event'`: different events at `seq`. */
  reason: 'header' | 'event'
  /** The witness of the version the sending store holds. */
  source: LifecycleWitness
  /** The witness of the version the receiving store holds. */
  target: LifecycleWitness
  /** For `'event'`: the chain values (src/core/chain.ts) the two sides hold at position `at`, which differ. */
  chain?: {
    /** The position compared: both values stand for the events before it. */
    at: number
    /** The sending store's chain value there (from the batch's witness). */
    source: string
    /** The receiving store's. */
    target: string
  }
  /**
   * The fork that took this device's events from `seq` on, once a replication with
   * `onConflict: 'fork'` (the default) moved them: the session itself now holds the server's
   * history, and the fork is pushed like any new session.
   */
  forkedAs?: SessionId
}

/**
 * A session not brought up to date, though nothing conflicts: `locked` (a writer holds it open
 * on the receiving side and new events would have to be appended under it, or it would have to
 * be deleted under it), `gap` (the receiver lacks events before the batch's run: send it from
 * an earlier cursor), `damaged` (the receiver's copy cannot be read), `deleted` (the receiver
 * deleted that life of the session, or was told of its delete: `tombstone` says which; the
 * sender should delete its copy too).
 */
export interface SyncSkip {
  /** The session. */
  id: SessionId
  /** Why it was left behind (see above). */
  reason: 'locked' | 'gap' | 'damaged' | 'deleted'
  /** The same, for people. */
  detail: string
  /** With `'deleted'`: the receiver's tombstone of that life. */
  tombstone?: Tombstone
}

/** What `store.applyChanges` did with a batch. */
export interface ApplyResult {
  /** Sessions created on the receiving side. */
  copiedSessions: number
  /** Events appended on the receiving side. */
  copiedEvents: number
  /** Sessions deleted on the receiving side (the batch's tombstones that named a copy here). */
  deletedSessions: number
  /** Sessions whose versions differ; neither side was changed. */
  conflicts: SyncConflict[]
  /** Sessions left as they were without a conflict (a writer holds them open here, …). */
  skipped: SyncSkip[]
}

/**
 * Where a replication stands, as its last requests to the server found it:
 * - `connecting`: nothing answered yet.
 * - `online`: a request to the server just succeeded (a push, a pull, a live stream's first
 *   message); never said on a guess, so a wrong token goes `connecting` → `error`.
 * - `offline`: the server cannot be reached: a network failure, a timeout, 5xx (507, its disk
 *   full, included), 408 or 429. (A failure of this store's own reads shows so too, with its code.)
 * - `error`: the server refuses (401, 403, 400, other 4xx); it stays `error` while the refused
 *   requests are refused, even if others (a live stream) get through.
 *
 * A subscriber is told each change once: while the server stays away the status stays
 * `offline` (only `retryAt` and `error` move), and the first success after it is `online`,
 * at which every retry waiting for the server, a push included, goes at once.
 */
export type ReplicationStatus = 'connecting' | 'online' | 'offline' | 'error'

/** What a replication's subscribers receive. */
export interface ReplicationState {
  /** Where it stands (see {@link ReplicationStatus}). */
  status: ReplicationStatus
  /** Local events not yet on the server, as last counted (also while offline: each local write recounts). */
  pending: number
  /** Sessions whose versions differ between this store and the server; neither side was changed. */
  conflicts: readonly SyncConflict[]
  /** Events pushed since connect. */
  pushed: number
  /** Events pulled (written here) since connect. */
  pulled: number
  /** The last failure, while status is offline or error. */
  error?: {
    /** A SessionfoldError code, the server's refusal code (UNAUTHORIZED, FORBIDDEN, …) or HTTP_<status>. */
    code: string
    /** What happened, for people. */
    message: string
    /** The HTTP status, when the server answered. */
    status?: number
  }
  /** While offline or refused: when the next try is due (ms since the epoch), for a "retrying in 5 s". The browser's `online` event, or another request that gets through, brings it forward. */
  retryAt?: number
}

/**
 * What came of resolving a conflict by a fork (`ReplicationStore.forkConflict`, DESIGN §15):
 * the fork that took this store's events (`forkedAs`, parting at seq `at`); `'locked'` while the session is open for writing here; `'none'` when nothing had to move
 * (this copy is a prefix of the server's, or another life of the id, which is no event conflict).
 */
export type ConflictFork =
  | {
      /** The fork's id: the session's, then `-f` and 14 hex digits. */
      forkedAs: SessionId
      /** The parting seq: the fork's seed is the common prefix `[0, at)`. */
      at: number
    }
  | 'locked'
  | 'none'
