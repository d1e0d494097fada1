// The change feed: after each fold, the views of a live session that differ from what its
// listeners last received are pushed to them. Views are computed only while someone listens.
import { SessionfoldError, where } from '../../src/errors'
import type { Json, SessionHeader } from '../../src/model'
import type { ProjectionFault } from '../../src/projection'
import { viewOf, type UnitSlot } from '../units'

/** What changed after a fold: the new `asOfSeq`, the views that differ from the last push, and the faults. */
export interface ProjectionChange {
  seq: number
  values: Record<string, Json | null>
  faults: Record<string, ProjectionFault>
}

export type ChangeListener = (change: ProjectionChange) => void

/** One live session's listeners, and per key the value last pushed to them with its JSON. */
export interface FeedState {
  listeners: Set<ChangeListener>
  pushed: Map<string, { value: Json | null; json: string }>
}

/** What the feed reads of a live session. */
export interface FeedSession {
  readonly header: SessionHeader
  readonly slots: readonly UnitSlot[]
  readonly log: { readonly asOfSeq: number }
  readonly feed: FeedState
}

export function newFeed(): FeedState {
  return { listeners: new Set(), pushed: new Map() }
}

/** Pushes changes of the session's views to `listener` until the returned function is called. */
export function watch(session: FeedSession, listener: ChangeListener): () => void {
  const { feed } = session
  if (feed.listeners.size === 0) {
    // Start from the current values: later pushes carry only what differs from them.
    feed.pushed.clear()
    for (const slot of session.slots) {
      if (!slot.def.view) continue
      const value = viewOf(slot)
      feed.pushed.set(slot.def.key, { value, json: JSON.stringify(value) })
    }
  }
  feed.listeners.add(listener)
  return () => {
    feed.listeners.delete(listener)
  }
}

/** Tells the listeners what the last fold changed; a throwing listener is reported, not fatal. */
export function notify(session: FeedSession, onError: (err: SessionfoldError) => void): void {
  const { feed } = session
  if (feed.listeners.size === 0) return // views are computed only while someone listens
  const values: Record<string, Json | null> = {}
  const faults: Record<string, ProjectionFault> = {}
  for (const slot of session.slots) {
    if (slot.fault) faults[slot.def.key] = slot.fault
    if (!slot.def.view) continue
    const value = viewOf(slot) // cached while the state reference is unchanged
    const last = feed.pushed.get(slot.def.key)
    if (last?.value === value) continue
    const json = JSON.stringify(value)
    if (last?.json === json) continue
    feed.pushed.set(slot.def.key, { value, json })
    values[slot.def.key] = value
  }
  const change: ProjectionChange = { seq: session.log.asOfSeq, values, faults }
  for (const listener of feed.listeners) {
    try {
      listener(change)
    } catch (err) {
      onError(new SessionfoldError('INVALID_ARGUMENT', `a projection listener of ${where(session.header.id)} threw: ${(err as Error)?.message ?? err}`, { sessionId: session.header.id, cause: err }))
    }
  }
}
