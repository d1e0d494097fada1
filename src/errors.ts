/** Every code a sessionfold call can fail with. Stable: callers switch on these. */
export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'SESSION_NOT_FOUND',
  'SESSION_EXISTS',
  'SESSION_LOCKED',
  'SEQ_CONFLICT',
  'EVENT_TOO_LARGE',
  'CORRUPT_LOG',
  'STORAGE_QUOTA_EXCEEDED',
  'STORAGE_UNAVAILABLE',
  'CANCELLED',
  'WORKER_TERMINATED',
  'CLOSED',
  'PROJECTIONS_UNAVAILABLE',
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

export interface ErrorDetails {
  /** The session involved, when there is one. */
  sessionId?: string
  /** The seq involved, when there is one. */
  seq?: number
  cause?: unknown
}

/**
 * The one error class of sessionfold. `code` is stable; the message names the
 * session and seq involved.
 *
 * @example
 * try { await session.append(e, { expectedSeq: 3 }) }
 * catch (err) { if (isSessionfoldError(err, 'SEQ_CONFLICT')) retry() }
 */
export class SessionfoldError extends Error {
  override readonly name = 'SessionfoldError'
  readonly code: ErrorCode
  readonly sessionId?: string
  readonly seq?: number

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(
      message,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.code = code
    if (details.sessionId !== undefined) this.sessionId = details.sessionId
    if (details.seq !== undefined) this.seq = details.seq
  }
}

/** True when `err` is a SessionfoldError (optionally with one of the given codes). */
export function isSessionfoldError(
  err: unknown,
  ...codes: ErrorCode[]
): err is SessionfoldError {
  return (
    err instanceof SessionfoldError &&
    (codes.length === 0 || codes.includes(err.code))
  )
}

/** `session "x"` or `session "x" at seq 4`, for messages. */
export function where(sessionId: string, seq?: number): string {
  return seq === undefined
    ? `session "${sessionId}"`
    : `session "${sessionId}" at seq ${seq}`
}
