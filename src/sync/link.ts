// Whether the server answers: the one place a replication's status, error and retryAt come
// from, shared by its two lanes (the push/pull round and the live stream), and their backoff.
// `online` follows only a request that just succeeded; a failure says `offline` or `error` and
// waits out a jittered, growing backoff, which a success of the other lane ends at once (the
// server is back: what waits for it goes now), as do the browser's `online` event and close.
import { thrownText } from '../core/errors'
import type { LoopHost, ReplicationState } from './types'

/** An answer of the server that was not 2xx. */
export class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** The parts of a replication that talk to the server, each with its own backoff. */
export type Lane = 'round' | 'live'

/** A lane's last outcome. */
type Outcome = { ok: true } | { ok: false; refused: boolean; error: ReplicationState['error']; retryAt: number }

/**
 * A refusal (401, 403, 400, …: `error`) rather than a server out of reach (network failure,
 * timeout, 5xx, and 408/429, which ask for a later try: `offline`).
 */
function isRefusal(err: unknown): boolean {
  return err instanceof HttpFailure && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429
}

/** What a link needs of what it serves (a replication's loop, a follow): its status, its wait, its close. */
export interface LinkHost extends Pick<LoopHost, 'signal' | 'setKick' | 'whenOnline'> {
  readonly options: { maxBackoffMs?: number }
  set(patch: Partial<Pick<ReplicationState, 'status' | 'error' | 'retryAt'>>): void
}

export class Link {
  readonly #failures: Record<Lane, number> = { round: 0, live: 0 }
  /** Each lane's last outcome, the most recent last. */
  readonly #outcomes = new Map<Lane, Outcome>()
  /** The retry waits under way: when each is due, and how to end it early. */
  readonly #waits = new Map<Lane, { at: number; end: () => void }>()

  constructor(private readonly host: LinkHost) {}

  /** A request of `lane` was answered 2xx (for a live stream: its first message came). */
  succeeded(lane: Lane): void {
    this.#record(lane, { ok: true })
    this.#publish()
    // The server is back: every lane that could not reach it starts a fresh backoff, and one
    // waiting tries now. A refused lane keeps its own (it would only be refused again).
    for (const other of ['round', 'live'] as const) {
      const o = this.#outcomes.get(other)
      if (o && !o.ok && o.refused) continue
      this.#failures[other] = 0
      if (other !== lane) this.#waits.get(other)?.end()
    }
  }

  /** A round of `lane` ended without a failure: a failure it had no longer stands (it may have sent nothing). */
  done(lane: Lane): void {
    if (this.#outcomes.get(lane)?.ok !== false) return
    this.#outcomes.delete(lane)
    this.#publish()
  }

  /**
   * A request of `lane` failed: the state says so, then this waits out the lane's backoff,
   * ended early by a success of the other lane, the browser's `online` event or close. Local
   * appends do not end it: each would be one more failed try, and the backoff would race to
   * its longest while the server is away a few seconds. They call `onKick` instead (the round
   * recounts what is pending).
   */
  async retry(lane: Lane, err: unknown, onKick?: () => void): Promise<void> {
    const delay = this.#backoff(++this.#failures[lane])
    const at = Date.now() + Math.round(delay)
    this.#record(lane, { ok: false, refused: isRefusal(err), error: errorOf(err), retryAt: at })
    const waited = this.#wait(lane, delay, at, onKick) // registered before the state is told: a success seen meanwhile ends it
    this.#publish()
    await waited
  }

  #record(lane: Lane, outcome: Outcome): void {
    this.#outcomes.delete(lane)
    this.#outcomes.set(lane, outcome)
  }

  /**
   * The status the lanes' outcomes make: `error` while a lane is refused (another lane's
   * success does not hide it), else what the latest outcome says. The host's set publishes only
   * a change, so one status change is one transition.
   */
  #publish(): void {
    const all = [...this.#outcomes]
    const last = all.at(-1)?.[1]
    if (!last) return
    const refused = all.find(([, o]) => !o.ok && o.refused)
    const failed = refused ? refused[1] : last
    if (failed.ok) {
      this.host.set({ status: 'online' })
      return
    }
    // When the next try of a lane failing this way is due: the earliest of those waiting (one
    // not waiting is trying now, its own retryAt past).
    const due = all.flatMap(([lane, o]) => {
      const wait = this.#waits.get(lane)
      return !o.ok && o.refused === failed.refused && wait ? [wait.at] : []
    })
    this.host.set({ status: failed.refused ? 'error' : 'offline', error: failed.error, retryAt: due.length > 0 ? Math.min(...due) : failed.retryAt })
  }

  /** The wait before try `failures + 1`: exponential from about 250 ms to maxBackoffMs, with jitter (half to all of it). */
  #backoff(failures: number): number {
    const max = this.host.options.maxBackoffMs ?? 30_000
    return Math.min(max, 250 * 2 ** Math.min(failures - 1, 16)) * (0.5 + Math.random() / 2)
  }

  #wait(lane: Lane, ms: number, at: number, onKick: (() => void) | undefined): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.host.signal
      let off = (): void => {}
      const end = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', end)
        off()
        if (onKick) this.host.setKick(undefined)
        if (this.#waits.get(lane)?.end === end) this.#waits.delete(lane)
        resolve()
      }
      const timer = setTimeout(end, ms)
      signal.addEventListener('abort', end, { once: true })
      off = this.host.whenOnline?.(end) ?? off
      if (onKick) this.host.setKick(onKick)
      this.#waits.set(lane, { at, end })
      if (signal.aborted) end()
    })
  }
}

export function errorOf(err: unknown): ReplicationState['error'] {
  if (err instanceof HttpFailure) return { code: err.code, message: err.message, status: err.status }
  const e = err as { code?: unknown; message?: unknown; name?: unknown }
  return { code: typeof e?.code === 'string' ? e.code : 'STORAGE_UNAVAILABLE', message: typeof e?.message === 'string' ? e.message : thrownText(err) }
}
