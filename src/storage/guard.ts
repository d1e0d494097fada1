// What every adapter checks and how every adapter fails, written once so that all of them
// fail alike: the closed check, tracking of calls in flight (close waits for them), argument
// checks, the errors of the storage contract, and the meaning of a platform's own errors.
import { SessionfoldError, where, type ErrorCode } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import { isCount } from '../core/limits'
import { safeParse, storedHeaderSchema } from '../core/schemas'
import { assertSessionId, describe, utf8Length } from '../core/validate'
import type { EncodedEvent } from '../core/validate'
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type NewSession, type ReadRange, type RecordReplacement, type SessionInfo } from './types'

export { assertSessionId }

/** One adapter's open/closed state and the calls it has in flight. */
export interface Guard {
  /** Throws CLOSED once close() was called. */
  check(): void
  /**
   * Runs a call: CLOSED after close, tracked so that close() waits for it. `mapError` turns
   * what the call throws into the error the caller sees (see toStorageError).
   */
  run<T>(call: () => Promise<T>, mapError?: (err: unknown) => unknown): Promise<T>
  /** How many calls are in flight. */
  inFlight(): number
  /**
   * Refuses new calls, waits for those in flight (and any they start), then `release`s the
   * adapter's files or connections. Every call of close() answers with the first one's promise.
   */
  close(release?: () => Promise<void>): Promise<void>
}

/** The guard of an adapter named `kind` ('memory', 'fs', 'indexeddb') in messages. */
export function createGuard(kind: string): Guard {
  let isClosed = false
  let closing: Promise<void> | undefined
  const inFlight = new Set<Promise<unknown>>()
  const check = () => {
    if (isClosed) throw closed(kind)
  }
  return {
    check,
    run(call, mapError) {
      if (isClosed) return Promise.reject(closed(kind))
      const task = mapError
        ? call().catch((err: unknown) => {
            throw mapError(err)
          })
        : call()
      inFlight.add(task)
      const settle = () => inFlight.delete(task)
      task.then(settle, settle)
      return task
    },
    inFlight: () => inFlight.size,
    close(release) {
      closing ??= (async () => {
        isClosed = true
        while (inFlight.size > 0) await Promise.allSettled([...inFlight])
        await release?.()
      })()
      return closing
    },
  }
}

/**
 * What a platform's error means for the caller: a full disk (ENOSPC, EDQUOT) or an exhausted
 * browser quota (QuotaExceededError), a value the platform cannot store (DataCloneError: the
 * caller's data, not the store, is at fault), or else storage that failed.
 */
export function platformErrorCode(err: unknown): Extract<ErrorCode, 'STORAGE_QUOTA_EXCEEDED' | 'INVALID_ARGUMENT' | 'STORAGE_UNAVAILABLE'> {
  const { code, name } = (err ?? {}) as { code?: unknown; name?: unknown }
  if (code === 'ENOSPC' || code === 'EDQUOT' || name === 'QuotaExceededError') return 'STORAGE_QUOTA_EXCEEDED'
  if (name === 'DataCloneError') return 'INVALID_ARGUMENT'
  return 'STORAGE_UNAVAILABLE'
}

/**
 * `err` as the caller sees it: a SessionfoldError as it is, any other error under the code
 * platformErrorCode gives it, in the adapter's own words (`message`) and with `err` as cause.
 */
export function toStorageError(
  err: unknown,
  sessionId: SessionId | undefined,
  message: (code: ReturnType<typeof platformErrorCode>) => string,
): SessionfoldError {
  if (err instanceof SessionfoldError) return err
  const code = platformErrorCode(err)
  return new SessionfoldError(code, message(code), { sessionId, cause: err })
}

/** Throws INVALID_ARGUMENT unless `header` is a well-formed header. */
export function assertHeader(header: unknown): asserts header is SessionHeader {
  const parsed = safeParse(storedHeaderSchema, header)
  if (!parsed.success) {
    const id = (header as { id?: unknown } | null)?.id
    throw new SessionfoldError('INVALID_ARGUMENT', `header for session ${describe(id)} is malformed: ${parsed.error.issues.map((i) => i.message).join('; ')}`)
  }
}

/** INVALID_ARGUMENT, before anything is read, unless getSessions was given an array of session ids and a count. */
export function assertGetSessions(ids: unknown, maxEvents: unknown): asserts ids is readonly SessionId[] {
  if (!Array.isArray(ids)) throw new SessionfoldError('INVALID_ARGUMENT', `getSessions takes an array of session ids, got ${describe(ids)}`)
  for (const id of ids) assertSessionId(id)
  if (!isCount(maxEvents))
    throw new SessionfoldError('INVALID_ARGUMENT', `getSessions: maxEvents must be a count (an integer >= 0), got ${describe(maxEvents)}`)
}

/**
 * INVALID_ARGUMENT, before anything is written, unless `sessions` is an array of new sessions:
 * each a well-formed header, events numbered 0..n-1 (SEQ_CONFLICT's test, reported here as a
 * bad argument) of at least its seed, no id twice.
 */
export function assertNewSessions(sessions: unknown): asserts sessions is readonly NewSession[] {
  if (!Array.isArray(sessions)) throw new SessionfoldError('INVALID_ARGUMENT', `createSessions takes an array of sessions, got ${describe(sessions)}`)
  const ids = new Set<string>()
  for (const s of sessions as Partial<NewSession>[]) {
    assertHeader(s?.header)
    const { header, events } = s as NewSession
    if (ids.has(header.id)) throw new SessionfoldError('INVALID_ARGUMENT', `createSessions: ${where(header.id)} is given twice`, { sessionId: header.id })
    ids.add(header.id)
    const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `createSessions: ${where(header.id)} ${why}`, { sessionId: header.id })
    if (!Array.isArray(events)) throw bad(`has no array of events, got ${describe(events)}`)
    if (events.length < header.seedLength) throw bad(`has seedLength ${header.seedLength} but ${events.length} events`)
    events.forEach((e, i) => {
      if (e?.event?.seq !== i || typeof e.json !== 'string') throw bad(`has an event at index ${i} that is not seq ${i} with its JSON`)
    })
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
    throw new SessionfoldError('INVALID_ARGUMENT', `${where(header.id)} has seedLength ${header.seedLength} but ${seed.length} seed events`, {
      sessionId: header.id,
    })
  }
  assertContinues(header.id, seed, 0)
}

/** Resolves a read range against the log's length: `[from, to)` clamped to the log. */
export function resolveRange(id: SessionId, range: ReadRange | undefined, length: number): { from: number; to: number } {
  const from = range?.from ?? 0
  const to = range?.to ?? length
  for (const [name, v] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (!isCount(v)) {
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

export function alreadyExists(id: SessionId): SessionfoldError {
  return new SessionfoldError('SESSION_EXISTS', `${where(id)} already exists`, { sessionId: id })
}

function closed(kind: string): SessionfoldError {
  return new SessionfoldError('CLOSED', `the ${kind} store is closed`)
}

export function cancelled(id: SessionId): SessionfoldError {
  return new SessionfoldError('CANCELLED', `read of ${where(id)} was cancelled`, { sessionId: id })
}

/** Longest value `putMeta` takes (a replication's cursors are far smaller). */
export const MAX_META_BYTES = 64 * 1024

/** INVALID_ARGUMENT unless `key` is a meta key (the rule of session ids) and `value`, when given, a string of at most MAX_META_BYTES. */
export function assertMeta(key: unknown, value?: unknown): void {
  assertSessionId(key, 'meta key')
  // biome-ignore lint/complexity/noArguments: an omitted value (a key check only) differs from one passed as undefined
  if (arguments.length < 2) return
  if (typeof value !== 'string' || value.length > MAX_META_BYTES) {
    throw new SessionfoldError('INVALID_ARGUMENT', `meta value for ${describe(key)} must be a string of at most ${MAX_META_BYTES} characters`)
  }
}

/** A fresh feed identity: 16 random bytes, hex. */
export function newFeedId(): string {
  const bytes = new Uint8Array(16)
  globalThis.crypto.getRandomValues(bytes)
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** The index after feed position `after` in a feed whose positions are 1-based counts ('' = 0). */
export function feedAfter(after: string, length: number): number {
  if (after === '') return 0
  const n = Number(after)
  if (!Number.isSafeInteger(n) || n < 0 || String(n) !== after)
    throw new SessionfoldError('INVALID_ARGUMENT', `feed position ${describe(after)} is not one of this store's`)
  return Math.min(n, length)
}

/** INVALID_ARGUMENT unless `at` is a history position (a whole number, 1 or more; 0 for a lookup). */
export function assertPosition(id: SessionId, at: unknown, least = 1): asserts at is number {
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < least) {
    throw new SessionfoldError('INVALID_ARGUMENT', `history position of ${where(id)} must be an integer >= ${least}, got ${describe(at)}`, { sessionId: id })
  }
}

/**
 * The header a `replaceRecords` call writes (undefined: the stored one stays), checked against
 * the stored session: INVALID_ARGUMENT for a record whose seq is not below `stored.length` or
 * comes twice, a record that is not `{ event, json }`, and a header of another id, createdAt or
 * seedLength. Each record's length is checked by `sameLength`, where the adapter reads it.
 */
export function checkReplacement(id: SessionId, replacement: RecordReplacement, stored: SessionInfo): SessionHeader | undefined {
  const bad = (message: string, seq?: number) =>
    new SessionfoldError('INVALID_ARGUMENT', `replaceRecords of ${where(id, seq)}: ${message}`, { sessionId: id, seq })
  if (!Array.isArray(replacement?.records)) throw bad('not { records }')
  const seen = new Set<number>()
  for (const r of replacement.records) {
    const seq = (r as Partial<EncodedEvent> | null)?.event?.seq as number
    if (typeof r?.json !== 'string' || !Number.isInteger(seq) || !(seq >= 0 && seq < stored.length) || seen.has(seq))
      throw bad('a record not { event, json }, or of a seq not stored, or twice', seq)
    seen.add(seq)
  }
  const header = replacement.header
  if (header === undefined) return undefined
  assertHeader(header)
  const was = stored.header
  if (header.id !== was.id || header.createdAt !== was.createdAt || header.seedLength !== was.seedLength) {
    throw bad('a header of another id, createdAt or seedLength')
  }
  return header
}

/** INVALID_ARGUMENT unless a replacing record (its JSON) is exactly as long as the stored one. */
export function sameLength(id: SessionId, seq: number, storedBytes: number | undefined, json: string): void {
  const given = utf8Length(json)
  if (given !== storedBytes)
    throw new SessionfoldError(
      storedBytes === undefined ? 'CORRUPT_LOG' : 'INVALID_ARGUMENT',
      `replaceRecords of ${where(id, seq)}: ${given} bytes where ${storedBytes} are stored`,
      { sessionId: id, seq },
    )
}
