import type { z } from 'zod/mini'
import type { WireError } from './errors'
import type {
  appendInputSchema,
  createSessionInputSchema,
  forkInputSchema,
  listSessionsInputSchema,
  observeAtInputSchema,
  recordExternalInputSchema,
  spawnInputSchema,
} from './inputs'
import type { Json, SessionEvent, SessionHeader } from './model'
import type { StreamAnswer } from './streams'
import type { ProjectionFault, ProjectionSnapshot } from './projection'

/**
 * What a host sends unasked, on one channel: a worker's port (a plain PushMessage beside the
 * answers to calls, which comlink ignores), or a callback in this thread. One channel keeps
 * one order: a host pushes what changed before it answers the call that changed it, so a
 * writer's values are there when its append resolves, and frames come in their order.
 */
export type Push =
  /** Changes of sessions' values, in order. */
  | { kind: 'frames'; frames: Frame[] }
  /** A replication's new state (see store.connect), or a request for fresh headers. */
  | { kind: 'replication'; id: number; event: ReplicationEvent }
  /** The store's session index may have changed (while the client watches it: `watchSessions(true)`). */
  | { kind: 'sessions' }
  /** Answers to Durable Streams requests sent together (EngineApi.streamMany), pushed as they are ready. */
  | { kind: 'streams'; answers: StreamReply[] }

/** One request's answer of EngineApi.streamMany, by the number the client gave it: its answer, or the error it failed with. */
export type StreamReply = [n: number, answer: StreamAnswer] | [n: number, answer: null, error: WireError]

/** A push as it crosses a worker's port. */
export interface PushMessage {
  type: typeof PUSH_MESSAGE
  push: Push
}

export const PUSH_MESSAGE = 'sessionfold/push'

/** A change of one session's values, pushed to every client that has a handle on it. */
export interface Frame {
  /** The frame's place among all frames of its host: 1, 2, 3… (a client checks that none is missing). */
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
  /**
   * The session's log was replaced by another history of it (a sync conflict resolved by a
   * fork, DESIGN §15): `values` holds every view anew and `seq` may be lower than before.
   */
  reset?: true
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
 * What a client sends with its calls (EngineApi, the host's methods): each inferred from its
 * schema in inputs.ts, which the engine parses every one of them with (it trusts nothing that
 * crossed a worker).
 */
export type CreateSessionInput = z.infer<typeof createSessionInputSchema>
/** `spawn`'s options, its events sent beside them as bodies. */
export type SpawnInput = z.infer<typeof spawnInputSchema>
export type ForkInput = z.infer<typeof forkInputSchema>
export type AppendInput = z.infer<typeof appendInputSchema>
export type RecordExternalInput = z.infer<typeof recordExternalInputSchema>
export type ListSessionsInput = z.infer<typeof listSessionsInputSchema>
export type ObserveAtInput = z.infer<typeof observeAtInputSchema>

/** One append of a store's coalesced appends (see EngineApi.appendMany). */
export type AppendItem =
  | { kind: 'append'; handle: number; bodies: string[]; options?: AppendInput }
  | { kind: 'external'; handle: number; options: RecordExternalInput }

/** What became of one item of appendMany: its answer, or the error it failed with. */
export type AppendOutcome = AppendResult | { error: WireError }

export type { WireError } from './errors'

/** The seqs an append gave its events: `firstSeq` to `lastSeq`, both included. */
export interface AppendResult {
  /** The seq of the first event appended. */
  firstSeq: number
  /** The seq of the last event appended (the log's length is now `lastSeq + 1`). */
  lastSeq: number
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
  options: { sessions?: string[]; live?: boolean | 'long-poll'; pollMs?: number; maxBackoffMs?: number; onConflict?: 'fork' | 'report' }
  /** Static headers, when the app gave an object. */
  headers?: Record<string, string>
  /** The app gave a function: the engine asks for headers before each request. */
  headersFromClient: boolean
}

/** A replication's state, pushed (see Push); `headersWanted` asks the client for fresh headers. */
export interface ReplicationEvent {
  version: number
  state: import('./changes').ReplicationState
  headersWanted?: number
  closed?: boolean
}
