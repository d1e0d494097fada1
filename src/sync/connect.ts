// store.connect(url): the app's side of a replication that runs in the engine (in its worker):
// it sends what cannot cross a worker (the headers function) when the engine asks, and mirrors
// the replication's state, which the engine pushes as it changes (see Push in core/protocol).
import type { SyncConflict } from '../core/changes'
import { SessionfoldError, thrownText, tellEach } from '../core/errors'
import { hash53 } from '../core/hash'
import type { ReplicationEvent, ReplicationSpec } from '../core/protocol'
import type { ConnectOptions, ReplicationState, ReplicationStatus } from './types'
import { assertSessionId, describe, isPlainObject } from '../core/validate'
import type { EngineCalls } from '../client/engine-calls'

export type { ConnectOptions, ReplicationState, ReplicationStatus, ReplicationStore } from './types'

/**
 * A store's replication states as the host pushes them, to the replication each is for. A
 * state may come before the answer that names its replication: it waits here for it.
 */
export class ReplicationRouter {
  readonly #listeners = new Map<number, (event: ReplicationEvent) => void>()
  readonly #early = new Map<number, ReplicationEvent[]>()

  deliver(id: unknown, event: ReplicationEvent): void {
    if (typeof id !== 'number') return
    const listener = this.#listeners.get(id)
    if (listener) listener(event)
    else if (this.#early.has(id) || this.#early.size < 1000) this.#early.set(id, [...(this.#early.get(id) ?? []).slice(-99), event])
  }

  /** Hears replication `id`'s states, those that came early first; returns its stop. */
  listen(id: number, listener: (event: ReplicationEvent) => void): () => void {
    this.#listeners.set(id, listener)
    const early = this.#early.get(id) ?? []
    this.#early.delete(id)
    for (const event of early) listener(event)
    return () => void this.#listeners.delete(id)
  }
}

const KNOWN = ['headers', 'sessions', 'live', 'signal', 'pollMs', 'maxBackoffMs', 'fetch', 'onConflict']

/**
 * A running sync with a server (see `store.connect`). It runs in the store's engine (its
 * worker): tabs of an origin share one (one runs it, the others follow its state), and a
 * second connect of one store to one server joins the first. Read `status`, `pending` and
 * `conflicts`, or `subscribe` to them; `close()` stops it (the cursors stay in the store: the
 * next connect resumes).
 */
export class Replication {
  readonly #calls: EngineCalls
  readonly #routes: ReplicationRouter
  readonly #options: ConnectOptions
  readonly #listeners = new Set<(state: ReplicationState) => void>()
  readonly #onClose: (() => void)[] = []
  #state: ReplicationState = { status: 'connecting', pending: 0, conflicts: [], pushed: 0, pulled: 0 }
  #id: Promise<number>
  #closed = false
  #closing: Promise<void> | undefined

  /** @internal Made by `store.connect`. */
  constructor(calls: EngineCalls, routes: ReplicationRouter, url: string | URL, options: ConnectOptions, inThread: boolean) {
    if (!isPlainObject(options as unknown)) throw bad(`connect options must be an object, got ${describe(options)}`)
    for (const key of Object.keys(options)) if (!KNOWN.includes(key)) throw bad(`connect has no option ${describe(key)}`)
    let parsed: URL
    try {
      parsed = new URL(String(url), (globalThis as { location?: { href: string } }).location?.href)
    } catch {
      throw bad(`connect needs a URL, got ${describe(url)}`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw bad(`connect needs an http(s) URL, got ${describe(String(url))}`)
    const { sessions, headers, live, pollMs, maxBackoffMs, signal, onConflict } = options
    if (sessions !== undefined) {
      if (!Array.isArray(sessions)) throw bad('connect sessions must be an array of session ids')
      for (const id of sessions) assertSessionId(id)
    }
    if (headers !== undefined && typeof headers !== 'function' && !(isPlainObject(headers) && Object.values(headers).every((v) => typeof v === 'string'))) {
      throw bad('connect headers must be an object of strings or a function returning one')
    }
    if (live !== undefined && typeof live !== 'boolean' && live !== 'long-poll') throw bad("connect live must be true, false or 'long-poll'")
    if (onConflict !== undefined && onConflict !== 'fork' && onConflict !== 'report') throw bad("connect onConflict must be 'fork' or 'report'")
    for (const [name, v] of [
      ['pollMs', pollMs],
      ['maxBackoffMs', maxBackoffMs],
    ] as const) {
      if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 3_600_000))
        throw bad(`connect ${name} must be a whole number of milliseconds in 1..3,600,000`)
    }
    if (options.fetch !== undefined && (typeof options.fetch !== 'function' || !inThread))
      throw bad('connect fetch is a function, and only with worker: false (a function cannot cross to the worker)')
    this.#calls = calls
    this.#routes = routes
    this.#options = options
    const base = parsed.href.replace(/\/+$/, '')
    const spec: ReplicationSpec = {
      url: base,
      key: `sync-${hash53(`${base}\n${JSON.stringify(sessions ?? null)}`)}`,
      options: {
        ...(sessions ? { sessions: [...sessions] } : {}),
        ...(live !== undefined ? { live } : {}),
        ...(pollMs !== undefined ? { pollMs } : {}),
        ...(maxBackoffMs !== undefined ? { maxBackoffMs } : {}),
        ...(onConflict !== undefined ? { onConflict } : {}),
      },
      ...(typeof headers === 'object' ? { headers: { ...headers } } : {}),
      headersFromClient: typeof headers === 'function',
    }
    this.#id = calls.call((api) => api.replicate(spec, options.fetch))
    this.#id.catch((err: unknown) => this.#fail(err))
    signal?.addEventListener('abort', () => void this.close(), { once: true })
    // Back online: retry now rather than at the end of the backoff. The page tells the engine,
    // since a worker's global is not always told (Chromium tells pages, not workers).
    const target = globalThis as { addEventListener?: (type: string, f: () => void) => void; removeEventListener?: (type: string, f: () => void) => void }
    const online = () => void this.#id.then((id) => this.#calls.call((api) => api.replicationOnline(id))).catch(() => {})
    target.addEventListener?.('online', online)
    this.#onClose.push(() => target.removeEventListener?.('online', online))
    void this.#follow()
  }

  /** `connecting`, `online`, `offline` or `error` (see {@link ReplicationStatus}). */
  get status(): ReplicationStatus {
    return this.#state.status
  }

  /** Local events not yet on the server, as last counted. */
  get pending(): number {
    return this.#state.pending
  }

  /** Sessions that differ between this store and the server (neither side changed). */
  get conflicts(): readonly SyncConflict[] {
    return this.#state.conflicts
  }

  /** The whole state: status, pending, conflicts, counts and the last error. */
  get state(): ReplicationState {
    return this.#state
  }

  /** Calls `listener` with the state now, then at every change; returns its unsubscribe. */
  subscribe(listener: (state: ReplicationState) => void): () => void {
    this.#listeners.add(listener)
    listener(this.#state)
    return () => void this.#listeners.delete(listener)
  }

  /**
   * Resolves once everything local was pushed and the server had nothing more, in a round begun
   * after the call. With onConflict 'fork', not while a conflicted session's events wait to move
   * to their fork (the session open for writing here): they are not on the server yet.
   */
  async whenSynced(): Promise<void> {
    if (this.#closed) throw new SessionfoldError('CLOSED', 'the replication is closed')
    const id = await this.#id
    await this.#calls.call((api) => api.replicationSynced(id))
  }

  /** Stops pushing and pulling (when no other tab or connect still uses it); the cursors stay in the store. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true
      for (const f of this.#onClose.splice(0)) f()
      const id = await this.#id.catch(() => undefined)
      if (id !== undefined && !this.#calls.closed && !this.#calls.dead) await this.#calls.call((api) => api.replicationClose(id)).catch(() => {})
    })()
    return this.#closing
  }

  /** @internal The engine is gone (its worker died): the state says so, and nothing more comes. */
  _failed(err: unknown): void {
    if (!this.#closed) this.#fail(err)
  }

  /** @internal */
  onClose(f: () => void): void {
    this.#onClose.push(f)
  }

  /**
   * The states the engine pushes, until closed. While it is open, a Node process stays alive
   * for them (as for a call in flight): they come unasked, on a port that holds nothing open.
   */
  async #follow(): Promise<void> {
    let id: number
    try {
      id = await this.#id
    } catch {
      return
    }
    if (this.#closed) return
    this.#calls.hold(true)
    const answered = new Set<number>()
    let stop = () => {}
    const done = () => {
      stop()
      this.#calls.hold(false)
    }
    this.#onClose.push(done)
    stop = this.#routes.listen(id, (event) => {
      if (this.#closed) return
      if (!isPlainObject(event) || typeof event.version !== 'number' || !isPlainObject(event.state)) {
        this.#fail(new SessionfoldError('PROJECTIONS_UNAVAILABLE', 'the worker pushed a replication state that is not one'))
        return
      }
      if (event.closed) return
      this.#publish(event.state)
      const ticket = event.headersWanted
      if (ticket !== undefined && !answered.has(ticket)) {
        answered.add(ticket)
        void this.#answerHeaders(id, ticket)
      }
    })
  }

  async #answerHeaders(id: number, ticket: number): Promise<void> {
    const h = this.#options.headers
    let headers: Record<string, string> | { error: string }
    try {
      const given = typeof h === 'function' ? await h() : (h ?? {})
      headers =
        isPlainObject(given) && Object.values(given).every((v) => typeof v === 'string') ? { ...given } : { error: 'it did not return an object of strings' }
    } catch (err) {
      headers = { error: thrownText(err) }
    }
    await this.#calls.call((api) => api.replicationHeaders(id, ticket, headers)).catch(() => {})
  }

  #publish(state: ReplicationState): void {
    this.#state = state
    tellEach(this.#listeners, (l) => l(state)) // a subscriber's failure is its own
  }

  #fail(err: unknown): void {
    const e = err as { code?: unknown; message?: unknown }
    this.#publish({
      ...this.#state,
      status: 'error',
      error: { code: typeof e?.code === 'string' ? e.code : 'WORKER_TERMINATED', message: typeof e?.message === 'string' ? e.message : thrownText(err) },
    })
  }
}

function bad(message: string): SessionfoldError {
  return new SessionfoldError('INVALID_ARGUMENT', message)
}
