// The HTTP sync protocol between `store.connect()` (src/sync/connect.ts) and
// `createSyncHandler` (src/sync/server/): paths, limits and the shapes of answers. Types and
// constants only, shared by both sides.
import type { ApplyResult, ChangeBatch } from '../core/changes'

/**
 * The protocol's version, sent as the `sessionfold-sync` header by both sides; the server
 * refuses requests of another. 2: change batch entries past the start carry `chain`, the
 * witness of the sender's prefix (DESIGN §13), which a receiver of version 1 cannot check.
 */
export const SYNC_PROTOCOL = '2'

/** Paths under the handler's base: POST push, GET pull (`?wait=` long-polls), GET live (SSE), GET sessions. */
export const SYNC_PATHS = {
  /** POST: a change batch to apply (answers {@link PushAnswer}). */
  push: '/push',
  /** GET `?cursor=&sessions=&wait=`: the changes after the cursor (answers {@link PullAnswer}). */
  pull: '/pull',
  /** GET `?cursor=&sessions=`: the same as server-sent events (`changes`, `cursor`, `error`). */
  live: '/live',
  /** GET `?after=`: the headers the caller may read, 1000 at a time. */
  sessions: '/sessions',
} as const

/** Largest request body the handler reads by default (a push of one batch of changesSince's default 4 MiB, and room). */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
/** Longest cursor accepted in a query string (sealed by the server, base64url). */
export const MAX_CURSOR_CHARS = 4096
/** Longest long-poll wait the handler grants. */
export const MAX_WAIT_MS = 60_000

/** What GET pull (and each `changes` event of GET live) answers. */
export interface PullAnswer {
  /** The changes after the cursor that the caller may read. */
  batch: ChangeBatch
  /** Pass it to the next pull: opaque (sealed by the server), at most MAX_CURSOR_CHARS. */
  cursor: string
  /** Nothing more was there when this was made. */
  done: boolean
}

/** What POST push answers: applyChanges' result on the server. */
export type PushAnswer = ApplyResult

/** The body of every refusal: a stable code (those of SessionfoldError, or UNAUTHORIZED/FORBIDDEN/NOT_FOUND) and words for people. */
export interface SyncErrorBody {
  /** What was refused. */
  error: {
    /** A stable code: a SessionfoldError code, or UNAUTHORIZED, FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED. */
    code: string
    /** What is wrong, for people. */
    message: string
  }
}
