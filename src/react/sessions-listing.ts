// A store's session list (`store.sessions(query)`) as a small external store for React's
// useSyncExternalStore: the list is made when the first listener comes and closed when the
// last one leaves (React may make, and drop, one of these during a render that never commits).
// Framework-free (it imports nothing of React); useSessions (index.ts) wraps it.
import type { SessionfoldError, SessionList, SessionQuery, SessionSummary, Store } from 'sessionfold'

/** What useSessions reads of a store. */
export type SessionsSource = Pick<Store, 'sessions'>

/** Where a session list stands. Each change is a new object; nothing else is. */
export interface SessionsState {
  /** The rows (empty until the first page lands); the same array while they do not change. */
  readonly items: readonly SessionSummary[]
  /** Whether rows past `items` match the query (`more()` reads them). */
  readonly hasMore: boolean
  /** The first page has not landed yet. */
  readonly loading: boolean
  /** Why the last read failed (INVALID_ARGUMENT for a bad query, CLOSED once the store closed). */
  readonly error: SessionfoldError | undefined
}

const EMPTY: readonly SessionSummary[] = Object.freeze([])

export class SessionsListing {
  #state: SessionsState = { items: EMPTY, hasMore: false, loading: true, error: undefined }
  readonly #listeners = new Set<() => void>()
  #list: SessionList | undefined

  constructor(
    private readonly store: SessionsSource,
    private readonly query: SessionQuery | undefined,
  ) {}

  readonly getSnapshot = (): SessionsState => this.#state

  readonly subscribe = (onChange: () => void): (() => void) => {
    this.#listeners.add(onChange)
    if (this.#listeners.size === 1) this.#start()
    return () => {
      if (!this.#listeners.delete(onChange) || this.#listeners.size > 0) return
      this.#list?.close()
      this.#list = undefined
    }
  }

  /** Widens the list by `n` rows (default: the query's limit). */
  readonly more = (n?: number): Promise<void> => this.#list?.more(n) ?? Promise.resolve()

  #start(): void {
    let list: SessionList
    try {
      list = this.store.sessions(this.query)
    } catch (error) {
      this.#set({ items: EMPTY, hasMore: false, loading: false, error: error as SessionfoldError })
      return
    }
    this.#list = list
    list.subscribe((items, meta) => {
      if (this.#list !== list) return
      this.#set({ items, hasMore: list.hasMore, loading: !list.loaded, error: meta.error })
    })
  }

  #set(next: SessionsState): void {
    const now = this.#state
    if (now.items === next.items && now.hasMore === next.hasMore && now.loading === next.loading && now.error === next.error) return
    this.#state = next
    for (const listener of [...this.#listeners]) listener()
  }
}
