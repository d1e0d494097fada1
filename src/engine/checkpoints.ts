// The checkpoint policy: when a live session's unit states are written to its checkpoint row
// (at creation, every turn/end, on close, after `everyEvents`, or once quiet for `everyMs`), and
// at what cost.
import type { StorageAdapter } from '../storage/types'
import { SessionfoldError, where } from '../core/errors'
import type { SessionHeader } from '../core/model'
import { checkpointRowOf, type UnitSlot } from './units'
import type { HistoryKeeper, HistoryState } from './history'

/**
 * Checkpoints may take at most 1/CHECKPOINT_BUDGET of a writer's time (see afterWrite): their
 * whole cost, building the row and the storage's write and commit (an fsync on fs, a
 * transaction's commit in IndexedDB), measured on each write, so each adapter is paced by what
 * a row costs there.
 */
const CHECKPOINT_BUDGET = 10

/**
 * A row that is not due (fewer than everyEvents since the last, no turn ended) waits for the
 * session to be quiet for everyMs; a session that never pauses that long gets one at the latest
 * this many times everyMs after its first unsaved event. A row per pause rather than a row per
 * everyMs: with many sessions each appending now and then, rows by the clock cost more than the
 * appends they follow (on PostgreSQL, 400 such sessions of 8 processes ran at half the rate).
 */
const QUIET_MAX_WAITS = 15

/** One live session's checkpoint bookkeeping. */
export interface CheckpointState {
  /** Events folded since the last row was built. */
  since: number
  /** A turn ended since the last row was built. */
  turnEnded: boolean
  /** performance.now() when the last row was started, and what it cost until stored (ms). */
  lastAt: number
  lastCost: number
  timer?: ReturnType<typeof setTimeout>
  /** performance.now() when the first event not in a row was folded (while `since` > 0). */
  unsavedAt?: number
  /** The row being written; one write at a time per session. */
  writing?: Promise<void>
  /** Another row was asked for while one was being written. */
  again: boolean
  /** Where the session's history rows stand (history.ts). */
  history: HistoryState
}

/** What the policy reads of a live session. */
export interface CheckpointSession {
  readonly header: SessionHeader
  readonly slots: readonly UnitSlot[]
  readonly log: { readonly asOfSeq: number; mark?: number }
  readonly checkpoint: CheckpointState
  /** Only a session with a writer here is checkpointed by timer. */
  readonly writer?: unknown
}

export interface CheckpointPolicyOptions {
  storage: Pick<StorageAdapter, 'putCheckpoint'>
  everyEvents: number
  everyMs: number
  onError: (err: SessionfoldError) => void
  /** Keeps some rows as history rows too (absent: an adapter without them). */
  history?: HistoryKeeper
  /** Called as each row is written: what is stored at the same pace goes with it (the session's chain marks). */
  alongside?: (session: CheckpointSession) => void
}

export function newCheckpointState(): CheckpointState {
  return { since: 0, turnEnded: false, lastAt: -Infinity, lastCost: 0, again: false, history: { bytes: 0, rowBytes: 0 } }
}

export class CheckpointPolicy {
  constructor(private readonly options: CheckpointPolicyOptions) {}

  /** After `events` (of `bytes` bytes) were folded: a row now, a row when the budget allows, or one after the quiet period. */
  afterWrite(session: CheckpointSession, events: number, turnEnded: boolean, bytes = 0): void {
    const state = session.checkpoint
    // History rows are built here, at the fold, so they land where they are due (history.ts).
    this.options.history?.afterFold(session, session.log.asOfSeq + 1, bytes)
    if (state.since === 0 && events > 0) state.unsavedAt = performance.now()
    state.since += events
    if (turnEnded) state.turnEnded = true
    this.plan(session)
  }

  /** A row now, when the budget allows, or after the quiet period; none while one is being written (planned again once it is). */
  private plan(session: CheckpointSession): void {
    const state = session.checkpoint
    if (state.writing || state.since === 0) return
    const due = this.isDue(session)
    // A row is O(state) to build (a catalog of 10,000 children: milliseconds), and its write
    // costs a commit. Keep both under a tenth of the time: a due checkpoint waits until 10x the
    // last one's cost has passed since it started, so appends stay O(1) amortised whatever the
    // state's size and whatever a commit costs on this storage.
    const budgetWait = state.lastAt + CHECKPOINT_BUDGET * state.lastCost - performance.now()
    if (due && budgetWait <= 0) {
      void this.write(session)
      return
    }
    // Due but over budget: as soon as the budget allows. Not due: once the session has been
    // quiet for everyMs (each event folded starts the wait again), or at the latest bound.
    const everyMs = this.options.everyMs
    const latest = (state.unsavedAt ?? performance.now()) + QUIET_MAX_WAITS * everyMs - performance.now()
    const delay = due ? budgetWait : Math.max(Math.min(everyMs, latest), budgetWait)
    if (state.timer) clearTimeout(state.timer)
    state.timer = setTimeout(() => {
      state.timer = undefined
      if (state.since > 0 && session.writer) void this.write(session)
    }, delay)
    ;(state.timer as { unref?: () => void }).unref?.()
  }

  /**
   * Writes the row of the current states. Built from folded states only, so it is never ahead
   * of the durable log; one write at a time per session, the latest states winning.
   */
  write(session: CheckpointSession): Promise<void> {
    const state = session.checkpoint
    this.cancel(session)
    if (state.writing) {
      state.again = true
      return state.writing
    }
    const id = session.header.id
    const started = performance.now()
    const { row, skipped } = checkpointRowOf(session.header, session.slots)
    for (const key of skipped) {
      this.options.onError(
        new SessionfoldError('INVALID_ARGUMENT', `state of projection "${key}" for ${where(id)} is not JSON; it will refold`, { sessionId: id }),
      )
    }
    state.since = 0
    state.unsavedAt = undefined
    state.turnEnded = false
    this.options.alongside?.(session)
    state.writing = this.options.storage
      .putCheckpoint(id, row)
      .catch((err: unknown) => {
        this.options.onError(
          new SessionfoldError(
            err instanceof SessionfoldError ? err.code : 'STORAGE_UNAVAILABLE',
            `checkpoint of ${where(id, row.witness ? session.log.asOfSeq : undefined)} was not written: ${(err as Error)?.message ?? err}`,
            { sessionId: id, cause: err },
          ),
        )
      })
      .finally(() => {
        state.writing = undefined
        state.lastCost = performance.now() - started // stored and committed: the whole cost
        if (state.again) {
          // Asked for while this one was written (a writer closing): the latest states, now.
          state.again = false
          void this.write(session)
        } else {
          this.plan(session)
        }
      })
    state.lastAt = started
    state.lastCost = performance.now() - started // built: the cost so far
    return state.writing
  }

  /** Whether a row is due now (everyEvents unsaved, or a turn ended), whatever the pacing. */
  isDue(session: CheckpointSession): boolean {
    const state = session.checkpoint
    return state.turnEnded || state.since >= this.options.everyEvents
  }

  /** Waits until no row of this session is being written. */
  async drain(session: CheckpointSession): Promise<void> {
    while (session.checkpoint.writing) await session.checkpoint.writing
  }

  /** Drops a row planned for later. */
  cancel(session: CheckpointSession): void {
    const state = session.checkpoint
    if (state.timer) {
      clearTimeout(state.timer)
      state.timer = undefined
    }
  }
}
