// What a host pushes of a session: the changes since its last frame merged into one pending
// frame (each key's latest value, and where a list that only grew started), then numbered
// frames in which a grown list is just its new items.
import type { Json, SessionId } from '../core/model'
import type { Frame } from '../core/protocol'
import type { ProjectionChange } from '../engine/watchers'

export interface PendingFrame {
  seq: number
  values: Map<string, { value: Json | null; grownFrom: number | undefined }>
  faults: Frame['faults']
  gone?: Frame['gone']
  reset?: true
}

/** `change` of session `sessionId` merged into its pending frame in `pending`. */
export function mergeChange(pending: Map<SessionId, PendingFrame>, sessionId: SessionId, change: ProjectionChange): void {
  let frame = pending.get(sessionId)
  if (!frame) pending.set(sessionId, (frame = { seq: change.seq, values: new Map(), faults: change.faults }))
  frame.seq = change.seq
  frame.faults = change.faults
  if (change.gone) frame.gone = { code: change.gone.code, message: change.gone.message, sessionId }
  if (change.reset) {
    // Every value anew: none of those pending before it (nor their growth) counts any more.
    frame.reset = true
    frame.values.clear()
  }
  for (const [key, value] of Object.entries(change.values)) {
    const from = change.grown?.[key]
    const before = frame.values.get(key)
    // Grown since the last push: still grown from where the pending frame started.
    const grownFrom = from === undefined ? undefined : before ? before.grownFrom : from
    frame.values.set(key, { value, grownFrom })
  }
}

/** The frames of `pending`, numbered from `first` (see Frame.n). */
export function framesOf(pending: ReadonlyMap<SessionId, PendingFrame>, first: number): Frame[] {
  const frames: Frame[] = []
  let n = first
  for (const [sessionId, { seq, values: changed, faults, gone, reset }] of pending) {
    const values: Frame['values'] = {}
    let grown: Frame['grown']
    for (const [key, { value, grownFrom }] of changed) {
      // A list that only grew crosses as its new items, not the whole list.
      if (grownFrom === undefined) values[key] = value
      else (grown ??= {})[key] = { from: grownFrom, items: (value as Json[]).slice(grownFrom) }
    }
    const frame: Frame = grown ? { n: n++, sessionId, seq, values, grown, faults } : { n: n++, sessionId, seq, values, faults }
    if (gone) frame.gone = gone
    if (reset) frame.reset = true
    frames.push(frame)
  }
  return frames
}
