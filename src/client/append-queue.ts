// A store's appends made in one task of the event loop go to the engine in one call (EngineApi.appendMany), not
// one message each: across a worker, 100 appends made at once cost one message each way, and
// reach the engine together, so they share its group commit. Each append still succeeds or
// fails on its own, in the order it was made; a lone append waits only for the end of the
// current turn (a microtask).
import { fromWireError } from '../core/errors'
import type { SessionId } from '../core/model'
import type { AppendResult, AppendItem, AppendOutcome } from '../core/protocol'
import { isPlainObject } from '../core/validate'
import { badAnswer, type EngineCalls } from './engine-calls'

/** Body characters one call may carry; appends beyond them go in the next call. */
const MAX_CALL_CHARS = 8 * 1024 * 1024

interface Waiting {
  item: AppendItem
  sessionId: SessionId
  resolve: (answer: unknown) => void
  reject: (err: unknown) => void
}

export class AppendQueue {
  readonly #calls: EngineCalls
  #waiting: Waiting[] = []
  #chars = 0

  constructor(calls: EngineCalls) {
    this.#calls = calls
    calls.beforeCall.push(() => this.flush())
  }

  /** Resolves with the item's answer, unchecked (the session checks it), or rejects with its error. */
  submit(item: AppendItem, sessionId: SessionId): Promise<unknown> {
    // Refused here, in the append's own call, rather than by the batch a task later.
    this.#calls.refuseIfDown(sessionId)
    const chars = item.kind === 'append' ? item.bodies.reduce((n, b) => n + b.length, 0) : 0
    if (this.#waiting.length > 0 && this.#chars + chars > MAX_CALL_CHARS) this.flush()
    return new Promise((resolve, reject) => {
      if (this.#waiting.length === 0) queueMicrotask(() => this.flush())
      this.#waiting.push({ item, sessionId, resolve, reject })
      this.#chars += chars
    })
  }

  /** Sends the appends waiting now (before a call that must come after them, such as close). */
  flush(): void {
    const batch = this.#waiting
    if (batch.length === 0) return
    this.#waiting = []
    this.#chars = 0
    this.#calls
      .call((api) => api.appendMany(batch.map((w) => w.item)))
      .then(
        (outcomes) => {
          if (!Array.isArray(outcomes) || outcomes.length !== batch.length) {
            for (const w of batch) w.reject(badAnswer('list of append outcomes', 'not one outcome per append', w.sessionId))
            return
          }
          batch.forEach((w, i) => settle(w, outcomes[i] as AppendOutcome))
        },
        (err: unknown) => {
          for (const w of batch) w.reject(err)
        },
      )
  }
}

function settle(w: Waiting, outcome: AppendOutcome): void {
  if (isPlainObject(outcome) && 'error' in outcome) {
    const wire = outcome.error
    w.reject(isPlainObject(wire) ? fromWireError(wire) : badAnswer('append outcome', 'an error that is not one', w.sessionId))
  } else {
    w.resolve(outcome as AppendResult)
  }
}
