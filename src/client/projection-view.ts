// What a Session or SessionView holds of its session's projections: the values pushed by the
// worker, readable synchronously, with subscriptions batched (see listeners.ts).
import { SessionfoldError, where } from '../core/errors'
import type { Json } from '../core/model'
import type { ProjectionFault, ProjectionSnapshot } from '../core/projection'
import type { Frame } from '../core/protocol'
import type { ProjectionMap } from '../core/units'
import { Listeners, NotifyClock } from './listeners'

/**
 * A list value grown by a frame: `held` was the list of `from` items, or already some of the new
 * ones (a handle opened while they were on their way); undefined when `held` is no such list.
 * A new array, so the value changes identity (React's useSyncExternalStore sees it); the items
 * held are kept as they are, checked when they arrived.
 */
function grownList(held: Json | null | undefined, from: number, items: Json[]): Json[] | undefined {
  if (!Array.isArray(held) || held.length < from || held.length > from + items.length) return undefined
  const skip = held.length - from
  return skip === items.length ? held : held.concat(skip === 0 ? items : items.slice(skip))
}

/** Keys known to the type system: built-in ones and those an app merged into ProjectionMap. */
export type ProjectionKey = keyof ProjectionMap & string

/** What a subscriber hears with each value or snapshot. */
export interface ChangeMeta {
  /** asOfSeq of the value delivered. */
  seq: number
  /**
   * True in the notification after the session's log was replaced by another history of it:
   * a sync conflict resolved by a fork (`connect`'s `onConflict: 'fork'`, the default) gave the
   * session the server's events, and this device's own moved to the fork. The values are those
   * of the new log; `seq` may be lower than the one heard before (once).
   */
  reset?: true
  /**
   * Set in the last notification, once the values stop following the log: `CLOSED` (the store
   * closed), `WORKER_TERMINATED` (its worker died), `PROJECTIONS_UNAVAILABLE` (the worker sent
   * values that could not be trusted). After CLOSED or WORKER_TERMINATED, every call on the
   * store or its handles rejects with that code, one made from this notification included.
   */
  error?: SessionfoldError
}

// biome-ignore lint/suspicious/noExplicitAny: each key's listener takes that key's view type; they share one set
type KeyListener = (value: any, meta: ChangeMeta) => void
type MapListener = (snapshot: ProjectionSnapshot<ProjectionMap>, meta: ChangeMeta) => void

/**
 * A session's projection values as this handle sees them: `get` and `snapshot` are
 * synchronous and current; `subscribe` delivers the current value first, then every change,
 * batched (a burst of appends notifies once, with the final state).
 *
 * @example
 * // React: a component's snapshot, re-rendered on every append
 * const snapshot = useSyncExternalStore(
 *   (onChange) => session.projections.subscribe(() => onChange()),
 *   () => session.projections.snapshot(),
 * )
 * @example
 * // Svelte: one key as a readable store ($catalog in a component)
 * type Catalog = ProjectionMap['subagentCatalog'] | null
 * const catalog = { subscribe: (run: (value: Catalog) => void) => session.projections.subscribe('subagentCatalog', run) }
 */
export class ProjectionMapView {
  #values: Record<string, Json | null>
  #faults: Record<string, ProjectionFault>
  #asOfSeq: number
  #snapshot: ProjectionSnapshot<ProjectionMap> | undefined
  readonly #keyListeners = new Map<string, Listeners<KeyListener>>()
  readonly #mapListeners = new Listeners<MapListener>()
  /** Keys whose listeners hear the next notification. */
  readonly #changed = new Set<string>()
  readonly #clock = new NotifyClock(() => this.#notify())
  #waiters: { seq: number; resolve: () => void; reject: (e: unknown) => void }[] = []
  #error: SessionfoldError | undefined
  /** A reset frame was applied since the last notification (ChangeMeta.reset). */
  #reset = false
  #subscribers = 0
  /** @internal Told when the view gains its first subscriber (true) and loses its last (false). */
  _onSubscribed: ((subscribed: boolean) => void) | undefined

  /** @internal */
  constructor(initial: ProjectionSnapshot) {
    // No prototype: a key is a value of this session or nothing (`get('valueOf')` is null).
    this.#values = Object.assign(Object.create(null) as Record<string, Json | null>, initial.values)
    this.#faults = { ...(initial.faults as Record<string, ProjectionFault>) }
    this.#asOfSeq = initial.asOfSeq
  }

  /** The last seq folded into these values (-1 for an empty log). */
  get asOfSeq(): number {
    return this.#asOfSeq
  }

  /** The current value of `key` (null when there is none, or the unit faulted). */
  get<K extends ProjectionKey>(key: K): ProjectionMap[K] | null {
    return (this.#values[key] ?? null) as ProjectionMap[K] | null
  }

  /** The same object until something changes, as React's useSyncExternalStore wants. */
  snapshot(): ProjectionSnapshot<ProjectionMap> {
    this.#snapshot ??= Object.freeze({
      asOfSeq: this.#asOfSeq,
      values: Object.freeze({ ...this.#values }),
      faults: Object.freeze({ ...this.#faults }),
    }) as ProjectionSnapshot<ProjectionMap>
    return this.#snapshot
  }

  /**
   * Called with the current value now, then on every change of it, and once more with
   * `meta.error` when the values stop (the store closed, its worker died). Returns unsubscribe.
   */
  subscribe<K extends ProjectionKey>(key: K, listener: (value: ProjectionMap[K] | null, meta: ChangeMeta) => void): () => void
  /**
   * Called with the current snapshot now, then whenever asOfSeq advances (batched), and once
   * more with `meta.error` when the values stop (the store closed, its worker died).
   */
  subscribe(listener: (snapshot: ProjectionSnapshot<ProjectionMap>, meta: ChangeMeta) => void): () => void
  subscribe(keyOrListener: string | MapListener, maybe?: KeyListener): () => void {
    if (typeof keyOrListener === 'function') {
      const unsubscribe = this.#counted(this.#mapListeners.add(keyOrListener))
      keyOrListener(this.snapshot(), this.#meta())
      return unsubscribe
    }
    if (typeof keyOrListener !== 'string' || typeof maybe !== 'function') {
      throw new SessionfoldError('INVALID_ARGUMENT', 'subscribe takes (key, listener) or (listener)')
    }
    const key = keyOrListener
    let listeners = this.#keyListeners.get(key)
    if (!listeners) this.#keyListeners.set(key, (listeners = new Listeners()))
    const unsubscribe = this.#counted(listeners.add(maybe))
    maybe(this.#values[key] ?? null, this.#meta())
    return unsubscribe
  }

  /** Counts a subscription until its (idempotent) unsubscribe. */
  #counted(remove: () => void): () => void {
    if (this.#subscribers++ === 0) this._onSubscribed?.(true)
    let removed = false
    return () => {
      remove()
      if (removed) return
      removed = true
      if (--this.#subscribers === 0) this._onSubscribed?.(false)
    }
  }

  /** The error that stopped these values, if any. */
  get error(): SessionfoldError | undefined {
    return this.#error
  }

  #meta(): ChangeMeta {
    const meta: ChangeMeta = this.#error ? { seq: this.#asOfSeq, error: this.#error } : { seq: this.#asOfSeq }
    if (this.#reset) meta.reset = true
    return meta
  }

  /** @internal Applies a pushed frame; frames at or before what we hold are old news, but for a reset. */
  _apply(frame: Frame): void {
    if (this.#error || (frame.seq <= this.#asOfSeq && !frame.reset)) return
    if (frame.reset) {
      // Another history: every value is the frame's, none held before counts.
      for (const key of Object.keys(this.#values)) if (!Object.hasOwn(frame.values, key)) this.#changed.add(key)
      this.#values = Object.create(null) as Record<string, Json | null>
      this.#reset = true
    }
    // Lists that only grew first: a frame whose new items do not continue what is held here
    // changes nothing, and these values stop.
    const grown: [string, Json[]][] = []
    for (const [key, { from, items }] of Object.entries(frame.grown ?? {})) {
      const list = grownList(this.#values[key], from, items)
      if (!list) {
        const sessionId = frame.sessionId
        this._fail(
          new SessionfoldError(
            'PROJECTIONS_UNAVAILABLE',
            `the worker sent new items of ${key} for ${where(sessionId)} that do not continue the list held here`,
            { sessionId },
          ),
        )
        return
      }
      if (list !== this.#values[key]) grown.push([key, list])
    }
    for (const [key, value] of [...Object.entries(frame.values), ...grown]) {
      this.#values[key] = value
      this.#changed.add(key)
    }
    for (const key of new Set([...Object.keys(this.#faults), ...Object.keys(frame.faults)])) {
      if (this.#faults[key] !== frame.faults[key]) this.#changed.add(key)
    }
    this.#faults = { ...frame.faults }
    this.#asOfSeq = frame.seq
    this.#snapshot = undefined
    this.#waiters = this.#waiters.filter((w) => (w.seq <= frame.seq ? (w.resolve(), false) : true))
    this.#clock.schedule()
  }

  /** @internal Resolves once the values reflect `seq` (read your writes). */
  _waitFor(seq: number): Promise<void> {
    if (this.#error) return Promise.reject(this.#error)
    if (seq <= this.#asOfSeq) return Promise.resolve()
    return new Promise((resolve, reject) => this.#waiters.push({ seq, resolve, reject }))
  }

  /** @internal The values will not move again: tell waiters and every subscriber. */
  _fail(error: SessionfoldError): void {
    if (this.#error) return
    this.#error = error
    // Nothing will change any more: nothing to stay up for.
    this._onSubscribed?.(false)
    this._onSubscribed = undefined
    for (const w of this.#waiters) w.reject(error)
    this.#waiters = []
    for (const key of this.#keyListeners.keys()) this.#changed.add(key)
    this.#snapshot = undefined
    this.#clock.schedule()
  }

  #notify(): void {
    const changed = [...this.#changed]
    this.#changed.clear()
    const meta = this.#meta()
    this.#reset = false
    for (const key of changed) this.#keyListeners.get(key)?.each((listener) => listener(this.#values[key] ?? null, meta))
    // Scheduled only when asOfSeq advanced or the values stopped: map listeners hear each batch,
    // and the stop with its error, as key listeners do.
    const snap = this.snapshot()
    this.#mapListeners.each((listener) => listener(snap, meta))
  }
}
