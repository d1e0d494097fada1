// Every call of a store to its engine goes through here: refused once the store closed or its
// worker died, rejected with WORKER_TERMINATED when the worker dies mid-call, and the answer
// checked before the app sees it.
import { SessionfoldError, where } from '../core/errors'
import type { SessionId } from '../core/model'
import type { HandleInfo } from '../core/protocol'
import type { EngineApi } from '../host/host'
import type { Connection } from './connection'

/** The calls of one store: CLOSED after close, WORKER_TERMINATED once the worker died. */
export class EngineCalls {
  readonly #connection: Connection
  /** Rejecters of the calls in flight: WORKER_TERMINATED reaches them if the worker dies. */
  readonly #inFlight = new Set<(err: unknown) => void>()
  #closed: SessionfoldError | undefined
  #dead: SessionfoldError | undefined
  #nextToken = 1
  /** Run before each call: the queues' sends of what waits in them (appends, stream requests), so calls reach the engine in the order they were made. */
  readonly beforeCall: (() => void)[] = []

  /** `onDeath` runs once the worker died, after the calls in flight were told. */
  constructor(connection: Connection, onDeath: (err: SessionfoldError) => void) {
    this.#connection = connection
    void connection.died.then((err) => {
      this.#dead = err
      for (const reject of this.#inFlight) reject(err)
      onDeath(err)
    })
  }

  get closed(): boolean {
    return this.#closed !== undefined
  }

  get dead(): boolean {
    return this.#dead !== undefined
  }

  /** From now on every call rejects with `error`'s code and message. */
  close(error: SessionfoldError): void {
    this.#closed = error
  }

  /** The engine is gone (the store closed, its worker ended): a call still unanswered never will be, and fails with `error`. */
  abandon(error: SessionfoldError): void {
    for (const reject of this.#inFlight) reject(error)
  }

  /**
   * Throws once the store closed or its worker died: a new error each time, made here, so its
   * stack shows the call that was refused (a listener's, say), not the close that caused it.
   */
  refuseIfDown(sessionId?: SessionId): void {
    const down = this.#closed ?? this.#dead
    if (!down) return
    const on = sessionId === undefined ? '' : ` (a call on ${where(sessionId)})`
    throw new SessionfoldError(down.code, `${down.message}${on}`, { ...(sessionId === undefined ? {} : { sessionId }), cause: down.cause })
  }

  async call<T>(fn: (api: EngineApi) => Promise<T>, sessionId?: SessionId): Promise<T> {
    this.refuseIfDown(sessionId)
    for (const flush of this.beforeCall) flush()
    this.#connection.busy?.(1)
    // Not Promise.race with `died`: each call would leave a reaction on that promise (pending
    // for the store's life) holding the call's result, a leak of every call ever made.
    let reject: ((err: unknown) => void) | undefined
    try {
      return await new Promise<T>((resolve, rej) => {
        reject = rej
        this.#inFlight.add(rej)
        fn(this.#connection.api).then(resolve, rej)
      })
    } finally {
      if (reject) this.#inFlight.delete(reject)
      this.#connection.busy?.(-1)
    }
  }

  /**
   * Waits for `pending`, something the worker will send unasked (a pushed frame), keeping a
   * Node process alive meanwhile as a call in flight does: pushes come on the worker's own port,
   * which does not hold the process open by itself.
   */
  async awaitPush<T>(pending: Promise<T>): Promise<T> {
    this.#connection.busy?.(1)
    try {
      return await pending
    } finally {
      this.#connection.busy?.(-1)
    }
  }

  /**
   * Keeps a Node process alive (true) or no longer (false) for values that change without a
   * call of ours: a view followed for another process's writer, while it has subscribers.
   */
  hold(on: boolean): void {
    this.#connection.hold?.(on ? 1 : -1)
  }

  /**
   * A call whose answer is checked before the app sees it, like the frames: a broken or hostile
   * worker gives PROJECTIONS_UNAVAILABLE, never values of the wrong shape.
   */
  async checked<T>(what: string, fn: (api: EngineApi) => Promise<T>, problemOf: (value: T) => string | undefined, sessionId?: SessionId): Promise<T> {
    const value = await this.call(fn, sessionId)
    const problem = problemOf(value)
    if (problem === undefined) return value
    const handle = (value as Partial<HandleInfo> | null)?.handle
    if (what === 'handle' && typeof handle === 'number') await this.call((api) => api.closeHandle(handle)).catch(() => {})
    throw badAnswer(what, problem, sessionId)
  }

  /** Runs `work` with a fresh cancel token; `signal`'s abort asks the engine to cancel it. */
  async cancellable<T>(signal: AbortSignal | undefined, work: (token: number) => Promise<T>): Promise<T> {
    const token = this.#nextToken++
    const onAbort = () => void this.call((api) => api.cancel(token)).catch(() => {})
    signal?.addEventListener('abort', onAbort)
    try {
      return await work(token)
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }
}

/** PROJECTIONS_UNAVAILABLE for an answer of the worker that failed its check. */
export function badAnswer(what: string, problem: string, sessionId?: SessionId): SessionfoldError {
  return new SessionfoldError(
    'PROJECTIONS_UNAVAILABLE',
    `the worker sent a bad ${what}${sessionId === undefined ? '' : ` for ${where(sessionId)}`}: ${problem}`,
    sessionId === undefined ? {} : { sessionId },
  )
}
