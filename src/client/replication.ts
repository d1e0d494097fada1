// store.connect(url): a replication with a server made by createSyncHandler. It pushes what
// the local store's change feed names after its push cursor, pulls (or, live, streams) what the
// server has after its pull cursor, and keeps both cursors in the store. Runs on the thread
// that called connect; the store's calls it makes go to the engine like any other.
import type { SyncConflict } from '../changes'
import { SessionfoldError } from '../errors'
import { hash53 } from '../hash'
import type { SessionId } from '../model'
import { assertSessionId, describe, isPlainObject } from '../validate'
import type { ConnectOptions, LoopHost, ReplicationState, ReplicationStatus, ReplicationStore } from './replication-types'

export type { ConnectOptions, ReplicationState, ReplicationStatus, ReplicationStore } from './replication-types'

const KNOWN = ['headers', 'sessions', 'live', 'signal', 'pollMs', 'maxBackoffMs', 'fetch']

/**
 * A running sync with a server (see `store.connect`). Read `status`, `pending` and `conflicts`,
 * or `subscribe` to them; `close()` stops it (the cursors stay in the store: the next connect
 * resumes).
 */
export class Replication {
  readonly #store: ReplicationStore
  readonly #base: string
  readonly #options: ConnectOptions
  readonly #fetch: typeof fetch
  readonly #key: string
  readonly #stop = new AbortController()
  readonly #listeners = new Set<(state: ReplicationState) => void>()
  readonly #onClose: (() => void)[] = []
  #state: ReplicationState = { status: 'connecting', pending: 0, conflicts: [], pushed: 0, pulled: 0 }
  #kick: (() => void) | undefined
  /** A kick that came while the loop was busy: its next sleep returns at once. */
  #kicked = false
  #running: Promise<void>
  #idle: (() => void)[] = []

  /** @internal Made by `store.connect`. */
  constructor(store: ReplicationStore, url: string | URL, options: ConnectOptions) {
    if (!isPlainObject(options as unknown)) throw bad(`connect options must be an object, got ${describe(options)}`)
    for (const key of Object.keys(options)) if (!KNOWN.includes(key)) throw bad(`connect has no option ${describe(key)}`)
    let parsed: URL
    try {
      parsed = new URL(String(url), (globalThis as { location?: { href: string } }).location?.href)
    } catch {
      throw bad(`connect needs a URL, got ${describe(url)}`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw bad(`connect needs an http(s) URL, got ${describe(String(url))}`)
    if (options.sessions !== undefined) {
      if (!Array.isArray(options.sessions)) throw bad('connect sessions must be an array of session ids')
      for (const id of options.sessions) assertSessionId(id)
    }
    if (options.headers !== undefined && typeof options.headers !== 'function' && !isPlainObject(options.headers)) throw bad('connect headers must be an object or a function')
    this.#store = store
    this.#base = parsed.href.replace(/\/+$/, '')
    this.#options = options
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis)
    this.#key = `sync-${hash53(`${this.#base}\n${JSON.stringify(options.sessions ?? null)}`)}`
    options.signal?.addEventListener('abort', () => void this.close(), { once: true })
    const online = () => this.#kick?.()
    const target = globalThis as { addEventListener?: (t: string, f: () => void) => void; removeEventListener?: (t: string, f: () => void) => void }
    target.addEventListener?.('online', online)
    this.#onClose.push(() => target.removeEventListener?.('online', online))
    const host: LoopHost = {
      store, base: this.#base, key: this.#key, options, fetch: this.#fetch, signal: this.#stop.signal,
      state: () => this.#state,
      set: (patch) => this.#set(patch),
      takeWaiting: () => this.#idle.splice(0),
      returnWaiting: (waiting) => void this.#idle.unshift(...waiting),
      setKick: (kick) => {
        this.#kick = kick
      },
      consumeKick: () => {
        const was = this.#kicked
        this.#kicked = false
        return was
      },
    }
    // The network side loads on the first connect: apps that never sync do not ship it.
    this.#running = import('./replication-loop').then(({ runReplication }) => runReplication(host)).catch((err: unknown) => {
      this.#set({ status: 'error', error: { code: 'STORAGE_UNAVAILABLE', message: `the replication stopped: ${(err as Error)?.message ?? err}` } })
    })
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

  /** Resolves once everything local was pushed and the server had nothing more to send (as of then). */
  whenSynced(): Promise<void> {
    if (this.#stop.signal.aborted) return Promise.reject(new SessionfoldError('CLOSED', 'the replication is closed'))
    return new Promise((resolve) => {
      this.#idle.push(resolve)
      this.#kick?.()
    })
  }

  /** Stops pushing and pulling; the cursors stay in the store. */
  async close(): Promise<void> {
    if (!this.#stop.signal.aborted) {
      this.#stop.abort()
      this.#kick?.()
      for (const f of this.#onClose.splice(0)) f()
    }
    await this.#running
  }

  /** @internal Local writes landed (the store tells): push them now. */
  _kick(): void {
    if (this.#kick) this.#kick()
    else this.#kicked = true
  }

  /** @internal */
  onClose(f: () => void): void {
    this.#onClose.push(f)
  }

  #set(patch: Partial<ReplicationState>): void {
    const next = { ...this.#state, ...patch }
    if (patch.status && patch.status !== 'offline' && patch.status !== 'error') delete next.error
    if (JSON.stringify(next) === JSON.stringify(this.#state)) return
    this.#state = next
    for (const l of this.#listeners) {
      try {
        l(next)
      } catch {
        // a subscriber's failure is its own
      }
    }
  }
}

function bad(message: string): SessionfoldError {
  return new SessionfoldError('INVALID_ARGUMENT', message)
}
