// sync(source, target): changesSince on one store, applyChanges on the other, batch after
// batch, so memory stays bounded by a batch whatever the stores hold. Every run starts from
// nothing and compares what both hold, so a run that was killed halfway is simply run again.
// Deletes travel as tombstones, before any session (DESIGN §15): a session deleted on one side
// is deleted on the other, and a copy of a deleted life is not brought back.
import type { ChangesOptions, SessionMapCursor, SyncConflict, SyncSkip } from '../core/changes'
import { SessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import type { Store } from '../client/store'
import { assertSessionId, describe, isPlainObject } from '../core/validate'

/** Options of {@link sync}. */
export interface SyncOptions {
  /** Only these sessions (default: all of them). */
  sessions?: SessionId[]
  /** 'push' (default): source to target. 'both': then what the target has beyond the source back. */
  direction?: 'push' | 'both'
  /** Aborting it rejects with `CANCELLED` between batches; what was applied stays (run sync again to go on). */
  signal?: AbortSignal
  /** After each batch: events handled so far and the total known so far (it grows in 'both'). */
  onProgress?: (progress: { done: number; total: number }) => void
  /** Events per batch (see {@link ChangesOptions}): default 1000, at most 10,000. */
  maxEvents?: number
  /** About this many bytes of event JSON per batch, default 4 MiB. */
  maxBytes?: number
}

/** What {@link sync} did. */
export interface SyncResult {
  /** Sessions created, in either direction. */
  copiedSessions: number
  /** Events appended, in either direction. */
  copiedEvents: number
  /** Sessions deleted, in either direction: the other side had deleted them (its tombstones). */
  deletedSessions: number
  /** Sessions whose versions differ: one entry per session, neither side changed. */
  conflicts: SyncConflict[]
  /** Sessions left behind without a conflict (a writer holds them open on the receiving side, ...). */
  skipped: SyncSkip[]
  /** Sessions that could not be read on the sending side (a damaged log). */
  failed: {
    /** The session. */
    id: SessionId
    /** Its error code, such as `CORRUPT_LOG`. */
    code: string
    /** What is wrong, and where. */
    detail: string
  }[]
}

const KNOWN = ['sessions', 'direction', 'signal', 'onProgress', 'maxEvents', 'maxBytes']

/**
 * Copies missing sessions and missing event suffixes from `source` to `target` (and back with
 * `direction: 'both'`), headers and seqs unchanged. Idempotent and resumable. Two stores with
 * different events at one seq of a session are a conflict: reported, neither side changed,
 * and the rest goes on.
 *
 * @example
 * const { copiedEvents, conflicts } = await sync(laptop, backup, { direction: 'both' })
 */
export async function sync(source: Store, target: Store, options: SyncOptions = {}): Promise<SyncResult> {
  if (!isPlainObject(options as unknown)) throw bad(`sync options must be an object, got ${describe(options)}`)
  for (const key of Object.keys(options)) if (!KNOWN.includes(key)) throw bad(`sync has no option ${describe(key)}`)
  const { sessions, direction = 'push', signal, onProgress, maxEvents, maxBytes } = options
  if (direction !== 'push' && direction !== 'both') throw bad(`sync direction must be 'push' or 'both', got ${describe(direction)}`)
  if (sessions !== undefined) {
    if (!Array.isArray(sessions)) throw bad('sync sessions must be an array of session ids')
    for (const id of sessions) assertSessionId(id)
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad('sync signal must be an AbortSignal')
  if (onProgress !== undefined && typeof onProgress !== 'function') throw bad('sync onProgress must be a function')
  if (source === target) throw bad('sync needs two different stores')

  const result: SyncResult = { copiedSessions: 0, copiedEvents: 0, deletedSessions: 0, conflicts: [], skipped: [], failed: [] }
  const changesOptions: ChangesOptions = {}
  if (sessions !== undefined) changesOptions.sessions = sessions
  if (maxEvents !== undefined) changesOptions.maxEvents = maxEvents
  if (maxBytes !== undefined) changesOptions.maxBytes = maxBytes
  const progress = { done: 0, total: 0 }
  const conflicted = new Set<SessionId>()

  // Session-map cursors (asked for by `head`): the pass back starts from the lengths sent.
  const pass = async (from: Store, to: Store, start: SessionMapCursor | null): Promise<SessionMapCursor> => {
    let cursor = start
    let counted = false
    // The first call's head bounds the pass: it ends even while writers keep appending.
    let until: SessionMapCursor | undefined
    for (;;) {
      if (signal?.aborted) throw new SessionfoldError('CANCELLED', 'sync was cancelled')
      const changes = await from.changesSince(cursor, until ? { ...changesOptions, until } : { ...changesOptions, head: true })
      until ??= changes.head
      const events = changes.batch.sessions.reduce((n, e) => n + e.events.length, 0)
      if (!counted) {
        progress.total += events + changes.pending
        counted = true
      }
      const applied = changes.batch.sessions.length > 0 || changes.batch.deleted ? await to.applyChanges(changes.batch) : undefined
      if (applied) {
        result.copiedSessions += applied.copiedSessions
        result.copiedEvents += applied.copiedEvents
        result.deletedSessions += applied.deletedSessions
        for (const c of applied.conflicts) {
          if (conflicted.has(c.id)) continue
          conflicted.add(c.id)
          result.conflicts.push(c)
        }
        for (const s of applied.skipped) if (!result.skipped.some((k) => k.id === s.id)) result.skipped.push(s)
      }
      for (const f of changes.failed) if (!result.failed.some((k) => k.id === f.id)) result.failed.push(f)
      progress.done += events
      progress.total = Math.max(progress.total, progress.done + changes.pending)
      onProgress?.({ ...progress })
      cursor = changes.cursor as SessionMapCursor
      if (changes.done) return cursor
    }
  }

  const sent = await pass(source, target, null)
  // Back: everything the source had was compared with the target on the way there, so only
  // what the target holds beyond the source's lengths (the cursor of that pass) goes back.
  // A conflicted session goes back from seq 0, so the source finds the same conflict rather
  // than take the target's suffix of a history that differs earlier.
  for (const id of conflicted) delete sent.sessions[id]
  // The target's tombstones are its own: all of them go back.
  delete sent.deleted
  if (direction === 'both') await pass(target, source, sent)
  return result
}

function bad(message: string): SessionfoldError {
  return new SessionfoldError('INVALID_ARGUMENT', message)
}
