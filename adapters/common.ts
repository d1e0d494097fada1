// Argument checks every adapter makes the same way, so all of them fail alike.
import { SessionfoldError, where } from '../src/errors'
import type { SessionHeader, SessionId } from '../src/model'
import { sessionHeaderSchema } from '../src/schemas'
import { assertSessionId, describe } from '../src/validate'
import type { EncodedEvent } from '../src/validate'
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type ReadRange } from './types'

export { assertSessionId }

/** Throws INVALID_ARGUMENT unless `header` is a well-formed header. */
export function assertHeader(header: unknown): asserts header is SessionHeader {
  const parsed = sessionHeaderSchema.safeParse(header)
  if (!parsed.success) {
    const id = (header as { id?: unknown } | null)?.id
    throw new SessionfoldError(
      'INVALID_ARGUMENT',
      `header for session ${describe(id)} is malformed: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
    )
  }
}

/** SEQ_CONFLICT unless `batch` continues a log of `length` events contiguously. */
export function assertContinues(id: SessionId, batch: readonly EncodedEvent[], length: number): void {
  for (let i = 0; i < batch.length; i++) {
    const seq = batch[i]!.event.seq
    if (seq !== length + i) {
      throw new SessionfoldError(
        'SEQ_CONFLICT',
        i === 0
          ? `append to ${where(id, seq)} conflicts: the log holds ${length} events, so the next seq is ${length}`
          : `batch for ${where(id, seq)} is not contiguous: expected seq ${length + i}`,
        { sessionId: id, seq },
      )
    }
  }
}

/** Seeds must be seqs 0..n-1 and match the header's seedLength. */
export function assertSeed(header: SessionHeader, seed: readonly EncodedEvent[]): void {
  if (seed.length !== header.seedLength) {
    throw new SessionfoldError(
      'INVALID_ARGUMENT',
      `${where(header.id)} has seedLength ${header.seedLength} but ${seed.length} seed events`,
      { sessionId: header.id },
    )
  }
  assertContinues(header.id, seed, 0)
}

/** Resolves a read range against the log's length: `[from, to)` clamped to the log. */
export function resolveRange(id: SessionId, range: ReadRange | undefined, length: number): { from: number; to: number } {
  const from = range?.from ?? 0
  const to = range?.to ?? length
  for (const [name, v] of [['from', from], ['to', to]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new SessionfoldError('INVALID_ARGUMENT', `read of ${where(id)}: ${name} must be an integer >= 0, got ${describe(v)}`, { sessionId: id })
    }
  }
  return { from, to: Math.min(to, length) }
}

export function resolveList(options: { after?: SessionId; limit?: number } | undefined): { after: SessionId | undefined; limit: number } {
  const after = options?.after
  if (after !== undefined) assertSessionId(after, 'list cursor')
  const limit = options?.limit ?? DEFAULT_LIST_LIMIT
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new SessionfoldError('INVALID_ARGUMENT', `list limit must be an integer in 1..${MAX_LIST_LIMIT}, got ${describe(limit)}`)
  }
  return { after, limit }
}

export function notFound(id: SessionId): SessionfoldError {
  return new SessionfoldError('SESSION_NOT_FOUND', `${where(id)} does not exist`, { sessionId: id })
}

export function exists(id: SessionId): SessionfoldError {
  return new SessionfoldError('SESSION_EXISTS', `${where(id)} already exists`, { sessionId: id })
}

export function closed(kind: string): SessionfoldError {
  return new SessionfoldError('CLOSED', `the ${kind} store is closed`)
}

export function cancelled(id: SessionId): SessionfoldError {
  return new SessionfoldError('CANCELLED', `read of ${where(id)} was cancelled`, { sessionId: id })
}

/** Ids sort by UTF-16 code units, which for `[A-Za-z0-9_-]` is byte order everywhere. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Events per page yielded by `readEvents`. */
export const READ_PAGE = 512
