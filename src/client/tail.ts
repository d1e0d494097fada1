// The wait of a live tail (events({ follow: true })): until the handle's values show the session
// grown past the events read so far. Its values follow every writer (this handle, another tab,
// thread or process), so an event they count has been folded, and can be read.
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { ProjectionMapView } from './projection-view'

/**
 * Resolves true once `projections` show more than `at` events; false when `signal` aborts, or
 * the handle closes (it calls each of `enders`) or the store does (CLOSED); rejects with the
 * error that stopped the values otherwise (SESSION_NOT_FOUND: the session was deleted).
 */
export function grownPast(projections: ProjectionMapView, at: number, signal: AbortSignal | undefined, enders: Set<() => void>): Promise<boolean> {
  return new Promise((resolve, reject) => {
    let settled = false
    let off: (() => void) | undefined
    const settle = (outcome: boolean | SessionfoldError) => {
      if (settled) return
      settled = true
      off?.()
      enders.delete(ended)
      signal?.removeEventListener('abort', ended)
      if (outcome instanceof SessionfoldError) reject(outcome)
      else resolve(outcome)
    }
    const ended = () => settle(false)
    signal?.addEventListener('abort', ended, { once: true })
    enders.add(ended)
    if (signal?.aborted) return settle(false)
    // The first call gives the values as they are now, then each advance; the last, the stop.
    off = projections.subscribe((snapshot, meta) => {
      if (meta.error) settle(isSessionfoldError(meta.error, 'CLOSED') ? false : meta.error)
      else if (snapshot.asOfSeq >= at) settle(true)
    })
    if (settled) off()
  })
}
