// A store's Durable Streams requests (the protocol's handler, store.follow) made in one task of
// the event loop go to the engine in one call (EngineApi.streamMany), and their answers come
// back in pushes as each is ready (host/stream-replies.ts): across a worker, a server's many
// small requests cost a message each way per task, not one each per request. A request made
// while none is unanswered goes at once; others wait at most for the end of the current task.
// An append queued behind another stream's fsync does not hold up the answers of the others.
import { fromWireError } from '../core/errors'
import type { SessionId } from '../core/model'
import { nextTask } from '../core/next-task'
import type { StreamAnswer, StreamRequest } from '../core/streams'
import { isPlainObject } from '../core/validate'
import { badAnswer, type EngineCalls } from './engine-calls'

interface Waiting {
  sessionId: SessionId
  resolve(answer: StreamAnswer): void
  reject(err: unknown): void
}

export class StreamQueue {
  readonly #calls: EngineCalls
  #next = 1
  #queued: [n: number, request: StreamRequest][] = []
  /** Requests sent and not yet answered, by their number. */
  readonly #waiting = new Map<number, Waiting>()

  /** Sends the store's appends waiting now: made before a request, they reach the engine before it. */
  readonly #before: () => void

  constructor(calls: EngineCalls, before: () => void) {
    this.#calls = calls
    this.#before = before
    calls.beforeCall.push(() => this.flush())
  }

  submit(request: StreamRequest): Promise<StreamAnswer> {
    try {
      this.#calls.refuseIfDown(request.id)
    } catch (err) {
      return Promise.reject(err)
    }
    this.#before() // appends made before this request reach the engine before it
    return new Promise((resolve, reject) => {
      const n = this.#next++
      // Nothing else asked and unanswered: it goes at once (a catch-up's next page is read while
      // this thread sends the last one). Else it waits for the task's others.
      const alone = this.#waiting.size === 0
      this.#waiting.set(n, { sessionId: request.id, resolve, reject })
      if (this.#queued.length === 0 && !alone) nextTask(() => this.flush())
      this.#queued.push([n, request])
      if (alone) this.flush()
    })
  }

  /** Sends the requests queued now (before a call that must come after them, such as close). */
  flush(): void {
    const batch = this.#queued
    if (batch.length === 0) return
    this.#queued = []
    // The call ends after every answer of it was pushed: one still waiting then was never answered.
    const unanswered = (err: (w: Waiting) => unknown) => {
      for (const [n] of batch) this.#settle(n, (w) => w.reject(err(w)))
    }
    this.#calls
      .call((api) => api.streamMany(batch))
      .then(
        () => unanswered((w) => badAnswer('stream answer', 'none came', w.sessionId)),
        (err: unknown) => unanswered(() => err),
      )
  }

  /** The answers of a push (see Push 'streams'). */
  deliver(answers: unknown): void {
    if (!Array.isArray(answers)) return
    for (const reply of answers as unknown[]) {
      if (!Array.isArray(reply) || typeof reply[0] !== 'number') continue
      const [n, answer, error] = reply as [number, unknown, unknown]
      this.#settle(n, (w) => {
        if (isPlainObject(answer)) w.resolve(answer as unknown as StreamAnswer)
        else w.reject(isPlainObject(error) ? fromWireError(error) : badAnswer('stream answer', 'neither an answer nor an error', w.sessionId))
      })
    }
  }

  #settle(n: number, how: (w: Waiting) => void): void {
    const w = this.#waiting.get(n)
    if (!w) return
    this.#waiting.delete(n)
    how(w)
  }
}
