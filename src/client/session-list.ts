// The live session list (`store.sessions(query)`): the first rows of the store's session index
// in the query's order, read again when the host says the index changed (this store's writes,
// other tabs', processes' and replications', which its engine follows through the store's
// change feed) and every ACTIVITY_MS for `running` (other tabs' and processes' writer locks
// announce nothing). Coalesced: the first change after a quiet spell is read at once, and
// changes that follow within QUIET_MS of a read wait for QUIET_MS without one (at most
// MAX_WAIT_MS), one read at a time, so a burst costs two reads; rows equal to the last ones are
// not delivered.
import { SessionfoldError, isSessionfoldError, tellEach } from '../core/errors'
import { MAX_SESSIONS_ROWS, type ResolvedSessionQuery, type SessionSummary, type SessionsPage } from '../core/session-list'

export type { SessionQuery, SessionSummary } from '../core/session-list'

/** What a session list's listener hears: the rows, and `meta.error` when a read failed (the list reads again at the next change) or the store closed (the last call). */
export type SessionListListener = (items: SessionSummary[], meta: { error?: SessionfoldError }) => void

/** What a list needs of its store. */
export interface SessionListHost {
  page(query: ResolvedSessionQuery, count: number): Promise<SessionsPage>
  /** Calls `onChange` whenever the index may have changed (with an error: the store closed), until the returned stop. */
  watch(onChange: (ended?: SessionfoldError) => void): () => void
}

const ACTIVITY_MS = 1000
const QUIET_MS = 25
const MAX_WAIT_MS = 250

/**
 * A live, sorted, paged list of the store's sessions, made by `store.sessions(query)`. `items`
 * is current and synchronous (empty until the first page arrives: `loaded` says when it has);
 * `subscribe` hands over the rows as they are (once loaded), then each change; `more()` widens
 * the list by a page. It follows every writer of the store, in any tab or process, and
 * replications, until `close()` or the store's close.
 *
 * @example
 * const list = store.sessions({ limit: 50 })
 * const stop = list.subscribe((items) => render(items))
 * await list.more()   // 50 more rows
 */
export class SessionList {
  #items: SessionSummary[] = []
  #rows: number
  #hasMore = false
  #loaded = false
  #error: SessionfoldError | undefined
  #closed = false
  #inFlight = false
  #again = false
  #pending: ReturnType<typeof setTimeout> | undefined
  #firstChange: number | undefined
  /** When the last read ended (0: none yet). */
  #lastRead = 0
  readonly #listeners = new Set<SessionListListener>()
  readonly #waiters = new Set<() => void>()
  readonly #stopWatch: () => void
  readonly #timer: ReturnType<typeof setInterval>

  /** @internal */
  constructor(
    private readonly host: SessionListHost,
    private readonly query: ResolvedSessionQuery,
  ) {
    this.#rows = query.limit
    this.#stopWatch = host.watch((ended) => (ended ? this.#end(ended) : this.#schedule()))
    this.#timer = setInterval(this.#schedule, ACTIVITY_MS)
    ;(this.#timer as { unref?: () => void }).unref?.()
    void this.#read()
  }

  /** The rows, in the query's order: the first `limit` (more after `more()`). */
  get items(): SessionSummary[] {
    return this.#items
  }

  /** Whether rows past `items` match the query (`more()` reads them). */
  get hasMore(): boolean {
    return this.#hasMore
  }

  /** Whether the first page has arrived. */
  get loaded(): boolean {
    return this.#loaded
  }

  /** The last read's error, if it failed (the list reads again at the next change); undefined once one succeeds. */
  get error(): SessionfoldError | undefined {
    return this.#error
  }

  /** Calls `listener` with the rows (now when loaded, else once they are), then on each change; returns its stop. */
  subscribe(listener: SessionListListener): () => void {
    if (typeof listener !== 'function') throw new SessionfoldError('INVALID_ARGUMENT', 'sessions().subscribe needs a listener function')
    if (this.#closed) return () => {}
    this.#listeners.add(listener)
    if (this.#loaded) tellEach([listener], (f) => f(this.#items, {}))
    return () => void this.#listeners.delete(listener)
  }

  /** Widens the list by `n` rows (default: the query's `limit`), at most 10,000 in all; resolves once they are in `items`. */
  more(n: number = this.query.limit): Promise<void> {
    if (!Number.isSafeInteger(n) || n < 1) throw new SessionfoldError('INVALID_ARGUMENT', `sessions().more(n): n must be a positive integer, got ${String(n)}`)
    if (this.#closed) return Promise.reject(new SessionfoldError('CLOSED', 'the session list is closed'))
    this.#rows = Math.min(MAX_SESSIONS_ROWS, this.#rows + n)
    return this.#next()
  }

  /** Resolves after the next read has settled (the rows as they are then are in `items`). */
  #next(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#waiters.add(resolve)
      this.#schedule(true)
    })
  }

  /** Stops following: listeners hear nothing more. Calling it again does nothing. */
  close(): void {
    this.#end(undefined)
  }

  #end(error: SessionfoldError | undefined): void {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#pending)
    clearInterval(this.#timer)
    this.#stopWatch()
    if (error) tellEach(this.#listeners, (f) => f(this.#items, { error }))
    this.#listeners.clear()
    for (const w of this.#waiters) w()
    this.#waiters.clear()
  }

  readonly #schedule = (now?: unknown): void => {
    if (this.#closed) return
    if (this.#inFlight) {
      this.#again = true
      return
    }
    const t = Date.now()
    const quiet = this.#pending === undefined && t - this.#lastRead >= QUIET_MS
    this.#firstChange ??= t
    clearTimeout(this.#pending)
    const wait = now === true || quiet ? 0 : Math.min(QUIET_MS, Math.max(0, this.#firstChange + MAX_WAIT_MS - t))
    this.#pending = setTimeout(() => {
      this.#pending = undefined
      this.#firstChange = undefined
      void this.#read()
    }, wait)
  }

  async #read(): Promise<void> {
    if (this.#closed) return
    this.#inFlight = true
    const waiters = [...this.#waiters]
    this.#waiters.clear()
    try {
      const page = await this.host.page(this.query, this.#rows)
      if (this.#closed) return
      this.#error = undefined
      this.#hasMore = page.next !== null
      const first = !this.#loaded
      this.#loaded = true
      if (first || !sameItems(this.#items, page.items)) {
        this.#items = page.items
        tellEach(this.#listeners, (f) => f(this.#items, {}))
      }
    } catch (err) {
      if (this.#closed) return
      if (isSessionfoldError(err, 'CLOSED')) return this.#end(err as SessionfoldError)
      this.#error = err as SessionfoldError
      tellEach(this.#listeners, (f) => f(this.#items, { error: this.#error }))
    } finally {
      this.#inFlight = false
      this.#lastRead = Date.now()
      for (const w of waiters) w()
      if (this.#again && !this.#closed) {
        this.#again = false
        this.#schedule()
      }
    }
  }
}

/** Whether two lists have the same rows, field by field. */
function sameItems(a: readonly SessionSummary[], b: readonly SessionSummary[]): boolean {
  return a.length === b.length && a.every((row, i) => JSON.stringify(row) === JSON.stringify(b[i]))
}
