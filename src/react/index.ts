// sessionfold/react: React hooks over a session handle's live projections and its children.
// Each hook takes the handle itself (a Session or a SessionView, as bind() does), not its
// `.projections`: useChildren needs the handle's listChildren, and one argument for all three
// keeps them alike. A handle may be null while it is being opened (hooks cannot be called
// conditionally). The hooks read the client only through the types of 'sessionfold': this
// entry bundles none of it, and React stays out of the main entry.
/**
 * React hooks over a session handle's live projections and its children: `useProjection`,
 * `useSnapshot` and `useChildren`. `react` (18 or 19) is an optional peer dependency of
 * sessionfold; this entry bundles none of the client, and the client none of React.
 *
 * @module sessionfold/react
 */
import { useMemo, useSyncExternalStore } from 'react'
import type { HasProjections, ProjectionKey, ProjectionMap, ProjectionSnapshot } from 'sessionfold'
import { ChildrenListing, type ChildrenSource, type ChildrenState } from './children-listing'
import type { SessionQuery } from 'sessionfold'
import { SessionsListing, type SessionsSource, type SessionsState } from './sessions-listing'

export type { ChildrenSource, ChildrenState } from './children-listing'
export type { SessionsSource, SessionsState } from './sessions-listing'
export type { HasProjections } from 'sessionfold'

const noSubscription = () => () => {}
const nothing = () => null
const idle = (): ChildrenResult => IDLE

/**
 * The current value of one projection of a session, re-rendering the component when that
 * value changes, and only then: values keep their identity until they change, so an append
 * that leaves this key as it was causes no render. null while `view` is null, or when the
 * session has no value for `key` (or its unit faulted: see useSnapshot's `faults`).
 *
 * @param view a Session or SessionView (anything with live `projections`), or null
 * @example
 * const timing = useProjection(session, 'subagentTiming')
 * return createElement('span', null, `${timing?.turns ?? 0} turns`)
 */
export function useProjection<K extends ProjectionKey>(view: HasProjections | null | undefined, key: K): ProjectionMap[K] | null {
  const projections = view?.projections
  const subscribe = useMemo(() => (projections ? (onChange: () => void) => projections.subscribe(key, () => onChange()) : noSubscription), [projections, key])
  const get = useMemo(() => (projections ? () => projections.get(key) : nothing), [projections, key])
  // The handle holds its values synchronously: the server snapshot is the same read.
  return useSyncExternalStore(subscribe, get, get)
}

/**
 * All projection values of a session at once, `{ asOfSeq, values, faults }`: the same object
 * until `asOfSeq` advances or the values stop (the store closed, the worker died: then
 * `view.projections.error` says why). Re-renders on every append to the session; prefer
 * useProjection for one value. null while `view` is null.
 *
 * @param view a Session or SessionView, or null
 */
export function useSnapshot(view: HasProjections | null | undefined): ProjectionSnapshot<ProjectionMap> | null {
  const projections = view?.projections
  const subscribe = useMemo(() => (projections ? (onChange: () => void) => projections.subscribe(() => onChange()) : noSubscription), [projections])
  const get = useMemo(() => (projections ? () => projections.snapshot() : nothing), [projections])
  return useSyncExternalStore(subscribe, get, get)
}

/** What `useChildren` lists. */
export interface UseChildrenOptions {
  /** The whole tree below the session (pre-order), not only its own children. */
  recursive?: boolean
}

export interface ChildrenResult extends ChildrenState {
  /** Lists again (after the listing on its way, if any). */
  refresh: () => void
}

const IDLE: ChildrenResult = Object.freeze({ children: undefined, error: undefined, loading: false, refresh: () => {} })

/**
 * The children of a session (`view.listChildren(options)`), listed when the component
 * mounts and again whenever the session's `subagentCatalog` changes (a child spawned or
 * recorded). One listing is on its way at a time; changes meanwhile fold into one more. A
 * listing never lands after the component unmounted or moved to another handle or options
 * (it is aborted, and its answer dropped), so an older listing never replaces a newer one.
 *
 * With `recursive`, the whole tree is live (`view.watchChildren`): a grandchild spawned later,
 * a catalog changing anywhere below, a child opened or closed for writing in any tab or
 * process, each shows without `refresh()`. Without it, the session's own catalog is watched.
 *
 * @param view a Session or SessionView, or null (then nothing is listed)
 * @returns `children` (undefined until the first listing lands, then kept while the next one
 * is on its way), `error` (why the last listing failed: a SessionfoldError, e.g.
 * INVALID_ARGUMENT for bad options), `loading`, and `refresh`
 * @example
 * const { children, error } = useChildren(session, { recursive: true })
 * if (error) return createElement('p', null, error.message)
 * return createElement('ul', null, ...(children ?? []).map((c) => createElement('li', { key: c.id }, c.id)))
 */
export function useChildren(view: ChildrenSource | null | undefined, options?: UseChildrenOptions): ChildrenResult {
  const recursive = typeof options === 'object' && options !== null ? options.recursive : undefined
  // A new listing when the handle or `recursive` changes; options are read as they were then.
  // biome-ignore lint/correctness/useExhaustiveDependencies: keyed on `recursive`, not on the options object's identity
  const listing = useMemo(() => (view ? new ChildrenListing(view, options) : undefined), [view, recursive])
  const get: () => ChildrenState = listing?.getSnapshot ?? idle
  const state = useSyncExternalStore(listing?.subscribe ?? noSubscription, get, get)
  return useMemo(() => (listing ? { ...state, refresh: listing.refresh } : IDLE), [listing, state])
}

export interface SessionsResult extends SessionsState {
  /** Widens the list by `n` rows (default: the query's `limit`); resolves once they are in `items`. */
  more: (n?: number) => Promise<void>
}

const NO_SESSIONS: SessionsResult = Object.freeze({ items: Object.freeze([]), hasMore: false, loading: false, error: undefined, more: async () => {} })

/**
 * The store's session list (`store.sessions(query)`), live: the component re-renders when its
 * rows change (a session created, written, retitled, deleted or opened for writing anywhere:
 * this tab, another tab or process, a replication), and only then. The list is made while the
 * component is mounted and closed when it unmounts; a new one when the store or the query's
 * content changes. Empty while `store` is null.
 *
 * @param store the store (or null while it opens)
 * @param query as `store.sessions` takes it: `{ roots, tag, search, order, limit }`
 * @example
 * const { items, hasMore, more } = useSessions(store, { limit: 30 })
 * return createElement('ul', null, ...items.map((s) => createElement('li', { key: s.id }, s.title ?? s.id)))
 */
export function useSessions(store: SessionsSource | null | undefined, query?: SessionQuery): SessionsResult {
  const key = JSON.stringify(query ?? null)
  // biome-ignore lint/correctness/useExhaustiveDependencies: keyed on the query's content, not on the object's identity
  const listing = useMemo(() => (store ? new SessionsListing(store, query) : undefined), [store, key])
  const get: () => SessionsState = listing?.getSnapshot ?? noSessions
  const state = useSyncExternalStore(listing?.subscribe ?? noSubscription, get, get)
  return useMemo(() => (listing ? { ...state, more: listing.more } : NO_SESSIONS), [listing, state])
}
const noSessions = (): SessionsState => NO_SESSIONS
