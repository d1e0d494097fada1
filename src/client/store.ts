// The Store: opens handles on sessions, lists, verifies, exchanges changes with other stores,
// and closes. openStore (open-store.ts) makes one over a Connection.
import type { ApplyResult, ChangeBatch, ChangeCursor, Changes, ChangesOptions } from '../core/changes'
import type { StreamAnswer, StreamRequest } from '../core/streams'
import { Follow, type FollowOptions } from '../sync/follow'
import { applyResultProblem, changesProblem } from './answer-checks'
import { SessionfoldError } from '../core/errors'
import { handleProblem, headerProblem, verifyPlanProblem, verifyStepProblem } from './answer-checks'
import type { SessionHeader, SessionId } from '../core/model'
import { isCount } from '../core/limits'
import type { Push, VerifyReport } from '../core/protocol'
import type { EngineApi } from '../host/host'
import { assertOptions, assertPlainJson, assertSessionId, describe, isPlainObject, metaOf } from '../core/validate'
import type { Connection } from './connection'
import { EngineCalls } from './engine-calls'
import { LiveViews } from './live-views'
import { AppendQueue } from './append-queue'
import { StreamQueue } from './stream-queue'
import { checkKey } from './keys'
import { Session, SessionView, type HandleScope } from './session'
import { Replication, ReplicationRouter, type ConnectOptions } from '../sync/connect'
import { resolveSessionQuery, type ResolvedSessionQuery, type SessionQuery } from '../core/session-list'
import { SessionList } from './session-list'
import { sessionsPageProblem } from './answer-checks'

/** Events verified per round trip to the worker: progress and cancellation happen between them. */
const VERIFY_BUDGET = 50_000

/** Options of {@link Store.deleteSession}. */
export interface DeleteSessionOptions {
  /** The session with every descendant in its catalogs, all or nothing, children first. Default false: that session alone. */
  tree?: boolean
}

/** Options of {@link Store.verify}. */
export interface VerifyOptions {
  /** Aborting it rejects the call with `CANCELLED` (checked between steps of about 50,000 events). */
  signal?: AbortSignal
  /** Called after each step with events read so far (`done`) and the events stored when verify began (`total`). */
  onProgress?: (progress: { done: number; total: number }) => void
}

/** Options of {@link Store.rotateKey}. */
export interface RotateKeyOptions {
  /** Called at the start and after each session: `sessions` to walk (those there at the start, and any made meanwhile it met), `done` so far, their `events`. */
  onProgress?: (progress: { sessions: number; done: number; events: number }) => void
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/** INVALID_ARGUMENT unless `options` is an object of `fields` only, its `onProgress` a function if any. */
function checkProgressOptions(options: unknown, what: string, fields: string[]): void {
  if (!isPlainObject(options)) throw bad(`${what} options must be an object, got ${describe(options)}`)
  const unknown = Object.keys(options).find((k) => !fields.includes(k))
  if (unknown !== undefined) throw bad(`${what} options have an unknown field ${describe(unknown)}`)
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function')
    throw bad(`${what} onProgress must be a function, got ${describe(options.onProgress)}`)
}

/**
 * A store, made by `openStore()`: it opens handles on sessions ({@link Store.createSession},
 * {@link Store.openSession}, {@link Store.observe}), lists and deletes sessions, verifies the
 * store and exchanges changes with other stores. Close it ({@link Store.close}) to flush
 * pending appends and release every lock and the worker.
 */
export class Store {
  readonly #connection: Connection
  readonly #views = new LiveViews()
  readonly #calls: EngineCalls
  readonly #streams: StreamQueue
  /** What its handles use of it. */
  readonly #scope: HandleScope
  readonly #replications = new Set<Replication>()
  /** Replication states pushed by the host, to the replication each is for. */
  readonly #routes = new ReplicationRouter()
  /** The open session lists' calls for a change of the session index. */
  readonly #sessionWatchers = new Set<(ended?: SessionfoldError) => void>()
  /** The last rotateKey of this store: the next one waits for it. */
  #rotating: Promise<unknown> = Promise.resolve()

  /** @internal */
  constructor(connection: Connection, maxEventBytes: number) {
    this.#connection = connection
    this.#calls = new EngineCalls(connection, (err) => {
      this.#views.failAll(err)
      for (const replication of this.#replications) replication._failed(err)
    })
    const appends = new AppendQueue(this.#calls)
    this.#streams = new StreamQueue(this.#calls, () => appends.flush())
    this.#scope = { calls: this.#calls, appends, views: this.#views, maxEventBytes, activity: new Set() }
  }

  /** @internal A call to the engine: CLOSED after close, WORKER_TERMINATED once it died. */
  _call<T>(fn: (api: EngineApi) => Promise<T>): Promise<T> {
    return this.#calls.call(fn)
  }

  /** @internal What the host pushes: frames to the views, replication states to their replication. */
  readonly _push = (push: Push): void => {
    if (push?.kind === 'frames') this.#views.push(push.frames)
    else if (push?.kind === 'replication') this.#routes.deliver(push.id, push.event)
    else if (push?.kind === 'sessions') for (const changed of [...this.#sessionWatchers]) changed()
    else if (push?.kind === 'streams') this.#streams.deliver(push.answers)
    else this.#views.failAll(new SessionfoldError('PROJECTIONS_UNAVAILABLE', 'the worker pushed a message of no known kind'))
  }

  /**
   * Creates a root session (`origin: 'root'`), open for writing by the returned handle.
   * `id` defaults to a new random id; a taken id is `SESSION_EXISTS` (even while that session is
   * open for writing), a malformed one `INVALID_ARGUMENT`. `cwd` is kept in the header.
   * `title` (at most 200 characters) and `tags` (at most 20, of 1-64 characters each, none
   * twice) are its first event, `session/meta`: the `sessionMeta` projection shows them, and
   * `session.setMeta()` changes them.
   */
  async createSession(options: { id?: SessionId; cwd?: string; title?: string; tags?: string[] } = {}): Promise<Session> {
    assertOptions(options, 'createSession', ['id', 'cwd', 'title', 'tags'])
    if (options.id !== undefined) assertSessionId(options.id)
    metaOf(options, 'createSession options', options.id)
    const info = await this.#calls.checked('handle', (api) => api.createSession(options), handleProblem, options.id)
    return new Session(this.#scope, info)
  }

  /**
   * Opens an existing session for writing. One writer per session: `SESSION_LOCKED` while another client (a handle of this store,
   * another tab, thread or process) has it so; a dead process's or closed tab's lock is taken over. `SESSION_NOT_FOUND` without the session.
   */
  async openSession(id: SessionId): Promise<Session> {
    assertSessionId(id)
    const info = await this.#calls.checked('handle', (api) => api.openSession(id), handleProblem, id)
    return new Session(this.#scope, info)
  }

  /**
   * Follows a session read-only: its projections follow every writer's appends, in this store
   * or in another tab, thread or process. Always allowed, also while someone writes to it.
   * `SESSION_NOT_FOUND` when there is no such session.
   *
   * With `{ at }`: the session as it was after its first `at` events (`0 <= at <= length`,
   * else `INVALID_ARGUMENT`), frozen: `snapshot().asOfSeq === at - 1`, values equal to a
   * refold of those events, `events()` yields only them, `listChildren()` reads the catalog as
   * it was then (each child as it is now), and appends do not move it. It costs about the same
   * anywhere in a log of any length: the engine keeps a sparse history of checkpoint rows.
   *
   * @example
   * const then = await store.observe(id, { at: 120 })   // as it was after 120 events
   * then.projections.get('subagentTiming')   // the turn timing then
   */
  async observe(id: SessionId, options?: { at?: number }): Promise<SessionView> {
    assertSessionId(id)
    assertOptions(options, 'observe', ['at'], id)
    const at = options?.at
    if (at !== undefined) {
      const info = await this.#calls.checked('handle', (api) => api.observe(id, { at }), handleProblem, id)
      return new SessionView(this.#scope, info)
    }
    const info = await this.#calls.checked('handle', (api) => api.observe(id), handleProblem, id)
    return new SessionView(this.#scope, info)
  }

  /**
   * One page of the store's session headers (roots, forks and subagents alike), ordered by id
   * (code unit order), strictly after the id `after`, at most `limit` of them (1 to 10,000,
   * default 100). To list them all, pass the last id of a page as `after` until a page comes
   * back shorter than `limit`. A session whose header cannot be read is left out (`verify`
   * reports it).
   *
   * @example
   * for (let page = await store.listSessions(); page.length > 0; ) {
   *   for (const h of page) console.log(h.id, h.origin, new Date(h.createdAt))
   *   page = page.length < 100 ? [] : await store.listSessions({ after: page.at(-1)!.id })
   * }
   */
  async listSessions(options?: { after?: SessionId; limit?: number }): Promise<SessionHeader[]> {
    assertOptions(options, 'listSessions', ['after', 'limit'])
    return this.#calls.checked(
      'session list',
      (api) => api.listSessions(options),
      (list) => (Array.isArray(list) ? list.map(headerProblem).find((p) => p !== undefined) : 'not an array'),
    )
  }

  /**
   * A live list of the store's sessions, sorted and paged, with their titles, tags, lengths,
   * last activity and whether some client writes them: what an app's sidebar shows. By default
   * the root sessions (roots and forks, not subagents), the most recently active first, 50 at a
   * time (`more()` for the next 50). It follows every change of the store (this tab's, other
   * tabs' and processes', replications') within about 100 ms, and costs the page, not the
   * store: the engine keeps a store-wide index. A bad query is `INVALID_ARGUMENT`, thrown here.
   *
   * @example
   * const list = store.sessions({ tag: 'work', search: 'invoice' })
   * list.subscribe((items) => render(items.map((s) => s.title ?? s.id)))
   */
  sessions(query?: SessionQuery): SessionList {
    if (this.#calls.closed) throw new SessionfoldError('CLOSED', 'the store is closed')
    const page = (q: ResolvedSessionQuery, count: number) => this.#calls.checked('session list', (api) => api.sessionsPage(q, count), sessionsPageProblem)
    return new SessionList({ page, watch: (changed) => this.#watchSessions(changed) }, resolveSessionQuery(query))
  }

  /** Tells `changed` of each change of the session index (and of the store's close), the host told while anyone listens. */
  #watchSessions(changed: (ended?: SessionfoldError) => void): () => void {
    const watchers = this.#sessionWatchers
    watchers.add(changed)
    if (watchers.size === 1) void this.#calls.call((api) => api.watchSessions(true)).catch(() => {})
    return () => {
      if (!watchers.delete(changed) || watchers.size > 0 || this.#calls.closed) return
      void this.#calls.call((api) => api.watchSessions(false)).catch(() => {})
    }
  }

  /**
   * Reads every log and checkpoint of the store and reports each damaged session; changes
   * nothing (no repair, no checkpoint rewrite, no lock taken), so it is safe while an app
   * writes. Progress is in events: `total` is what was stored when verify began.
   */
  async verify(options: VerifyOptions = {}): Promise<VerifyReport> {
    checkProgressOptions(options, 'verify', ['signal', 'onProgress'])
    const { signal, onProgress } = options
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad('verify signal must be an AbortSignal')
    const cancelled = () => new SessionfoldError('CANCELLED', 'verify was cancelled')
    if (signal?.aborted) throw cancelled()
    return this.#calls.cancellable(signal, async (token) => {
      const plan = await this.#calls.checked('verify plan', (api) => api.verifyPlan(), verifyPlanProblem)
      const report: VerifyReport = { sessions: 0, events: 0, damaged: [] }
      onProgress?.({ done: 0, total: plan.events })
      for (let after: string | null = null; ; ) {
        if (signal?.aborted) throw cancelled()
        const step = await this.#calls.checked('verify step', (api) => api.verifyStep(after, VERIFY_BUDGET, token), verifyStepProblem)
        report.sessions += step.sessions
        report.events += step.events
        report.damaged.push(...step.damaged)
        onProgress?.({ done: report.events, total: Math.max(plan.events, report.events) })
        if (step.next === null) return report
        after = step.next
      }
    })
  }

  /**
   * Deletes a session: its header, events and checkpoint. `SESSION_LOCKED` while any client
   * (this store's own handles included) has it open for writing: close the writer first. An id
   * that names no session resolves quietly.
   *
   * Alone (the default), only that session goes: its children stay in the store, and its
   * parent's catalog still names it, which `listChildren` then lists as a `diagnostic` row with
   * `reason: 'unavailable'`. With `{ tree: true }` every descendant in its catalogs goes too,
   * all or nothing: each is locked for writing before the first is deleted (`SESSION_LOCKED`
   * names one open for writing anywhere, and nothing is deleted), then children go before their
   * parents, so a delete cut short (a crash) leaves a tree the same call finishes.
   */
  async deleteSession(id: SessionId, options?: DeleteSessionOptions): Promise<void> {
    assertSessionId(id)
    assertOptions(options, 'deleteSession', ['tree'], id)
    await this.#calls.call((api) => api.deleteSession(id, options), id)
  }

  /**
   * A bounded batch of this store's headers and events after `cursor` (null: from the start),
   * for another store's `applyChanges`. Plain JSON: send it over any channel (an Electron IPC,
   * a socket). Keep the returned cursor with the receiver and pass it to the next call.
   *
   * @example
   * let cursor = null
   * for (;;) {
   *   const changes = await main.changesSince(cursor)
   *   await ipc.invoke('apply', changes.batch)   // the other side: other.applyChanges(batch)
   *   cursor = changes.cursor
   *   if (changes.done) break
   * }
   */
  async changesSince(cursor?: ChangeCursor | null, options?: ChangesOptions): Promise<Changes> {
    if (cursor !== undefined && cursor !== null) assertPlainJson(cursor, 'changesSince cursor')
    if (options !== undefined) assertPlainJson(options, 'changesSince options')
    return this.#calls.checked('batch of changes', (api) => api.changesSince(cursor ?? null, options ?? {}), changesProblem)
  }

  /**
   * Imports a batch of another store's `changesSince`: missing sessions and events added as they were; a difference is a
   * conflict, with neither side changed. Idempotent. A malformed batch is INVALID_ARGUMENT and nothing is written.
   */
  async applyChanges(batch: ChangeBatch): Promise<ApplyResult> {
    assertPlainJson(batch, 'the change batch')
    return this.#calls.checked('apply result', (api) => api.applyChanges(batch), applyResultProblem)
  }

  /**
   * Copies the Durable Stream at `url` (a server speaking the protocol) into a session of this store, folded like any
   * session, live, resuming from the offset it reached after a restart; offline and back as `connect` is. Node's stores.
   */
  follow(url: string, options?: FollowOptions): Follow {
    return new Follow(this.streamRequest, url, options)
  }

  /** @internal A Durable Streams request of the protocol's handler (`createStreamsHandler`, sessionfold/server) or of `follow`. */
  readonly streamRequest = (request: StreamRequest): Promise<StreamAnswer> => this.#streams.submit(request)

  /**
   * Replaces the key of an encrypted store (opened with `encryption: { key }`) and re-encrypts
   * everything stored under it. First the store's data keys are wrapped under `newKey` and a
   * fresh data key is made for everything written from then on, in one atomic write of the
   * store's key record: from there the store opens with `newKey` only. Then every session (its
   * events, header, checkpoint and history rows) is re-encrypted under the new data key, one
   * session at a time while holding its writer lock, each unit replaced in place at its exact
   * length; then the old data keys are dropped from the record in one more atomic write. A
   * crash at any point leaves a store that opens, whole, with the old key (before the first
   * write) or the new one (after it): the old data keys stay listed until every unit is off
   * them. A rotation that stopped midway is completed by calling `rotateKey` again with the
   * new key (the key the store already has: no new data key is made, sessions done already are
   * only read). `onProgress` is called at the start and after each session with the sessions
   * to walk (`sessions`), those done, and their events; a throw from it stops the rotation
   * there (run it again to complete it).
   *
   * A session open for writing (in this store, another tab, thread or process) is waited for
   * about 2 seconds; if it stays open, the others are re-encrypted, and the call rejects with
   * `SESSION_LOCKED` naming it: the store opens with the new key, the old data keys still
   * listed; close that writer and call `rotateKey(newKey)` again. `newKey`: 32 bytes or an
   * AES-GCM CryptoKey; INVALID_ARGUMENT for anything else, for unknown options or an
   * `onProgress` that is not a function (nothing written), and when the store is not encrypted.
   *
   * @example
   * await store.rotateKey(newKey, { onProgress: ({ done, sessions }) => console.log(`${done}/${sessions}`) })
   */
  async rotateKey(newKey: Uint8Array | CryptoKey, options: RotateKeyOptions = {}): Promise<void> {
    checkProgressOptions(options, 'rotateKey', ['onProgress'])
    const key = checkKey(newKey, 'rotateKey: the new key')
    const { onProgress } = options
    const started = (a: { sessions?: unknown }) => (isCount(a?.sessions) ? undefined : 'no count of sessions')
    // A step that is not one (no done flag, no count) would otherwise loop or count garbage.
    const stepped = (a: { done?: unknown; events?: unknown }) => (typeof a?.done === 'boolean' && isCount(a?.events) ? undefined : 'not a step (done, events)')
    // One rotation of this store at a time: the engine keeps one per client.
    const run = this.#rotating.then(async () => {
      const progress = { sessions: (await this.#calls.checked('rotation', (api) => api.rotateKeyStart(key), started)).sessions, done: 0, events: 0 }
      for (;;) {
        onProgress?.({ ...progress })
        const step = await this.#calls.checked('rotation step', (api) => api.rotateKeyStep(), stepped)
        if (step.done) break
        progress.done++
        progress.events += step.events
        progress.sessions = Math.max(progress.sessions, progress.done) // sessions made meanwhile
      }
      await this.#calls.call((api) => api.rotateKeyFinish())
    })
    this.#rotating = run.catch(() => {})
    return run
  }

  /**
   * Syncs this store with a server made by `createSyncHandler` (`sessionfold/server`): pushes
   * local sessions and appends, pulls the server's (new sessions included), keeps its cursors
   * in this store so a restart resumes, retries with backoff while offline, and with
   * `live: true` receives the server's appends as they happen. See {@link Replication}.
   *
   * @example
   * const replication = store.connect('https://example.com/sync', { headers: async () => ({ authorization: `Bearer ${await freshToken()}` }), live: true })
   * replication.subscribe(({ status, pending }) => render(status, pending))
   */
  connect(url: string | URL, options: ConnectOptions = {}): Replication {
    if (this.#calls.closed) throw new SessionfoldError('CLOSED', 'the store is closed')
    const replication = new Replication(this.#calls, this.#routes, url, options, this.#connection.inThread === true)
    this.#replications.add(replication)
    replication.onClose(() => this.#replications.delete(replication))
    return replication
  }

  /**
   * Closes the store and every handle it opened: waits for every pending append (an append
   * that was called before `close()` still resolves, durable), writes the checkpoints of the
   * sessions open here, releases every writer lock and ends the worker. Every subscriber (per
   * key and whole snapshot) hears once more, with `meta.error` (code `CLOSED`), and values stop
   * there. Every later call on the store or its handles, one made from that last notification
   * included, rejects with `CLOSED` at that call. Calling it again resolves at once.
   * A process that ends without it loses no acknowledged append (its locks are taken over
   * as a dead owner's), but pending appends and the latest checkpoints may not land.
   */
  async close(): Promise<void> {
    if (this.#calls.closed) return
    await Promise.allSettled([...this.#replications].map((r) => r.close()))
    const closedError = new SessionfoldError('CLOSED', 'the store is closed')
    this.#connection.closing?.()
    try {
      if (!this.#calls.dead) await this.#calls.call((api) => api.close())
    } finally {
      this.#calls.close(closedError)
      await this.#connection.end()
      this.#calls.abandon(closedError)
      this.#views.failAll(closedError)
      this.#views.clear()
      for (const changed of [...this.#sessionWatchers]) changed(closedError)
    }
  }
}
