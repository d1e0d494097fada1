// Watchers: after each fold, the views of a live session that differ from what its watchers
// last received are pushed to them. Views are computed only while someone listens.
import { SessionfoldError, where } from '../core/errors'
import type { Json, SessionHeader } from '../core/model'
import type { ProjectionFault } from '../core/projection'
import { viewGrownFrom, viewOf, type UnitSlot } from './units'

/** What changed after a fold: the new `asOfSeq`, the views that differ from the last push, and the faults. */
export interface ProjectionChange {
  seq: number
  /** The new values of the views that changed (absolute values). */
  values: Record<string, Json | null>
  /**
   * Views among `values` that are lists which only grew: key → the length of the list pushed
   * before, whose items are the new list's first ones (the same references). A listener across
   * a thread sends just the items after it.
   */
  grown?: Record<string, number>
  faults: Record<string, ProjectionFault>
  /** The session is gone (deleted): the last change its listeners get. */
  gone?: { code: 'SESSION_NOT_FOUND'; message: string }
  /**
   * The log was replaced by another history of the session (a sync conflict resolved by a
   * fork): `values` holds every view, and `seq` may be lower than the last change's.
   */
  reset?: true
}

export type ChangeListener = (change: ProjectionChange) => void

/** One live session's listeners, and per key the value last pushed to them (with its JSON, once compared). */
export interface WatchState {
  listeners: Set<ChangeListener>
  pushed: Map<string, { value: Json | null; json?: string }>
}

/** What the feed reads of a live session. */
export interface WatchedSession {
  readonly header: SessionHeader
  readonly slots: readonly UnitSlot[]
  readonly log: { readonly asOfSeq: number }
  readonly feed: WatchState
}

export function newWatchState(): WatchState {
  return { listeners: new Set(), pushed: new Map() }
}

/** Pushes changes of the session's views to `listener` until the returned function is called. */
export function watch(session: WatchedSession, listener: ChangeListener): () => void {
  const { feed } = session
  if (feed.listeners.size === 0) {
    // Start from the current values: later pushes carry only what differs from them.
    feed.pushed.clear()
    for (const slot of session.slots) {
      if (!slot.def.view) continue
      feed.pushed.set(slot.def.key, { value: viewOf(slot) })
    }
  }
  feed.listeners.add(listener)
  return () => {
    feed.listeners.delete(listener)
  }
}

/** Tells the listeners, for the last time, that the session is gone (deleted here or elsewhere). */
export function notifyGone(session: WatchedSession, message: string, onError: (err: SessionfoldError) => void): void {
  tell(session, { seq: session.log.asOfSeq, values: {}, faults: {}, gone: { code: 'SESSION_NOT_FOUND', message } }, onError)
}

/** Tells the listeners every view anew: the session's log was replaced (see ProjectionChange.reset). */
export function notifyReset(session: WatchedSession, onError: (err: SessionfoldError) => void): void {
  const { feed } = session
  feed.pushed.clear()
  const values: Record<string, Json | null> = {}
  const faults: Record<string, ProjectionFault> = {}
  for (const slot of session.slots) {
    const value = slot.def.view ? viewOf(slot) : undefined
    if (slot.fault) faults[slot.def.key] = slot.fault
    if (value === undefined) continue
    feed.pushed.set(slot.def.key, { value })
    values[slot.def.key] = value
  }
  tell(session, { seq: session.log.asOfSeq, values, faults, reset: true }, onError)
}

/** Tells the listeners what the last fold changed; a throwing listener is reported, not fatal. */
export function notify(session: WatchedSession, onError: (err: SessionfoldError) => void): void {
  const { feed } = session
  if (feed.listeners.size === 0) return // views are computed only while someone listens
  const values: Record<string, Json | null> = {}
  const faults: Record<string, ProjectionFault> = {}
  let grown: Record<string, number> | undefined
  for (const slot of session.slots) {
    const key = slot.def.key
    // The view first: a view failing its schema faults its unit, which this change reports.
    const value = slot.def.view ? viewOf(slot) : undefined // cached while the state reference is unchanged
    if (slot.fault) faults[key] = slot.fault
    if (value === undefined) continue
    const last = feed.pushed.get(key)
    if (last?.value === value) continue
    // A list that only grew changed, and by its new items alone: no O(list) comparison.
    const from = last && viewGrownFrom(slot, last.value)
    let json: string | undefined
    if (from !== undefined) {
      ;(grown ??= {})[key] = from
    } else {
      json = JSON.stringify(value)
      if (last && (last.json ??= JSON.stringify(last.value)) === json) continue
    }
    feed.pushed.set(key, { value, json })
    values[key] = value
  }
  tell(session, grown ? { seq: session.log.asOfSeq, values, grown, faults } : { seq: session.log.asOfSeq, values, faults }, onError)
}

/** Calls each listener with `change`; a throwing listener is reported, not fatal. */
function tell(session: WatchedSession, change: ProjectionChange, onError: (err: SessionfoldError) => void): void {
  for (const listener of [...session.feed.listeners]) {
    try {
      listener(change)
    } catch (err) {
      onError(
        new SessionfoldError('INVALID_ARGUMENT', `a projection listener of ${where(session.header.id)} threw: ${(err as Error)?.message ?? err}`, {
          sessionId: session.header.id,
          cause: err,
        }),
      )
    }
  }
}
