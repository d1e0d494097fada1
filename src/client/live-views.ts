// The projection views of a store's open handles, by session. Frames pushed by the host reach
// the views of their session here, in the host's order (one channel keeps it), once checked: a
// frame we cannot trust stops views instead.
import { SessionfoldError, where } from '../core/errors'
import { frameProblem } from './answer-checks'
import { isSessionId } from '../core/limits'
import type { SessionId } from '../core/model'
import type { Frame, HandleInfo } from '../core/protocol'
import { ProjectionMapView } from './projection-view'

export class LiveViews {
  readonly #bySession = new Map<SessionId, Set<ProjectionMapView>>()
  /** The n of the next frame: each frame must be the host's next, none missing or repeated. */
  #next = 1
  /** Set once frames are out of order: every view, new ones too, has stopped. */
  #broken: SessionfoldError | undefined

  /** The view of a new handle: its session's values from the handle's snapshot on. */
  open(info: HandleInfo): ProjectionMapView {
    const view = new ProjectionMapView(info.snapshot)
    if (this.#broken) view._fail(this.#broken)
    let set = this.#bySession.get(info.header.id)
    if (!set) this.#bySession.set(info.header.id, (set = new Set()))
    set.add(view)
    return view
  }

  /** The handle closed: its view hears no more frames. */
  forget(id: SessionId, view: ProjectionMapView): void {
    const set = this.#bySession.get(id)
    set?.delete(view)
    if (set?.size === 0) this.#bySession.delete(id)
  }

  /** Frames pushed by the host, applied as they come: each must be the next in the host's order (Frame.n). */
  push(frames: Frame[]): void {
    if (this.#broken) return
    if (!Array.isArray(frames)) {
      this.failAll(new SessionfoldError('PROJECTIONS_UNAVAILABLE', 'the worker sent frames that are not a list'))
      return
    }
    for (const frame of frames) {
      const n = (frame as Partial<Frame> | null)?.n
      if (n !== this.#next) {
        // A frame missing, repeated or out of order: values after it cannot be trusted for any
        // session, so no handle of this store can follow its session from now on.
        this.#broken = new SessionfoldError(
          'PROJECTIONS_UNAVAILABLE',
          typeof n === 'number' && Number.isSafeInteger(n) && n >= 1
            ? `the worker sent frame ${n} where frame ${this.#next} was due`
            : 'the worker sent a frame without its place in order',
        )
        this.failAll(this.#broken)
        return
      }
      this.#next++
      this.#apply(frame)
    }
  }

  #apply(frame: Frame): void {
    const problem = frameProblem(frame)
    const sessionId = (frame as Partial<Frame> | null)?.sessionId
    const named = isSessionId(sessionId)
    if (problem) {
      // Values we cannot trust are not shown: the handles on that session stop following. A
      // frame that names no session could have been any session's: none can follow it (else
      // an append waiting to read its own write would wait forever).
      const err = new SessionfoldError(
        'PROJECTIONS_UNAVAILABLE',
        `the worker sent a bad frame${named ? ` for ${where(sessionId)}` : ''}: ${problem}`,
        named ? { sessionId } : {},
      )
      for (const view of named ? (this.#bySession.get(sessionId) ?? []) : this.#all()) view._fail(err)
      return
    }
    const views = this.#bySession.get(sessionId as string) ?? []
    if (frame.gone) {
      // Deleted (here, in another tab or process): its views end, saying so; later calls on them reject.
      const err = new SessionfoldError('SESSION_NOT_FOUND', frame.gone.message, { sessionId: sessionId as string })
      for (const view of views) view._fail(err)
      this.#bySession.delete(sessionId as string)
      return
    }
    for (const view of views) view._apply(frame)
  }

  /** Every view stops with `error`: the store closed, or its worker died. */
  failAll(error: SessionfoldError): void {
    for (const view of this.#all()) view._fail(error)
  }

  clear(): void {
    this.#bySession.clear()
  }

  #all(): ProjectionMapView[] {
    return [...this.#bySession.values()].flatMap((set) => [...set])
  }
}
