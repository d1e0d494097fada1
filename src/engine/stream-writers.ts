// The writes of Durable Streams (streams.ts): each stream's one at a time, in the order they
// came, under the session's writer lock. A busy stream keeps its writer between requests (the
// lock, the session open, its log and projections warm) and lets go of it once idle for
// IDLE_MS when another process asked for the lock (or the locks cannot tell), else once idle for
// KEEP_MS; after HOLD_MS held when another process asked for it (it gets its turn); and when
// the engine or the session needs it (a delete, an app opening it for writing).
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import type { ImportWriter } from './apply-changes'
import type { HeldImportWriter, LiveSessions } from './live-sessions'

/** A stream's writer is let go once no write came for this long and another process asked for it... */
const IDLE_MS = 100
/**
 * ...else once none came for this long: a producer slower than IDLE_MS between its appends (a
 * busy server answers slower) does not pay for the lock and the session's opening each time.
 */
const KEEP_MS = 1000
/** ...and after it was held this long, for at least YIELD_MS, when another process asked for it meanwhile (WriterLocks.wanted). */
const HOLD_MS = 2000
const YIELD_MS = 40
/** How long a write waits for a session another writer has open before it answers 'locked'; the most it pauses between tries. */
const LOCK_WAIT_MS = 10_000
const PAUSE_MS = 25

interface Held extends HeldImportWriter {
  since: number
  timer?: ReturnType<typeof setTimeout>
  /** Writes begun with it: an idle check that waited on `wanted` is void once another began. */
  writes: number
  /** When its last write ended. */
  last: number
}

export class StreamWriters {
  readonly #queues = new Map<SessionId, Promise<unknown>>()
  readonly #held = new Map<SessionId, Held>()
  /** Streams let go after HOLD_MS: not taken again before this time. */
  readonly #yielding = new Map<SessionId, number>()
  #closed = false

  constructor(
    private readonly sessions: Pick<LiveSessions, 'holdImportWriter'>,
    private readonly onError: (err: SessionfoldError) => void,
    /** Told when this engine lets go of a stream's writer. */
    private readonly forget: (id: SessionId) => void,
  ) {}

  /** Runs `write` after the writes queued for stream `id` before it. */
  queue<T>(id: SessionId, write: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(id) ?? Promise.resolve()
    const next = before.then(write)
    const tail = next.catch(() => {})
    this.#queues.set(id, tail)
    void tail.then(() => {
      if (this.#queues.get(id) === tail) this.#queues.delete(id)
    })
    return next
  }

  /**
   * Runs `write` with `id`'s writer (a write queued for `id` calls it), taking the writer lock
   * unless this engine holds it: 'locked' when another writer kept it for LOCK_WAIT_MS.
   */
  async locked(id: SessionId, write: (writer: ImportWriter) => Promise<void>): Promise<'locked' | undefined> {
    const held = this.#held.get(id) ?? (await this.#take(id))
    if (!held) return 'locked'
    clearTimeout(held.timer)
    held.writes++
    try {
      await write(held.writer)
    } catch (err) {
      await this.release(id)
      throw err
    }
    // Held HOLD_MS: let go for YIELD_MS when another engine asked for it meanwhile, else held on.
    if (!this.#closed && Date.now() - held.since >= HOLD_MS && !(await held.wanted(held.since))) held.since = Date.now()
    if (this.#closed || Date.now() - held.since >= HOLD_MS) {
      this.#yielding.set(id, Date.now() + YIELD_MS)
      await this.release(id)
    } else {
      held.last = Date.now()
      this.#whenIdle(id, held)
    }
    return undefined
  }

  /** In IDLE_MS: lets go of `id`'s writer when another process asked for it or it was idle KEEP_MS, else looks again. */
  #whenIdle(id: SessionId, held: Held): void {
    const writes = held.writes
    held.timer = setTimeout(async () => {
      const asked = Date.now() - held.last >= KEEP_MS || (await held.wanted(held.since).catch(() => true))
      if (this.#held.get(id) !== held || held.writes !== writes) return // let go, or written since: that write looks after it
      if (asked) void this.letGo(id).catch((err) => this.onError(asError(err)))
      else this.#whenIdle(id, held)
    }, IDLE_MS)
    held.timer.unref?.()
  }

  async #take(id: SessionId): Promise<Held | undefined> {
    const yieldUntil = this.#yielding.get(id)
    if (yieldUntil !== undefined) {
      this.#yielding.delete(id)
      if (yieldUntil > Date.now()) await pause(yieldUntil - Date.now())
    }
    const deadline = Date.now() + LOCK_WAIT_MS
    for (let wait = 5; ; wait = Math.min(wait * 2, PAUSE_MS)) {
      const got = await this.sessions.holdImportWriter(id)
      if (got !== 'locked') {
        const held: Held = { ...got, since: Date.now(), writes: 0, last: Date.now() }
        this.#held.set(id, held)
        return held
      }
      if (Date.now() > deadline) return undefined
      await pause(wait)
    }
  }

  /** Lets go of `id`'s writer now (a write queued for `id` calls it). */
  async release(id: SessionId): Promise<void> {
    const held = this.#held.get(id)
    if (!held) return
    this.#held.delete(id)
    this.forget(id)
    clearTimeout(held.timer)
    await held.release()
  }

  /** Lets go of `id`'s writer once the writes queued for it are done. */
  letGo(id: SessionId): Promise<void> {
    return this.#held.has(id) ? this.queue(id, () => this.release(id)) : Promise.resolve()
  }

  /** Lets go of every writer, once the writes queued are done; none is held after. */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#held.keys()].map((id) => this.letGo(id)))
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const asError = (err: unknown) =>
  isSessionfoldError(err)
    ? err
    : new SessionfoldError('STORAGE_UNAVAILABLE', `letting go of a stream's writer: ${err instanceof Error ? err.message : String(err)}`)
