// The handles on a session: SessionView follows it read-only, Session also writes. Both speak
// to the engine through their store's calls and hold a projection view fed by its frames.
import type { SubagentListEntry, ListChildrenOptions } from '../children'
import { SessionfoldError, isSessionfoldError, where } from '../errors'
import { appendResultProblem, childRowProblem, eventsPageProblem, handleProblem } from './answer-checks'
import type { SessionEvent, SessionHeader, SessionId } from '../model'
import type { AppendAnswer, AppendItem, AppendResult, Frame, HandleInfo } from '../protocol'
import type { AppendQueue } from './append-queue'
import { assertOptions, describe, encodeEventBody, isPlainObject, type EventInput } from '../validate'
import { badAnswer, type EngineCalls } from './engine-calls'
import type { LiveViews } from './live-views'
import type { ProjectionMapView } from './projection-view'

export interface SpawnOptions {
  mode: 'one-shot' | 'continuable'
  /** Required for continuable children. */
  label?: string
  /** Events appended to the child after its descriptor, before the parent learns of it. */
  events?: EventInput[]
  id?: SessionId
}

/** What a handle needs of its store: its calls to the engine, its views, the event size bound. */
export interface HandleScope {
  readonly calls: EngineCalls
  /** Appends made in one turn go to the engine in one call. */
  readonly appends: AppendQueue
  readonly views: LiveViews
  readonly maxEventBytes: number
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/** A read-only handle on a session: its header, live projections, events and children. */
export class SessionView {
  readonly id: SessionId
  readonly header: SessionHeader
  readonly projections: ProjectionMapView
  /** @internal */ protected readonly _scope: HandleScope
  /** @internal */ protected readonly _handle: number
  #closed = false

  /** @internal */
  constructor(scope: HandleScope, info: HandleInfo) {
    this._scope = scope
    this._handle = info.handle
    this.id = info.header.id
    this.header = info.header
    this.projections = scope.views.open(info)
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
  }

  /** Events `[from, to)` (default: all, up to the log's end when called), page by page. */
  async *events(options: { from?: number; to?: number; signal?: AbortSignal } = {}): AsyncGenerator<SessionEvent> {
    assertOptions(options, 'events', ['from', 'to', 'signal'], this.id)
    const { from = 0, to, signal } = options
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad(`events signal for ${where(this.id)} must be an AbortSignal`)
    for (const [k, v] of [['from', from], ['to', to]] as const) {
      if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)) throw bad(`events of ${where(this.id)}: ${k} must be an integer >= 0, got ${describe(v)}`)
    }
    let at = from
    let end = to
    for (;;) {
      if (signal?.aborted) throw new SessionfoldError('CANCELLED', `reading events of ${where(this.id)} was cancelled`, { sessionId: this.id })
      if (end !== undefined && at >= end) return
      const page = await this._scope.calls.checked('page of events', (api) => api.readEvents(this.id, at, end), (p) => eventsPageProblem(p, at), this.id)
      end = page.to
      if (page.events.length === 0) return
      for (const e of page.events) yield e
      at += page.events.length
    }
  }

  /** The children of this session (the whole tree with recursive), from parent-owned catalogs. */
  async listChildren(options: ListChildrenOptions = {}): Promise<SubagentListEntry[]> {
    assertOptions(options, 'listChildren', ['recursive', 'signal'], this.id)
    const { signal, ...rest } = options
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad(`listChildren of ${where(this.id)}: signal must be an AbortSignal`)
    const cancelled = () => new SessionfoldError('CANCELLED', `listChildren of ${where(this.id)} was cancelled`, { sessionId: this.id })
    if (signal?.aborted) throw cancelled()
    const { calls } = this._scope
    return calls.cancellable(signal, async (token) => {
      const rows = await calls.checked('list of children', (api) => api.listChildren(this.id, rest, token), (list) =>
        Array.isArray(list) ? list.map(childRowProblem).find((p) => p !== undefined) : 'not an array', this.id)
      if (signal?.aborted) throw cancelled()
      return rows
    })
  }

  /**
   * An append's call: the frames that came with its answer are applied (each checked; those
   * after them wait for them, even when the rest of the answer is bad), then it resolves once
   * this handle's values reflect it. An acknowledged append is durable: if the values stop
   * first (the store closed, the worker died), the append still succeeded.
   */
  /** @internal */
  protected async _appended(item: AppendItem): Promise<AppendResult> {
    const answer = await this._scope.appends.submit(item, this.id)
    if (isPlainObject(answer) && Array.isArray(answer.frames)) this._scope.views.push(answer.frames as Frame[])
    const problem = appendResultProblem(answer)
    if (problem !== undefined) throw badAnswer('append result', problem, this.id)
    const { firstSeq, lastSeq } = answer as AppendAnswer
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

  /** Stops following the session (a writer also releases its lock, after its appends). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.projections._onSubscribed?.(false)
    this.projections._onSubscribed = undefined
    this._scope.views.forget(this.id, this.projections)
    await this._scope.calls.call((api) => api.closeHandle(this._handle)).catch((err) => {
      if (!isSessionfoldError(err, 'CLOSED', 'WORKER_TERMINATED')) throw err
    })
  }
}

/** A session open for writing: one writer per session across tabs, threads and processes. */
export class Session extends SessionView {
  /**
   * Appends one event or a batch (all or nothing). Resolves once durable and once this
   * handle's projections reflect it. `expectedSeq`: the seq the first event must receive.
   */
  async append(input: EventInput | EventInput[], options?: { expectedSeq?: number }): Promise<AppendResult> {
    this._check()
    const inputs = Array.isArray(input) ? input : [input]
    if (inputs.length === 0) throw new SessionfoldError('INVALID_ARGUMENT', `append to ${where(this.id)} needs at least one event`, { sessionId: this.id })
    const now = Date.now()
    // Validated and encoded here: nothing that is not plain JSON ever reaches the worker.
    const bodies = inputs.map((e) => encodeEventBody(e, this.id, { maxBytes: this._scope.maxEventBytes, now }))
    assertOptions(options, 'append', ['expectedSeq'], this.id)
    return this._appended({ kind: 'append', handle: this._handle, bodies, options })
  }

  /** Creates a subagent (open for writing), then records it in this session's catalog. */
  async spawn(options: SpawnOptions): Promise<Session> {
    this._check()
    if (!isPlainObject(options as unknown)) throw bad(`spawn options for ${where(this.id)} must be an object, got ${describe(options)}`)
    const { events = [], ...rest } = options
    assertOptions(rest, 'spawn', ['mode', 'label', 'id'], this.id)
    if (!Array.isArray(events)) throw bad(`spawn events for ${where(this.id)} must be an array`)
    const bodies = events.map((e) => encodeEventBody(e, this.id, { maxBytes: this._scope.maxEventBytes }))
    const info = await this._scope.calls.checked('handle', (api) => api.spawn(this._handle, rest, bodies), handleProblem, this.id)
    if (info.parentSeq !== undefined) await this._waitFor(info.parentSeq)
    return new Session(this._scope, info)
  }

  /** Records an execution outside this store in the catalog (no local session). */
  async recordExternal(options: { childId: string; label?: string }): Promise<AppendResult> {
    this._check()
    if (options === undefined) throw bad(`recordExternal options for ${where(this.id)} must be an object, got undefined`)
    assertOptions(options, 'recordExternal', ['childId', 'label'], this.id)
    return this._appended({ kind: 'external', handle: this._handle, options })
  }

  /** A new session seeded with this one's events [0, at) (default: all); open for writing. */
  async fork(options: { at?: number; id?: SessionId } = {}): Promise<Session> {
    this._check()
    assertOptions(options, 'fork', ['at', 'id'], this.id)
    const info = await this._scope.calls.checked('handle', (api) => api.fork(this._handle, options), handleProblem, this.id)
    return new Session(this._scope, info)
  }
}
