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
  'KEY_REJECTED',
] as const

/** One of {@link ERROR_CODES}: what `SessionfoldError.code` holds. */
export type ErrorCode = (typeof ERROR_CODES)[number]

/** The optional details of a {@link SessionfoldError}. */
export interface ErrorDetails {
  /** The session involved, when there is one. */
  sessionId?: string
  /** The seq involved, when there is one. */
  seq?: number
  /** The underlying error (an I/O error, …), kept as the error's `cause`. */
  cause?: unknown
}

/**
 * The one error class of sessionfold. `code` is stable; the message names the
 * session and seq involved.
 *
 * @example
 * try { await session.append(event, { expectedSeq: 3 }) }
 * catch (err) { if (isSessionfoldError(err, 'SEQ_CONFLICT')) retry() }
 */
export class SessionfoldError extends Error {
  /** Always `'SessionfoldError'`. */
  override readonly name = 'SessionfoldError'
  /** What went wrong, stable across versions and across the worker: switch on this, not on the message. */
  readonly code: ErrorCode
  /** The session involved, when there is one. */
  readonly sessionId?: string
  /** The seq involved, when there is one. */
  readonly seq?: number

  /** Errors are made by sessionfold; `details` carries the session, seq and cause involved. */
  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.code = code
    if (details.sessionId !== undefined) this.sessionId = details.sessionId
    if (details.seq !== undefined) this.seq = details.seq
  }
}

/**
 * True when `err` is a SessionfoldError (optionally with one of the given codes). Given codes,
 * it narrows `err.code` to them, and a false answer leaves a SessionfoldError a SessionfoldError
 * (with another code).
 */
export function isSessionfoldError<C extends ErrorCode = ErrorCode>(
  err: unknown,
  ...codes: C[]
): err is SessionfoldError & {
  /** One of the codes asked for. */
  readonly code: C
} {
  return err instanceof SessionfoldError && (codes.length === 0 || (codes as readonly ErrorCode[]).includes(err.code))
}

/** `session "x"` or `session "x" at seq 4`, for messages. */
export function where(sessionId: string, seq?: number): string {
  return seq === undefined ? `session "${sessionId}"` : `session "${sessionId}" at seq ${seq}`
}

/**
 * An error as it crosses the worker: inside an answer (protocol.ts: AppendOutcome), or thrown
 * (transfer.ts). `code` is a SessionfoldError's, absent for any other error.
 */
export interface WireError {
  code?: string
  message: string
  sessionId?: string
  seq?: number
  stack?: string
}

/** A thrown value as it crosses the worker inside an answer (see protocol.ts: AppendOutcome). */
export function toWireError(err: unknown): WireError {
  if (err instanceof SessionfoldError) return { code: err.code, message: err.message, sessionId: err.sessionId, seq: err.seq, stack: err.stack }
  return { message: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack }
}

/** The error a wire error stands for: a SessionfoldError with its code, session and seq, else a plain Error. */
export function fromWireError(wire: { code?: unknown; message?: unknown; sessionId?: unknown; seq?: unknown; stack?: unknown }): Error {
  const message = typeof wire.message === 'string' ? wire.message : 'unknown error in the sessionfold worker'
  const err =
    typeof wire.code === 'string' && (ERROR_CODES as readonly string[]).includes(wire.code)
      ? new SessionfoldError(wire.code as ErrorCode, message, {
          sessionId: typeof wire.sessionId === 'string' ? wire.sessionId : undefined,
          seq: typeof wire.seq === 'number' ? wire.seq : undefined,
        })
      : new Error(message)
  if (typeof wire.stack === 'string') err.stack = `${err.stack}\n    --- in the sessionfold worker ---\n${wire.stack}`
  return err
}

/** What was thrown, as text for a message. Never throws itself, whatever was thrown (an object String() cannot convert, a throwing getter). */
export function thrownText(err: unknown): string {
  try {
    return err instanceof Error ? String(err.message) : String(err)
  } catch {
    return 'something thrown that cannot be shown as text'
  }
}

/**
 * Calls `call` with each of `listeners` (a copy: one may (un)subscribe while it is called). A
 * listener's failure is its own, as a Replication's subscriber's is: the others hear the change
 * all the same, and nothing escapes into the store's machinery (a rejection left unhandled, an
 * exception thrown from a microtask, a copy stopped). Where the platform has `reportError`
 * (browsers), the error is reported there, as a failing event listener's is.
 */
export function tellEach<L>(listeners: Iterable<L>, call: (listener: L) => void): void {
  for (const listener of [...listeners]) {
    try {
      call(listener)
    } catch (err) {
      ;(globalThis as { reportError?: (err: unknown) => void }).reportError?.(err)
    }
  }
}
