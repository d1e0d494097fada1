// Requests waiting for something new (long-polls, live streams): woken at once by a push
// through this handler, or by their poll timer, whichever comes first.
export class Waiters {
  /** Counts wakes: a waiter that saw generation g and finds it moved on does not sleep. */
  generation = 0
  readonly #sleeping = new Set<() => void>()

  /** Wakes every waiter. */
  wake(): void {
    this.generation++
    for (const wake of [...this.#sleeping]) wake()
  }

  /** Resolves after `ms`, at a wake after generation `seen`, or when `signal` aborts. */
  wait(seen: number, ms: number, signal: AbortSignal): Promise<void> {
    if (this.generation !== seen || signal.aborted || ms <= 0) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#sleeping.delete(done)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#sleeping.add(done)
      signal.addEventListener('abort', done, { once: true })
    })
  }
}
