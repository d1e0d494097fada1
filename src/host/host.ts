// The engine host: what clients call (EngineApi), in a worker over comlink or in the caller's
// thread. It maps client handles onto the engine's live sessions and pushes each session's
// changes, batched per task of the event loop (and before the answer of the append that made
// them), while some handle has it open; and the states of its replications, on the same channel.
import { deleteSessionInputSchema, listSessionsInputSchema, parseInput } from '../core/inputs'
import type { StreamRequest } from '../core/streams'
import type { ChangeBatch, ChangeCursor, ChangesOptions } from '../core/changes'
import { framesOf, mergeChange, type PendingFrame } from './frames'
import { nextTask } from '../core/next-task'
import { StreamReplies } from './stream-replies'
import { closeWithTab, holdAliveLock } from './tab-locks'
import { MAX_SESSIONS_ROWS, type SessionsPage } from '../core/session-list'
import type { OpenedEngine } from './open-engine'
import { SessionfoldError, toWireError, where } from '../core/errors'
import type { SessionId } from '../core/model'
import type {
  AppendInput,
  AppendItem,
  CreateSessionInput,
  ForkInput,
  ListSessionsInput,
  RecordExternalInput,
  SpawnInput,
  AppendOutcome,
  AppendResult,
  EventsPage,
  Frame,
  HandleInfo,
  Push,
  ReplicationSpec,
  RotationStart,
  RotationStep,
} from '../core/protocol'
import type { HostOptions } from './options'
import { ReplicationHub } from '../sync/runs'
import { assertSessionId, describe, isPlainObject } from '../core/validate'
import type { Engine, ProjectionChange } from '../engine'
import type { EngineSource, ServeEngineOptions } from './engine-source'
import { finishRotation, rotationStep, startRotation, type KeyRotation } from './rotate-key'
/** The engine's pushes of one session to this host, and how many handles here take them. */
interface Watch {
  handles: number
  stop: () => void
}

interface Handle {
  sessionId: SessionId
  role: 'writer' | 'observer'
  watch: Watch
  /** The session went away under it (deleted): there is nothing of it to release in the engine. */
  gone?: boolean
}

export { appOf, ownEngine, sharedEngines, type EngineSource, type ServeEngineOptions } from './engine-source'

/**
 * What a client calls: the host's public methods, the same in this thread and across a worker
 * (comlink's Remote of it has these very methods, each already async).
 */
export type EngineApi = { [K in keyof EngineHost]: EngineHost[K] }

export class EngineHost {
  private opened?: OpenedEngine
  /** This client's replications (closed with it). */
  private readonly replications = new Set<number>()
  private readonly handles = new Map<number, Handle>()
  private readonly watching = new Map<SessionId, Watch>()
  /** Per session, what changed since its last frame: each key's latest value, and where a list that only grew started. */
  private readonly pending = new Map<SessionId, PendingFrame>()
  private flushing = false
  private readonly cancels = new Map<number, AbortController>()
  private nextHandle = 1
  private nextFrame = 1
  /** This client's key rotation under way. */
  private rotation?: KeyRotation
  /** Ends this client's watch of the session index. */
  private sessionsWatch?: () => void
  /** Lets go of the alive lock (a SharedWorker outlives the connections it serves). */
  private releaseAlive?: () => void
  private streamReplies?: StreamReplies

  /** `post`: how pushes leave (a worker: a PushMessage on its port; this thread: the store's callback). */
  constructor(
    private readonly app: ServeEngineOptions,
    private readonly source: EngineSource,
    private readonly post: (push: Push) => void,
  ) {}

  async init(options: HostOptions): Promise<void> {
    if (this.opened) throw new SessionfoldError('INVALID_ARGUMENT', 'this engine host is already initialised')
    if (options.aliveLock) this.releaseAlive = await holdAliveLock(options.aliveLock)
    this.opened = await this.source.open(options, this.app)
    // A SharedWorker outlives the tabs it serves: when this one's tab dies, close its handles,
    // so its writer locks go with it, as they would with a dedicated worker.
    if (options.tabLock) closeWithTab(options.tabLock, () => this.close())
  }

  /** The engine this host serves, once `init` opened it. */
  private get openedEngine(): OpenedEngine {
    if (!this.opened) throw new SessionfoldError('CLOSED', 'the engine host is not initialised')
    return this.opened
  }

  private get engine(): Engine {
    return this.openedEngine.engine
  }

  private handle(handle: number, role?: 'writer'): Handle {
    const h = this.handles.get(handle)
    if (!h) throw new SessionfoldError('CLOSED', 'this session handle is closed')
    if (role === 'writer' && h.role !== 'writer') {
      throw new SessionfoldError('CLOSED', `${where(h.sessionId)} is observed here, not open for writing`, { sessionId: h.sessionId })
    }
    return h
  }

  private attach(sessionId: SessionId, role: Handle['role']): HandleInfo {
    const handle = this.nextHandle++
    let watch = this.watching.get(sessionId)
    if (watch) watch.handles++
    else this.watching.set(sessionId, (watch = { handles: 1, stop: this.engine.watch(sessionId, (c) => this.queue(sessionId, c)) }))
    this.handles.set(handle, { sessionId, role, watch })
    return { handle, header: this.engine.liveHeader(sessionId), snapshot: this.engine.snapshot(sessionId) }
  }

  private queue(sessionId: SessionId, change: ProjectionChange): void {
    if (change.gone) {
      // The last of it: its handles here end with the error, and a new handle of the id (a new
      // session of it, later) watches the new one.
      for (const h of this.handles.values()) if (h.sessionId === sessionId) h.gone = true
      this.watching.delete(sessionId)
    }
    mergeChange(this.pending, sessionId, change)
    if (!this.flushing) {
      this.flushing = true
      nextTask(() => this.flush())
    }
  }

  private flush(): void {
    this.flushing = false
    const frames = this.takeFrames()
    if (frames.length > 0) this.post({ kind: 'frames', frames })
  }

  /** The frames of every change not yet sent, numbered in order (see Frame.n); none are pending after. */
  protected takeFrames(): Frame[] {
    const frames = framesOf(this.pending, this.nextFrame)
    this.nextFrame += frames.length
    this.pending.clear()
    return frames
  }

  async createSession(options: CreateSessionInput): Promise<HandleInfo> {
    const header = await this.engine.createSession((options ?? {}) as never)
    return this.attach(header.id, 'writer')
  }

  async openSession(id: string): Promise<HandleInfo> {
    assertSessionId(id)
    await this.engine.openSession(id)
    return this.attach(id, 'writer')
  }

  async observe(id: string, options?: { at: number }): Promise<HandleInfo> {
    assertSessionId(id)
    // As of a point in the log: values folded once, no handle, nothing followed (closing it is a no-op).
    if (options !== undefined) return { handle: 0, ...(await this.engine.observeAt(id, options)) }
    await this.engine.observe(id)
    const info = this.attach(id, 'observer')
    return this.engine.isFollowed(id) ? { ...info, followed: true } : info
  }

  async spawn(handle: number, options: SpawnInput, bodies: string[]): Promise<HandleInfo> {
    const parent = this.handle(handle, 'writer')
    const header = await this.engine.spawn(parent.sessionId, options, bodies)
    return { ...this.attach(header.id, 'writer'), parentSeq: this.engine.liveSeq(parent.sessionId) }
  }

  async fork(handle: number, options: ForkInput): Promise<HandleInfo> {
    const source = this.handle(handle)
    const header = await this.engine.fork(source.sessionId, options)
    return this.attach(header.id, 'writer')
  }

  async append(handle: number, bodies: string[], options?: AppendInput): Promise<AppendResult> {
    return this.answer(await this.engine.appendBodies(this.handle(handle, 'writer').sessionId, bodies, options))
  }

  async recordExternal(handle: number, options: RecordExternalInput): Promise<AppendResult> {
    return this.answer(await this.engine.recordExternal(this.handle(handle, 'writer').sessionId, options))
  }

  async appendMany(items: AppendItem[]): Promise<AppendOutcome[]> {
    if (!Array.isArray(items)) throw new SessionfoldError('INVALID_ARGUMENT', 'appendMany takes a list of appends')
    // Each started now, in order, as separate calls would be: they queue behind one another in
    // their session's pipeline and share its group commit.
    const settled = await Promise.allSettled(
      items.map((item: unknown) => {
        if (!isPlainObject(item)) return Promise.reject(new SessionfoldError('INVALID_ARGUMENT', `an append must be an object, got ${describe(item)}`))
        const { kind, handle, bodies, options } = item as Partial<Record<'kind' | 'handle' | 'bodies' | 'options', unknown>>
        if (typeof handle !== 'number') return Promise.reject(new SessionfoldError('CLOSED', 'this session handle is closed'))
        if (kind === 'external') return this.recordExternal(handle, options as RecordExternalInput)
        if (kind === 'append') return this.append(handle, bodies as string[], options as AppendInput | undefined)
        return Promise.reject(new SessionfoldError('INVALID_ARGUMENT', `unknown kind of append ${describe(kind)}`))
      }),
    )
    return settled.map((s) => (s.status === 'fulfilled' ? s.value : { error: toWireError(s.reason) }))
  }

  /**
   * An append's result, once the frames due now (its own values among them) were pushed: they
   * reach the client before this answer does, on the same channel, so the writer reads its
   * write when the append resolves, not a task later.
   */
  private answer(result: AppendResult): AppendResult {
    this.flush()
    return result
  }

  async closeHandle(handle: number): Promise<void> {
    const h = this.handles.get(handle)
    if (!h) return
    this.handles.delete(handle)
    // Release first: a writer's appends in flight fold, and their frames go out, before we stop.
    // (A handle whose session went away holds nothing in the engine: a record of the id now is another's.)
    if (!h.gone) await this.engine.release(h.sessionId, h.role)
    const w = h.watch
    if (--w.handles === 0) {
      w.stop() // nobody here listens: stop pushing (and computing views) for it
      if (this.watching.get(h.sessionId) === w) this.watching.delete(h.sessionId)
    }
  }

  // rotateKey in steps (src/host/rotate-key.ts): one rotation per client at a time.
  async rotateKeyStart(key: Uint8Array | CryptoKey): Promise<RotationStart> {
    this.rotation = undefined
    const { rotation, answer } = await startRotation(this.openedEngine, key)
    this.rotation = rotation
    return answer
  }

  rotateKeyStep(): Promise<RotationStep> {
    return rotationStep(this.openedEngine, this.rotation)
  }

  async rotateKeyFinish(): Promise<void> {
    const rotation = this.rotation
    this.rotation = undefined
    await finishRotation(this.openedEngine, rotation)
  }

  async listSessions(options?: ListSessionsInput) {
    return this.engine.reader.listSessions(options === undefined ? undefined : parseInput(listSessionsInputSchema, options, 'listSessions options'))
  }

  /** A page of the session list (`store.sessions()`): `count` rows of `query` (checked by the engine). */
  async sessionsPage(query: unknown, count: number): Promise<SessionsPage> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_SESSIONS_ROWS)
      throw new SessionfoldError('INVALID_ARGUMENT', `a sessions page holds 1..${MAX_SESSIONS_ROWS} rows, got ${describe(count)}`)
    return this.engine.sessionsPage(query, count)
  }

  /** While on, a `sessions` push follows each change of the store's session index (and the feed is followed). */
  async watchSessions(on: boolean): Promise<void> {
    this.sessionsWatch?.()
    this.sessionsWatch = on ? this.engine.index?.subscribe(() => this.post({ kind: 'sessions' })) : undefined
  }

  async deleteSession(id: string, options?: unknown): Promise<void> {
    assertSessionId(id)
    const { tree } = options === undefined ? {} : parseInput(deleteSessionInputSchema, options, 'deleteSession options', id)
    await this.engine.deleteSessions([id], { tree })
  }

  async readEvents(id: string, from: number, to: number | undefined): Promise<EventsPage> {
    assertSessionId(id)
    const page = await this.engine.reader.page(id, from, to)
    // Each event at its type's latest version (defineEvent): stored bytes stay as they are.
    const { events } = this.engine
    return events.versioned ? { ...page, events: page.events.map((e) => events.read(e)) } : page
  }

  async listChildren(id: string, options: { recursive?: boolean; at?: number }, cancelToken: number) {
    assertSessionId(id)
    const controller = new AbortController()
    this.cancels.set(cancelToken, controller)
    try {
      return await this.engine.listChildren(id, { ...(isPlainObject(options) ? options : {}), signal: controller.signal })
    } finally {
      this.cancels.delete(cancelToken)
    }
  }

  changesSince(cursor: ChangeCursor | null, options: ChangesOptions) {
    return this.engine.changesSince(cursor, options)
  }

  applyChanges(batch: ChangeBatch) {
    return this.engine.applyChanges(batch)
  }

  /** Durable Streams requests sent together, each answered by a push as it is ready (stream-replies.ts). */
  streamMany(requests: [n: number, request: StreamRequest][]) {
    this.streamReplies ??= new StreamReplies(this.post)
    return this.streamReplies.run(requests, (request) => this.engine.streams.run(request))
  }

  async verifyPlan() {
    return this.engine.verifyPlan()
  }

  async verifyStep(after: string | null, budget: number, cancelToken: number) {
    if (after !== null) assertSessionId(after)
    if (!Number.isSafeInteger(budget) || budget < 1)
      throw new SessionfoldError('INVALID_ARGUMENT', `verify budget must be a positive integer, got ${describe(budget)}`)
    const controller = new AbortController()
    this.cancels.set(cancelToken, controller)
    try {
      return await this.engine.verifyStep(after ?? undefined, budget, controller.signal)
    } finally {
      this.cancels.delete(cancelToken)
    }
  }

  async cancel(token: number): Promise<void> {
    this.cancels.get(token)?.abort()
  }

  /** The replications of this host's engine: hosts sharing an engine (a SharedWorker's tabs) share them. */
  private get hub(): ReplicationHub {
    const opened = this.openedEngine
    return (opened.replications ??= new ReplicationHub(opened.engine, opened.storeKey))
  }

  async replicate(spec: ReplicationSpec, fetchFn?: typeof fetch): Promise<number> {
    if (!isPlainObject(spec) || typeof spec.url !== 'string' || typeof spec.key !== 'string' || !isPlainObject(spec.options)) {
      throw new SessionfoldError('INVALID_ARGUMENT', `replicate needs a replication spec, got ${describe(spec)}`)
    }
    const hub = this.hub
    const id = hub.connect(spec, typeof fetchFn === 'function' ? fetchFn : undefined)
    this.replications.add(id)
    // It cannot fail (the hub's next() never rejects, a post throws nothing): nothing to tell.
    this.pushStates(hub, id).catch(() => {})
    return id
  }

  /** A replication's states (and its requests for headers) pushed as they change, until it closes; a task's changes as one push. */
  private async pushStates(hub: ReplicationHub, id: number): Promise<void> {
    for (let seen = 0; ; ) {
      const event = await hub.next(id, seen)
      this.post({ kind: 'replication', id, event })
      if (event.closed) return
      seen = event.version
      await new Promise<void>((resolve) => nextTask(resolve))
    }
  }

  // The replication's calls, passed to the hub (src/sync/runs.ts).
  async replicationHeaders(id: number, ticket: number, headers: Record<string, string> | { error: string }): Promise<void> {
    this.hub.headers(id, ticket, headers)
  }
  replicationSynced(id: number): Promise<void> {
    return this.hub.synced(id)
  }
  async replicationOnline(id: number): Promise<void> {
    this.hub.online(id)
  }

  async replicationClose(id: number): Promise<void> {
    this.replications.delete(id)
    await this.hub.close(id)
  }

  async close(): Promise<void> {
    const opened = this.opened
    if (!opened) return
    this.sessionsWatch?.()
    await opened.replications?.closeAll(this.replications)
    this.replications.clear()
    // Every handle of this client: appends settle, writers checkpoint and release their locks.
    // All at once: against a store that stopped answering, close waits one deadline, not one a handle.
    opened.engine.closeWatch.begin()
    const ended = await Promise.allSettled([...this.handles.keys()].map((handle) => this.closeHandle(handle)))
    await this.source.close(opened)
    this.flush()
    this.releaseAlive?.()
    const failed = ended.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
  }
}

export { postPushes } from './post-pushes'
