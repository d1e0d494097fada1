// The children of a session as a small external store for React's useSyncExternalStore: listed
// while someone listens, listed again when the session's catalog changes, one listing on its
// way at a time. Framework-free (it imports nothing of React); useChildren (index.ts) wraps it.
import type { ListChildrenOptions, SessionfoldError, SessionView, SubagentListEntry } from 'sessionfold'

/** What useChildren reads of a handle: a Session or a SessionView (`watchChildren` for a live tree). */
export type ChildrenSource = Pick<SessionView, 'projections' | 'listChildren'> & Partial<Pick<SessionView, 'watchChildren'>>

/** Where a listing of children stands. Each change is a new object; nothing else is. */
export interface ChildrenState {
  /**
   * The last listing that landed (`listChildren` rows: children and diagnostics, pre-order);
   * undefined until the first one lands. Kept while a newer one is on its way, and kept (the
   * same array) when a new listing has the same rows.
   */
  readonly children: readonly SubagentListEntry[] | undefined
  /** Why the last listing failed (cleared by the next one that lands); `children` stays as it was. */
  readonly error: SessionfoldError | undefined
  /** A listing is on its way: the first one, or a re-listing after a change or a refresh(). */
  readonly loading: boolean
}

/** The catalog value before the first notification: never equal to a real one. */
const UNSEEN = Symbol('unseen')

export class ChildrenListing {
  readonly #view: ChildrenSource
  readonly #options: unknown
  #state: ChildrenState = { children: undefined, error: undefined, loading: true }
  readonly #listeners = new Set<() => void>()
  /** Bumped when the last listener leaves: a listing started before then lands nowhere. */
  #generation = 0
  /** The listing on its way, if any. */
  #inFlight: AbortController | undefined
  /** Something changed while a listing was on its way: list again once it lands. */
  #again = false
  #catalog: unknown = UNSEEN
  #stopCatalog: (() => void) | undefined

  /**
   * Nothing happens until the first subscriber: React may make (and drop) one of these during
   * a render that never commits. `options` go to listChildren as given, with this listing's
   * own signal, so bad ones fail there (INVALID_ARGUMENT, in `error`) like any call's.
   */
  constructor(view: ChildrenSource, options: unknown) {
    this.#view = view
    this.#options = options
  }

  /** The current state: the same object until it changes (useSyncExternalStore's getSnapshot). */
  readonly getSnapshot = (): ChildrenState => this.#state

  /** Listens; the first listener starts the listing, the last one to leave stops it. */
  readonly subscribe = (onChange: () => void): (() => void) => {
    this.#listeners.add(onChange)
    if (this.#listeners.size === 1) this.#start()
    return () => {
      if (!this.#listeners.delete(onChange) || this.#listeners.size > 0) return
      this.#stop()
    }
  }

  /** Lists again now (or right after the listing on its way), e.g. to see a child's activity change. */
  readonly refresh = (): void => {
    if (this.#stopCatalog) this.#list()
  }

  #start(): void {
    const recursive = (this.#options as { recursive?: unknown } | undefined)?.recursive === true
    if (recursive && typeof this.#view.watchChildren === 'function') {
      // The whole tree, live: a catalog changing anywhere in it, a child opened or closed for
      // writing anywhere (watchChildren, coalesced), each lands as a listing of its own.
      const generation = this.#generation
      try {
        this.#stopCatalog = this.#view.watchChildren({ recursive: true }, (rows, meta) => {
          if (generation !== this.#generation) return
          const children = sameRows(this.#state.children, rows) ? this.#state.children : rows
          this.#set({ children, error: meta.error ?? undefined, loading: false })
        })
      } catch (error) {
        this.#stopCatalog = () => {}
        this.#set({ children: this.#state.children, error: error as SessionfoldError, loading: false })
      }
      return
    }
    this.#catalog = UNSEEN
    // Called with the current catalog now (the first listing), then on each change of it. The
    // same value again (the values stopped: the store closed) is no change.
    this.#stopCatalog = this.#view.projections.subscribe('subagentCatalog', (catalog) => {
      if (catalog === this.#catalog) return
      this.#catalog = catalog
      this.#list()
    })
  }

  #stop(): void {
    this.#stopCatalog?.()
    this.#stopCatalog = undefined
    this.#generation++
    this.#inFlight?.abort()
    this.#inFlight = undefined
    this.#again = false
  }

  #list(): void {
    if (this.#inFlight) {
      // One listing at a time: changes during it fold into one more listing after it, so a
      // burst of spawns costs two listings, and answers can only land in the order asked.
      this.#again = true
      return
    }
    const generation = this.#generation
    const controller = new AbortController()
    this.#inFlight = controller
    this.#set({ ...this.#state, loading: true })
    let answer: Promise<SubagentListEntry[]>
    try {
      answer = this.#view.listChildren(withSignal(this.#options, controller.signal))
    } catch (err) {
      answer = Promise.reject(err)
    }
    answer.then(
      (rows) => this.#landed(generation, { children: sameRows(this.#state.children, rows) ? this.#state.children : rows, error: undefined }),
      (error: SessionfoldError) => this.#landed(generation, { children: this.#state.children, error }),
    )
  }

  #landed(generation: number, result: Omit<ChildrenState, 'loading'>): void {
    // Stopped since it was asked (unmounted, or React dropped this listing for another view):
    // whatever it says is older than what a new start will list.
    if (generation !== this.#generation) return
    this.#inFlight = undefined
    const again = this.#again
    this.#again = false
    this.#set({ ...result, loading: again })
    if (again) this.#list()
  }

  #set(next: ChildrenState): void {
    const now = this.#state
    if (now.children === next.children && now.error === next.error && now.loading === next.loading) return
    this.#state = next
    for (const listener of [...this.#listeners]) listener()
  }
}

/** The caller's options with this listing's signal; anything but an object goes as it is, to be refused. */
function withSignal(options: unknown, signal: AbortSignal): ListChildrenOptions {
  if (options === undefined) return { signal }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return options as ListChildrenOptions
  return { ...options, signal }
}

/** Whether two listings have the same rows, field by field (rows are flat). */
function sameRows(held: readonly SubagentListEntry[] | undefined, rows: readonly SubagentListEntry[]): boolean {
  if (!held || held.length !== rows.length) return false
  return held.every((row, i) => {
    const other = rows[i] as Record<string, unknown>
    const keys = Object.keys(row)
    return keys.length === Object.keys(other).length && keys.every((k) => (row as Record<string, unknown>)[k] === other[k])
  })
}
