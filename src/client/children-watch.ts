// A live listing of a session's children (view.watchChildren): the rows of listChildren, listed
// again whenever a catalog in the listed tree changes or a listed child's activity may have
// changed, and handed to the listener only when they differ from the last ones it had.
// - Catalogs: every session of the tree whose catalog can grow is observed (this view's own,
//   and with `recursive` each child's), so a spawn anywhere, by any tab or process, arrives as
//   a push of that catalog, as it does for any observed value.
// - Activity (a child opened or closed for writing): this store's own opens and closes list at
//   once; other tabs' and processes' show at the next re-listing, every ACTIVITY_MS while
//   someone watches (the locks of a store announce nothing when they change).
// - Coalesced: a listing waits for QUIET_MS without a change (at most MAX_WAIT_MS after the first
//   one, so a steady stream still shows), one listing at a time, and changes during it fold into
//   one more after it: a burst of spawns costs one or two listings.
import type { ListChildrenOptions, SubagentListEntry } from '../core/children'
import { isSessionfoldError, type SessionfoldError, tellEach } from '../core/errors'
import type { SessionId } from '../core/model'

/** How often a watch lists again for activity it cannot hear (other tabs' and processes' writers). */
export const ACTIVITY_MS = 1000
/** A listing waits for this long without a change, and at most MAX_WAIT_MS after the first change it waits for. */
const QUIET_MS = 25
const MAX_WAIT_MS = 250

/** What `watchChildren` calls: the rows, or (once, at the end) the error that stopped the watch. */
export type ChildrenListener = (rows: SubagentListEntry[], meta: { error?: SessionfoldError }) => void

/** What a watch needs of its view and store. */
export interface ChildrenWatchHost {
  list(options: ListChildrenOptions): Promise<SubagentListEntry[]>
  /** Calls `onChange` on every change of `id`'s catalog (this view's own: `id` undefined); returns the stop. */
  watchCatalog(id: SessionId | undefined, onChange: () => void): Promise<() => void>
  /** Registers for this store's own writer opens and closes; returns the stop. */
  onActivity(onChange: () => void): () => void
}

export class ChildrenWatch {
  #stopped = false
  #inFlight = false
  #again = false
  /** The listing waiting for a quiet moment, and when the first change it waits for came. */
  #pending: ReturnType<typeof setTimeout> | undefined
  #firstChange: number | undefined
  #rows: SubagentListEntry[] | undefined
  /** The catalogs watched, by session (undefined: this view's own), with their stops (pending while the observe is on its way). */
  readonly #catalogs = new Map<SessionId | undefined, Promise<() => void>>()
  readonly #timer: ReturnType<typeof setInterval>
  readonly #offActivity: () => void

  constructor(
    private readonly host: ChildrenWatchHost,
    private readonly recursive: boolean,
    private readonly listener: ChildrenListener,
  ) {
    this.#watch(undefined)
    this.#offActivity = host.onActivity(this.schedule)
    this.#timer = setInterval(this.schedule, ACTIVITY_MS)
    // A watch alone keeps no Node process alive; what it observes does, while followed.
    ;(this.#timer as { unref?: () => void }).unref?.()
    this.schedule()
  }

  /** Lists again soon (after the listing on its way, if any): many calls in one task are one listing. */
  readonly schedule = (): void => {
    if (this.#stopped) return
    if (this.#inFlight) {
      this.#again = true
      return
    }
    const now = Date.now()
    this.#firstChange ??= now
    clearTimeout(this.#pending)
    this.#pending = setTimeout(
      () => {
        this.#pending = undefined
        this.#firstChange = undefined
        void this.#list()
      },
      Math.min(QUIET_MS, Math.max(0, this.#firstChange + MAX_WAIT_MS - now)),
    )
  }

  stop(): void {
    if (this.#stopped) return
    this.#stopped = true
    clearTimeout(this.#pending)
    clearInterval(this.#timer)
    this.#offActivity()
    for (const stop of this.#catalogs.values())
      void stop.then(
        (f) => f(),
        () => {},
      )
    this.#catalogs.clear()
  }

  async #list(): Promise<void> {
    if (this.#stopped) return
    this.#inFlight = true
    let rows: SubagentListEntry[]
    try {
      rows = await this.host.list({ recursive: this.recursive })
    } catch (err) {
      this.#inFlight = false
      if (this.#stopped) return
      // The view or store closed: the watch ends quietly; anything else ends it with its error.
      if (isSessionfoldError(err, 'CLOSED')) return this.stop()
      this.stop()
      tellEach([this.listener], (f) => f(this.#rows ?? [], { error: err as SessionfoldError }))
      return
    }
    this.#inFlight = false
    if (this.#stopped) return
    if (this.recursive) this.#follow(rows)
    if (!sameRows(this.#rows, rows)) {
      this.#rows = rows
      tellEach([this.listener], (f) => f(rows, {}))
    }
    if (this.#again) {
      this.#again = false
      this.schedule()
    }
  }

  /** Watches the catalog of every local child in `rows` (any may spawn later), and no other. */
  #follow(rows: readonly SubagentListEntry[]): void {
    const wanted = new Set<SessionId>()
    for (const row of rows) if (row.kind === 'child' && row.mode !== 'external') wanted.add(row.id)
    for (const id of wanted) if (!this.#catalogs.has(id)) this.#watch(id)
    for (const [id, stop] of this.#catalogs) {
      if (id === undefined || wanted.has(id)) continue
      this.#catalogs.delete(id)
      void stop.then(
        (f) => f(),
        () => {},
      )
    }
  }

  #watch(id: SessionId | undefined): void {
    const stop = this.host.watchCatalog(id, this.schedule)
    // A child that cannot be observed (deleted meanwhile) is shown by its row; nothing to watch.
    stop.catch(() => {})
    this.#catalogs.set(id, stop)
  }
}

/** What a watched tree needs of a handle: its listing and its own catalog. */
interface TreeRoot {
  listChildren(options: ListChildrenOptions): Promise<SubagentListEntry[]>
  readonly projections: { subscribe(key: 'subagentCatalog', listener: () => void): () => void }
}

/**
 * The watch of `root`'s tree: its own catalog subscribed, each child's observed (`observe`, a
 * read-only handle of the same store, closed when the child leaves the tree or the watch
 * stops), and this store's writer opens and closes heard through `activity`.
 */
export function watchTree(
  root: TreeRoot,
  observe: (id: SessionId) => Promise<TreeRoot & { close(): Promise<void> }>,
  activity: Set<() => void>,
  recursive: boolean,
  listener: ChildrenListener,
): ChildrenWatch {
  return new ChildrenWatch(
    {
      list: (options) => root.listChildren(options),
      watchCatalog: async (id, onChange) => {
        // A subscription first hands over the value as it is, which the listing already has:
        // only the changes after it count.
        let current = true
        const changed = () => {
          if (current) current = false
          else onChange()
        }
        if (id === undefined) return root.projections.subscribe('subagentCatalog', changed)
        const child = await observe(id)
        const off = child.projections.subscribe('subagentCatalog', changed)
        return () => {
          off()
          void child.close().catch(() => {})
        }
      },
      onActivity: (onChange) => {
        activity.add(onChange)
        return () => activity.delete(onChange)
      },
    },
    recursive,
    listener,
  )
}

/** Whether two listings have the same rows, field by field (rows are flat). */
export function sameRows(held: readonly SubagentListEntry[] | undefined, rows: readonly SubagentListEntry[]): boolean {
  if (!held || held.length !== rows.length) return false
  return held.every((row, i) => {
    const other = rows[i] as Record<string, unknown>
    const keys = Object.keys(row)
    return keys.length === Object.keys(other).length && keys.every((k) => (row as Record<string, unknown>)[k] === other[k])
  })
}
