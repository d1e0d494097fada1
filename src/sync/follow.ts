// store.follow(streamUrl): a Durable Stream of any server speaking the protocol, copied into a
// session of this store and folded like any session (DESIGN §16). It reads from the offset the
// copy is at (kept by the engine with the events it copied, so a restart resumes there and
// copies nothing twice), then tails with long-polls; status and backoff are a replication's
// (link.ts): `online` only after a request just succeeded, `offline` with a growing backoff
// while the server is away, `error` while it refuses.
import { SessionfoldError, tellEach } from '../core/errors'
import { isSessionId } from '../core/limits'
import type { StreamAnswer, StreamRequest } from '../core/streams'
import { assertOptions, describe, isPlainObject } from '../core/validate'
import { errorOf } from './link'
import type { FollowHost, FollowOptions, FollowState } from './types'

export type { FollowOptions, FollowState } from './types'

const KNOWN = ['id', 'live', 'headers', 'signal', 'pollMs', 'maxBackoffMs', 'fetch']

/** A running copy of a Durable Stream into a session (`store.follow`). */
export class Follow {
  #state: FollowState
  readonly #listeners = new Set<(state: FollowState) => void>()
  readonly #stop = new AbortController()
  readonly #done: Promise<void>
  #kick: (() => void) | undefined

  /** @internal Made by `store.follow`. */
  constructor(
    request: (request: StreamRequest) => Promise<StreamAnswer>,
    /** The stream's URL. */
    readonly url: string,
    options: FollowOptions = {},
  ) {
    // A headers function and a fetch run here, in the app's thread: never cloned to the engine.
    assertOptions(options, 'follow', KNOWN, undefined, ['headers', 'fetch'])
    const { id, pollMs, maxBackoffMs, headers } = options
    const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `follow: ${why}`)
    const path = /^https?:\/\/[^/]+(\/[^?#]*)/.exec(url)?.[1]
    if (typeof url !== 'string' || path === undefined) throw bad(`an http(s) URL, not ${describe(url)}`)
    const session = id ?? path.slice(path.lastIndexOf('/') + 1)
    if (!isSessionId(session)) throw bad(`${describe(session)} is not a session id (give options.id)`)
    for (const n of [pollMs, maxBackoffMs])
      if (n !== undefined && !(typeof n === 'number' && n > 0 && n < Infinity)) throw bad('pollMs and maxBackoffMs are positive numbers')
    if (headers !== undefined && typeof headers !== 'function' && !isPlainObject(headers)) throw bad('headers are an object or a function')
    if (options.fetch !== undefined && typeof options.fetch !== 'function') throw bad('fetch is a function')
    this.#state = { status: 'connecting', id: session, offset: null, copied: 0 }
    options.signal?.addEventListener('abort', () => void this.close(), { once: true })
    const host: FollowHost = {
      url,
      options,
      request,
      signal: this.#stop.signal,
      state: () => this.#state,
      set: (patch) => this.#set(patch),
      setKick: (kick) => {
        this.#kick = kick
      },
    }
    // The loop is loaded at the first follow: the client bundle of an app that never follows does not carry it.
    this.#done = import('./follow-loop').then(({ runFollow }) => runFollow(host)).catch((err: unknown) => this.#set({ status: 'error', error: errorOf(err) }))
  }

  /** Where it stands (see {@link FollowState}). */
  get status(): FollowState['status'] {
    return this.#state.status
  }

  /** The whole state: status, session, offset, events copied, the last failure. */
  get state(): FollowState {
    return this.#state
  }

  /** Calls `listener` with the current state, then with each change; returns its unsubscribe. */
  subscribe(listener: (state: FollowState) => void): () => void {
    this.#listeners.add(listener)
    listener(this.#state)
    return () => this.#listeners.delete(listener)
  }

  /** Stops following; resolves once the copy under way (if any) is written. */
  async close(): Promise<void> {
    this.#stop.abort()
    this.#kick?.()
    await this.#done
  }

  #set(patch: Partial<FollowState>): void {
    const next = { ...this.#state, ...patch }
    if (patch.status === 'online' || patch.status === 'closed') {
      delete next.error
      delete next.retryAt
    }
    if (Object.entries(patch).every(([k, v]) => this.#state[k as keyof FollowState] === v)) return
    this.#state = next
    tellEach(this.#listeners, (f) => f(next))
  }
}
