// The handles on a session: SessionView follows it read-only, Session also writes. Both speak
// to the engine through their store's calls and hold a projection view fed by its frames.
import type { SubagentListEntry, ListChildrenOptions } from '../core/children'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import { META_EVENT } from '../core/limits'
import { eventsOptions } from './events-options'
import type { AppendInput, EventMap, EventsOf, SessionMetaData } from '../core/events'
import { appendResultProblem, childRowProblem, eventsPageProblem, handleProblem } from './answer-checks'
import type { SessionHeader, SessionId } from '../core/model'
import type { AppendItem, AppendResult, HandleInfo } from '../core/protocol'
import type { AppendQueue } from './append-queue'
import { assertOptions, describe, encodeEventBody, isPlainObject, metaOf, type EventInput } from '../core/validate'
import type { ChildrenListener } from './children-watch'
import { badAnswer, type EngineCalls } from './engine-calls'
import type { LiveViews } from './live-views'
import { ProjectionMapView } from './projection-view'

/**
 * Options of {@link Session.spawn}. A child's mode is `'one-shot'` or `'continuable'`; the
 * third mode a catalog entry or a `listChildren` row can have, `'external'`, is not spawned:
 * {@link Session.recordExternal} records it.
 */
export interface SpawnOptions {
  /**
   * `'one-shot'`: a subagent that runs one task. `'continuable'`: one the app may come back to
   * (reopen with `store.openSession(child.id)` and append more turns); it needs a `label`.
   * The mode is recorded in the child's descriptor and the parent's catalog; sessionfold
   * itself treats both alike.
   */
  mode: 'one-shot' | 'continuable'
  /** 1-256 characters naming the child in its parent's catalog. Required for continuable children. */
  label?: string
  /** Events appended to the child after its descriptor, before the parent learns of it. */
  events?: EventInput[]
  /** The child's id (default: a new random id); a taken id is `SESSION_EXISTS`. */
  id?: SessionId
  /** The child's title (at most 200 characters), in its `sessionMeta` and the session list. */
  title?: string
  /** The child's tags (at most 20, of 1-64 characters each, none twice), in its `sessionMeta`. */
  tags?: string[]
}

/** What a handle needs of its store: its calls to the engine, its views, the event size bound. */
export interface HandleScope {
  readonly calls: EngineCalls
  /** Appends made in one task (synchronously, before an await) go to the engine in one call. */
  readonly appends: AppendQueue
  readonly views: LiveViews
  readonly maxEventBytes: number
  /** Told when a handle of this store opens or closes a session for writing (watchChildren's activity). */
  readonly activity: Set<() => void>
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/** A read-only handle on a session: its header, live projections, events and children. */
export class SessionView {
  /** The session's id. */
  readonly id: SessionId
  /** The session's header, as it was when the handle opened (headers never change). */
  readonly header: SessionHeader
  /**
   * The session's projection values, mirrored in this handle: `get` and `snapshot` are
   * synchronous and current, `subscribe` follows every change.
   */
  readonly projections: ProjectionMapView
  /**
   * For a view made by `store.observe(id, { at })`: the number of events it shows (it is frozen
   * after them); undefined for a view that follows the session.
   */
  readonly at: number | undefined
  /** @internal */ protected readonly _scope: HandleScope
  /** @internal */ protected readonly _handle: number
  #closed = false
  #closing: Promise<void> | undefined
  /** Tails and watches of this handle: ended when it closes. */
  readonly #enders = new Set<() => void>()

  /** @internal */
  constructor(scope: HandleScope, info: HandleInfo) {
    this._scope = scope
    this._handle = info.handle
    this.id = info.header.id
    this.header = info.header
    this.at = info.at
    // A view as of a point hears no frames: its values were folded once and never change.
    this.projections = info.at !== undefined ? new ProjectionMapView(info.snapshot) : scope.views.open(info)
    if (info.followed) {
      // Its values move with another process's appends, not with calls of ours: while someone
      // listens, a Node process stays up for them (as a watcher would); close() or the last
      // unsubscribe lets it exit.
      let held = false
      this.projections._onSubscribed = (subscribed) => {
        if (subscribed === held) return
        held = subscribed
        scope.calls.hold(subscribed)
      }
    }
  }

  /** @internal */
  protected _check(): void {
    if (this.#closed) throw new SessionfoldError('CLOSED', `this handle on ${where(this.id)} is closed`, { sessionId: this.id })
    this._checkGone()
  }

  /**
   * @internal The session was deleted (here or by another client of the store): every later
   * call says so where it is made, even once a new session has taken its id.
   */
  protected _checkGone(): void {
    if (this.projections.error?.code === 'SESSION_NOT_FOUND')
      throw new SessionfoldError('SESSION_NOT_FOUND', this.projections.error.message, { sessionId: this.id })
  }

  /**
   * The session's events with seqs in `[from, to)`: `from` defaults to 0, `to` (exclusive)
   * to the log's length when the first page is read, so appends made while iterating are
   * not included. Read page by page (512 events each), so memory stays flat on long logs.
   * Aborting `signal` rejects with `CANCELLED`. The command line's `events --from N --to M`
   * reads the same range.
   *
   * `types`: only events of these types, each narrowed by its `type` as {@link EventMap} says
   * (the others are skipped). An event of a type defined with versions (`defineEvent`) comes
   * at its latest version.
   *
   * With `follow: true` (a live tail, no `to`): the events from `from`, then each event as it is
   * appended, by any writer (this handle, another tab, thread or process), until `signal`
   * aborts or this handle or the store closes: then the iteration ends, without an error. A
   * deleted session ends it with `SESSION_NOT_FOUND`. The command line's `events --follow`.
   *
   * @example
   * for await (const e of session.events({ from: 10, to: 20 })) console.log(e.seq, e.type, e.data)
   *
   * // Streaming a transcript as it is written:
   * const stop = new AbortController()
   * for await (const e of session.events({ follow: true, signal: stop.signal })) render(e)
   *
   * // Only chat messages (their data typed as EventMap says):
   * for await (const e of session.events({ types: ['chat/message'] })) console.log(e.seq, e.data)
   */
  async *events<const T extends string = never>(
    options: { from?: number; to?: number; follow?: boolean; signal?: AbortSignal; types?: readonly T[] } = {},
  ): AsyncGenerator<EventsOf<T>> {
    this._checkGone()
    const { from, to, signal, follow, types } = eventsOptions(options, this.id, this.at)
    let at = from
    // A view as of a point shows only the events before it.
    let end = this.at === undefined ? to : Math.min(to ?? this.at, this.at)
    for (;;) {
      if (signal?.aborted) {
        if (follow) return
        throw new SessionfoldError('CANCELLED', `reading events of ${where(this.id)} was cancelled`, { sessionId: this.id })
      }
      if (end !== undefined && at >= end) {
        // A tail waits for the session to grow past `at`, then reads on to its new end.
        if (!follow || this.#closed) return
        const { grownPast } = await import('./tail')
        // Closed while the wait's code loaded: its enders were called before the wait could hear them.
        if (this.#closed) return
        if (!(await grownPast(this.projections, at, signal, this.#enders))) return
        end = undefined
        continue
      }
      const page = await this._scope.calls.checked(
        'page of events',
        (api) => api.readEvents(this.id, at, end),
        (p) => eventsPageProblem(p, at),
        this.id,
      )
      end = page.to
      if (page.events.length === 0 && !follow) return
      for (const e of page.events) {
        // An abort (a tail's end, a cancel) takes effect between events, not after the page.
        if (signal?.aborted) break
        if (!types || types.has(e.type)) yield e as EventsOf<T>
        at++
      }
    }
  }

  /**
   * The children of this session (the whole tree, pre-order, with `recursive: true`), read
   * from the catalogs their parents own (never by scanning the store): live when the parent
   * is open in this store, else from its checkpoint and the events after it. Each row is a
   * `child` (with its `mode`, `label`, `activity` and `hasChildren`) or a `diagnostic` saying
   * why a catalog entry cannot be shown as one; see {@link SubagentListEntry}.
   * `SESSION_NOT_FOUND` when this session was deleted; aborting `signal` rejects with `CANCELLED`.
   */
  async listChildren(options: ListChildrenOptions = {}): Promise<SubagentListEntry[]> {
    assertOptions(options, 'listChildren', ['recursive', 'signal'], this.id)
    this._checkGone()
    const { signal, ...rest } = options
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad(`listChildren of ${where(this.id)}: signal must be an AbortSignal`)
    const cancelled = () => new SessionfoldError('CANCELLED', `listChildren of ${where(this.id)} was cancelled`, { sessionId: this.id })
    if (signal?.aborted) throw cancelled()
    const { calls } = this._scope
    return calls.cancellable(signal, async (token) => {
      const asked = this.at === undefined ? rest : { ...rest, at: this.at }
      const rows = await calls.checked(
        'list of children',
        (api) => api.listChildren(this.id, asked, token),
        (list) => (Array.isArray(list) ? list.map(childRowProblem).find((p) => p !== undefined) : 'not an array'),
        this.id,
      )
      if (signal?.aborted) throw cancelled()
      return rows
    })
  }

  /**
   * The rows of `listChildren(options)` now, then again each time they change: a catalog
   * anywhere in the listed tree grows (a child, or with `recursive` a grandchild, spawned here,
   * in another tab or in another process), or a listed child's `activity` changes (opened or
   * closed for writing: at once in this store, within about a second elsewhere). Changes in
   * one burst are listed once; `listener` is called only when the rows differ. A failed listing
   * (this session deleted: `SESSION_NOT_FOUND`) ends the watch with one more call, with the last
   * rows and `meta.error`; closing this handle or the store ends it quietly. Returns the stop.
   *
   * @example
   * const stop = session.watchChildren({ recursive: true }, (rows) => render(rows))
   */
  watchChildren(options: Omit<ListChildrenOptions, 'signal'>, listener: ChildrenListener): () => void {
    assertOptions(options, 'watchChildren', ['recursive'], this.id)
    if (typeof listener !== 'function') throw bad(`watchChildren of ${where(this.id)} needs a listener function`)
    this._check()
    const recursive = options.recursive ?? false
    if (typeof recursive !== 'boolean') throw bad(`watchChildren of ${where(this.id)}: recursive must be true or false, got ${describe(recursive)}`)
    const scope = this._scope
    let stopped = false
    const observe = async (id: SessionId) => new SessionView(scope, await scope.calls.checked('handle', (api) => api.observe(id), handleProblem, id))
    // Loaded on first use (a tree UI's): the client entry stays small for every other app.
    const watch = import('./children-watch').then((m) => (stopped ? undefined : m.watchTree(this, observe, scope.activity, recursive, listener)))
    const stop = () => {
      stopped = true
      this.#enders.delete(stop)
      void watch.then((w) => w?.stop())
    }
    this.#enders.add(stop)
    return stop
  }

  /**
   * An append's call: it resolves once this handle's values reflect it (the host pushed the
   * frames due before it answered, on the same channel, so they are usually here already). An acknowledged append is durable: if the values stop
   * first (the store closed, the worker died), the append still succeeded.
   */
  /** @internal */
  protected async _appended(item: AppendItem): Promise<AppendResult> {
    const answer = await this._scope.appends.submit(item, this.id)
    const problem = appendResultProblem(answer)
    if (problem !== undefined) throw badAnswer('append result', problem, this.id)
    const { firstSeq, lastSeq } = answer as AppendResult
    await this._waitFor(lastSeq)
    return { firstSeq, lastSeq }
  }

  /** @internal */
  protected async _waitFor(seq: number): Promise<void> {
    if (seq <= this.projections.asOfSeq && !this.projections.error) return
    await this._scope.calls.awaitPush(this.projections._waitFor(seq)).catch((err: unknown) => {
      if (!isSessionfoldError(err, 'CLOSED', 'WORKER_TERMINATED')) throw err
    })
  }

  /**
   * Closes this handle: its values stop following the session and its subscriptions end.
   * A writer's appends made before it still land, then its writer lock is released, so
   * another client may `openSession` it (and its `listChildren` row turns `inactive`).
   * Later appends through this handle reject with `CLOSED`. Other handles, and the store,
   * stay open. Calling it again returns the first call's promise (it resolves once the lock is released).
   */
  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    this.#closed = true
    for (const end of [...this.#enders]) end()
    if (this.at !== undefined) return // nothing held in the engine
    this.projections._onSubscribed?.(false)
    this.projections._onSubscribed = undefined
    this._scope.views.forget(this.id, this.projections)
    await this._scope.calls
      .call((api) => api.closeHandle(this._handle))
      .catch((err) => {
        if (!isSessionfoldError(err, 'CLOSED', 'WORKER_TERMINATED')) throw err
      })
    if (this instanceof Session) for (const told of [...this._scope.activity]) told()
  }
}

/**
 * A session open for writing: returned by `createSession`, `openSession`, `spawn` and `fork`.
 * It holds the session's writer lock until {@link SessionView.close} or the store's close:
 * one writer per session across tabs, threads and processes. While it is open the session
 * counts as `activity: 'running'` in its parent's `listChildren`.
 */
export class Session extends SessionView {
  /** @internal A writer opened here: watches of this store list its activity at once. */
  constructor(scope: HandleScope, info: HandleInfo) {
    super(scope, info)
    for (const told of [...scope.activity]) told()
  }

  /**
   * Appends one event or a batch (all or nothing). Resolves once durable (under the default
   * `durability: 'strict'`) and once this handle's projections reflect it, with the seqs the
   * events received. `expectedSeq`: the seq the first event must receive (the log's length),
   * else `SEQ_CONFLICT` and nothing is written. Data that is not plain JSON is
   * `INVALID_ARGUMENT`, an event over `maxEventBytes` `EVENT_TOO_LARGE`; nothing is written.
   */
  async append<const T extends string>(input: AppendInput<T> | readonly AppendInput<T>[], options?: { expectedSeq?: number }): Promise<AppendResult> {
    this._check()
    const inputs: readonly unknown[] = Array.isArray(input) ? input : [input]
    if (inputs.length === 0) throw new SessionfoldError('INVALID_ARGUMENT', `append to ${where(this.id)} needs at least one event`, { sessionId: this.id })
    const now = Date.now()
    // Validated and encoded here: nothing that is not plain JSON ever reaches the worker.
    const bodies = inputs.map((e) => encodeEventBody(e, this.id, { maxBytes: this._scope.maxEventBytes, now }))
    assertOptions(options, 'append', ['expectedSeq'], this.id)
    return this._appended({ kind: 'append', handle: this._handle, bodies, options })
  }

  /**
   * Creates a subagent: a child session (`origin: 'subagent'`, `parentSession` this one,
   * `delegationDepth` one more) holding a `subagent/descriptor` event and then `events`, and
   * only then records it in this session's `subagentCatalog` (a catalog never names a child
   * that is not there: if a step fails, the child is deleted). Resolves with the child open
   * for writing, once this handle's catalog shows it.
   *
   * @example
   * const child = await session.spawn({ mode: 'continuable', label: 'researcher', events: [{ type: 'turn/start' }] })
   */
  async spawn(options: SpawnOptions): Promise<Session> {
    this._check()
    if (!isPlainObject(options as unknown)) throw bad(`spawn options for ${where(this.id)} must be an object, got ${describe(options)}`)
    const { events = [], ...rest } = options
    assertOptions(rest, 'spawn', ['mode', 'label', 'id', 'title', 'tags'], this.id)
    metaOf(rest, 'spawn options', this.id)
    if (!Array.isArray(events)) throw bad(`spawn events for ${where(this.id)} must be an array`)
    const bodies = events.map((e) => encodeEventBody(e, this.id, { maxBytes: this._scope.maxEventBytes }))
    const info = await this._scope.calls.checked('handle', (api) => api.spawn(this._handle, rest, bodies), handleProblem, this.id)
    if (info.parentSeq !== undefined) await this._waitFor(info.parentSeq)
    return new Session(this._scope, info)
  }

  /**
   * Records in this session's catalog a child that ran outside this store (a remote agent, a
   * job of another system): a `subagent/catalog` fact with `mode: 'external'`, and no session
   * is created. `childId` must be a valid session id (it need not exist here); `label` is
   * optional. `listChildren` lists it as a `child` row with `mode: 'external'`,
   * `activity: 'inactive'` and `hasChildren: false`, and never reads it.
   */
  async recordExternal(options: { childId: string; label?: string }): Promise<AppendResult> {
    this._check()
    if (options === undefined) throw bad(`recordExternal options for ${where(this.id)} must be an object, got undefined`)
    assertOptions(options, 'recordExternal', ['childId', 'label'], this.id)
    return this._appended({ kind: 'external', handle: this._handle, options })
  }

  /**
   * Sets the session's title and/or tags: a `session/meta` event in its log, so metadata syncs,
   * is encrypted and can be read as of any point like every event. A field given replaces the
   * last one (`title: null` clears it; `tags` replaces the whole list); one left out stays. The
   * `sessionMeta` projection shows the result. `title`: at most 200 characters; `tags`: at most
   * 20, of 1-64 characters each, none twice; anything else is `INVALID_ARGUMENT`, and nothing
   * is written.
   *
   * @example
   * await session.setMeta({ title: 'Fix the flaky test', tags: ['ci'] })
   * session.projections.get('sessionMeta') // { title: 'Fix the flaky test', tags: ['ci'] }
   */
  async setMeta(meta: { title?: string | null; tags?: string[] }): Promise<AppendResult> {
    this._check()
    if (meta === undefined) throw bad(`setMeta options for ${where(this.id)} must be an object, got undefined`)
    assertOptions(meta, 'setMeta', ['title', 'tags'], this.id)
    const data = metaOf(meta, 'setMeta', this.id, true)
    if (data === undefined) throw bad(`setMeta for ${where(this.id)} needs title or tags`)
    return this.append({ type: META_EVENT, data: data as SessionMetaData })
  }

  /**
   * A new session (`origin: 'fork'`, `forkedFrom` this one) whose log starts with copies of
   * this one's events `[0, at)` (default: all durable events), `seedLength = at`; open for
   * writing. Its projections fold the copies with `inheritedEventCount = at`, so it inherits
   * no children and no identity (`subagentCatalog` empty, `subagent` null); the copied turns still count in `subagentTiming`.
   */
  async fork(options: { at?: number; id?: SessionId } = {}): Promise<Session> {
    this._check()
    assertOptions(options, 'fork', ['at', 'id'], this.id)
    const info = await this._scope.calls.checked('handle', (api) => api.fork(this._handle, options), handleProblem, this.id)
    return new Session(this._scope, info)
  }
}
