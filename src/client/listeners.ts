// The listeners of a projection view and the clock that batches what they hear: at once when
// things are quiet (an append's listener hears it without delay), at most once per interval
// during a burst, always ending with the final state.
import { tellEach } from '../core/errors'

/** Subscribers hear a burst at most this often (the final state is always delivered). */
const NOTIFY_INTERVAL_MS = 1

/** A set of listeners. Each round walks a copy: a listener may (un)subscribe while it is called. */
export class Listeners<L> {
  readonly #set = new Set<L>()

  /** Adds `listener`; returns its unsubscribe. */
  add(listener: L): () => void {
    this.#set.add(listener)
    return () => void this.#set.delete(listener)
  }

  /** Calls `call` with each listener subscribed when the round began (see tellEach). */
  each(call: (listener: L) => void): void {
    tellEach(this.#set, call)
  }
}

/** Runs `deliver` after `schedule()`, batched: schedules made before it runs fold into one. */
export class NotifyClock {
  readonly #deliver: () => void
  #scheduled = false
  #lastDelivered = -Infinity

  constructor(deliver: () => void) {
    this.#deliver = deliver
  }

  schedule(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    this.#wake()
  }

  #wake(): void {
    const wait = this.#lastDelivered + NOTIFY_INTERVAL_MS - performance.now()
    if (wait <= 0) queueMicrotask(() => this.#run())
    // Timers run on millisecond clocks and may fire early: #wake again checks the real time.
    else setTimeout(() => this.#wake(), wait)
  }

  #run(): void {
    this.#scheduled = false
    this.#lastDelivered = performance.now()
    this.#deliver()
  }
}
