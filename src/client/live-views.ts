// The projection views of a store's open handles, by session. Frames pushed by the host reach
// the views of their session here, once checked: a frame we cannot trust stops views instead.
import { SessionfoldError, where } from '../errors'
import { frameProblem } from './answer-checks'
import { isSessionId } from '../limits'
import type { SessionId } from '../model'
import type { Frame, HandleInfo } from '../protocol'
import { ProjectionMapView } from './projection-view'

export class LiveViews {
  readonly #bySession = new Map<SessionId, Set<ProjectionMapView>>()

  /** The view of a new handle: its session's values from the handle's snapshot on. */
  open(info: HandleInfo): ProjectionMapView {
    const view = new ProjectionMapView(info.snapshot)
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

  /** Frames pushed by the host. */
  push(frames: Frame[]): void {
    if (!Array.isArray(frames)) {
      this.failAll(new SessionfoldError('PROJECTIONS_UNAVAILABLE', 'the worker sent frames that are not a list'))
      return
    }
    for (const frame of frames) {
      const problem = frameProblem(frame)
      const sessionId = (frame as Partial<Frame> | null)?.sessionId
      const named = isSessionId(sessionId)
      if (problem) {
        // Values we cannot trust are not shown: the handles on that session stop following. A
        // frame that names no session could have been any session's: none can follow it (else
        // an append waiting to read its own write would wait forever).
        const err = new SessionfoldError('PROJECTIONS_UNAVAILABLE', `the worker sent a bad frame${named ? ` for ${where(sessionId)}` : ''}: ${problem}`, named ? { sessionId } : {})
        for (const view of named ? this.#bySession.get(sessionId) ?? [] : this.#all()) view._fail(err)
        continue
      }
      for (const view of this.#bySession.get(sessionId as string) ?? []) view._apply(frame)
    }
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
