// The typed client: openStore, Store, Session and SessionView. It talks to an engine host,
// in a worker over comlink (the default) or in this thread (worker: false), through one
// EngineApi, so both modes share every line here.
import type { ApplyResult, ChangeBatch, ChangeCursor, Changes, ChangesOptions } from './changes'
import { applyResultProblem, changesProblem } from './changes-checks'
import type { SubagentListEntry, ListChildrenOptions } from './children'
import { SessionfoldError, isSessionfoldError, where } from './errors'
import { appendResultProblem, childRowProblem, eventsPageProblem, frameProblem, handleProblem, headerProblem, verifyPlanProblem, verifyStepProblem } from './frames'
import { ProjectionMapView } from './client/projection-view'
import { SESSION_ID_PATTERN, type Json, type SessionEvent, type SessionHeader, type SessionId } from './model'
import type { ProjectionDefinition } from './projection'
import type { Remote } from 'comlink'
import type { AppendResult, EngineApi, Frame, HandleInfo, HostOptions, StorageKind, VerifyReport } from './protocol'
import { assertOptions, assertPlainJson, assertSessionId, describe, encodeEventBody, isPlainObject, DEFAULT_MAX_EVENT_BYTES } from './validate'

export interface OpenStoreOptions {
  /** Default: indexeddb in browsers, fs in Node. */
  storage?: StorageKind
  /** IndexedDB database name (default 'sessionfold'). */
  name?: string
  /** fs root folder (default '.sessionfold'). */
  dir?: string
  /**
   * true (default): the engine runs in a worker (a module Web Worker in browsers,
   * worker_threads in Node); 'shared': a SharedWorker shared by the tabs of an origin (falls
   * back to a dedicated worker where SharedWorker is missing); false: in this thread. Where no
   * Worker exists (a service worker, an extension's background), true means this thread.
   */
  worker?: boolean | 'shared'
  /** Your own worker file that calls serveEngine({ projections }); default: the built-in one. */
  workerUrl?: string | URL
  /** Your projection units, with worker: false (in a worker, pass them to serveEngine). */
  projections?: readonly ProjectionDefinition[]
  /** strict (default): an append resolves once durable. */
  durability?: 'strict' | 'relaxed'
  checkpoint?: { everyEvents?: number; everyMs?: number }
  /** Largest encoded event, default 1 MiB. */
  maxEventBytes?: number
}

export interface EventInput {
  type: string
  data?: Json
  /** Epoch ms; defaults to now. */
  time?: number
}

export interface SpawnOptions {
  mode: 'one-shot' | 'continuable'
  /** Required for continuable children. */
  label?: string
  /** Events appended to the child after its descriptor, before the parent learns of it. */
  events?: EventInput[]
  id?: SessionId
}

interface Connection {
  api: EngineApi
  /** Browsers: the lock the host holds while it lives (see HostOptions.aliveLock). */
  aliveLock?: string
  /** Browsers, SharedWorker: the lock this tab holds while it lives (see HostOptions.tabLock). */
  tabLock?: string
  /** Starts watching for the host's death, once it holds its alive lock. */
  watch?(): void
  /** The host is about to end on purpose (close): its going is no death. */
  closing?(): void
  /** Resolves with WORKER_TERMINATED if the engine's worker dies unexpectedly. */
  died: Promise<SessionfoldError>
  end(): Promise<void>
  /** Keeps a Node process alive while calls are pending (and lets it exit when idle). */
  busy?(delta: 1 | -1): void
}

const KNOWN_OPTIONS = ['storage', 'name', 'dir', 'worker', 'workerUrl', 'projections', 'durability', 'checkpoint', 'maxEventBytes']
// Node (and Electron's main process, or a renderer with nodeIntegration): fs and worker_threads.
const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string'

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/**
 * Opens a store: IndexedDB in browsers, files in Node, or memory.
 *
 * @example
 * const store = await openStore()                    // .sessionfold/ in Node, IndexedDB in browsers
 * const session = await store.createSession({ cwd: process.cwd() })
 * await session.append({ type: 'turn/start' })
 * session.projections.subscribe('subagentTiming', (t) => console.log(t))
 * await store.close()
 */
export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  if (!isPlainObject(options as unknown)) throw bad(`openStore options must be an object, got ${describe(options)}`)
  for (const key of Object.keys(options)) if (!KNOWN_OPTIONS.includes(key)) throw bad(`openStore has no option ${describe(key)}`)
  const storage = options.storage ?? (isNode ? 'fs' : 'indexeddb')
  if (!['indexeddb', 'fs', 'memory'].includes(storage)) throw bad(`storage must be 'indexeddb', 'fs' or 'memory', got ${describe(storage)}`)
  if (storage === 'fs' && !isNode) throw bad("storage 'fs' needs Node")
  const durability = options.durability ?? 'strict'
  if (durability !== 'strict' && durability !== 'relaxed') throw bad(`durability must be 'strict' or 'relaxed', got ${describe(durability)}`)
  for (const [k, v] of [['name', options.name], ['dir', options.dir]] as const) {
    if (v !== undefined && (typeof v !== 'string' || v.length === 0 || v.includes('\0'))) throw bad(`${k} must be a non-empty string without NUL, got ${describe(v)}`)
  }
  // Checked here, as they cross to the worker: it reads what the caller passed, or nothing.
  assertOptions(options.checkpoint, 'checkpoint', ['everyEvents', 'everyMs'])
  for (const [k, v] of Object.entries(options.checkpoint ?? {})) {
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)) throw bad(`checkpoint.${k} must be a number > 0, got ${describe(v)}`)
  }
  if (options.maxEventBytes !== undefined && (typeof options.maxEventBytes !== 'number' || !Number.isFinite(options.maxEventBytes) || options.maxEventBytes <= 0)) {
    throw bad(`maxEventBytes must be a number > 0, got ${describe(options.maxEventBytes)}`)
  }
  if (options.workerUrl !== undefined && typeof options.workerUrl !== 'string' && !(options.workerUrl instanceof URL)) {
    throw bad(`workerUrl must be a string or a URL, got ${describe(options.workerUrl)}`)
  }
  const worker = options.worker ?? true
  if (worker !== true && worker !== false && worker !== 'shared') throw bad(`worker must be true, false or 'shared', got ${describe(worker)}`)
  if (options.projections !== undefined) {
    if (!Array.isArray(options.projections)) throw bad('projections must be an array of defineProjection() units')
    if (worker !== false) throw bad('projections run in the engine: pass them with worker: false, or to serveEngine() in your own worker file (workerUrl)')
  }
  const hostOptions: HostOptions = {
    storage, durability,
    name: options.name ?? 'sessionfold',
    dir: options.dir ?? '.sessionfold',
    checkpoint: options.checkpoint,
    maxEventBytes: options.maxEventBytes,
  }
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES
  const connection = worker === false || typeof Worker === 'undefined' && !isNode
    ? await inThread(options.projections ?? [])
    : isNode
      ? await nodeWorker(options.workerUrl, hostOptions)
      : await browserWorker(options.workerUrl, worker === 'shared')
  const store = new Store(connection, maxEventBytes)
  try {
    await store._call((api) => api.init({ ...hostOptions, aliveLock: connection.aliveLock, tabLock: connection.tabLock }, store._push))
    connection.watch?.()
  } catch (err) {
    await connection.end().catch(() => {})
    throw err
  }
  return store
}

async function inThread(projections: readonly ProjectionDefinition[]): Promise<Connection> {
  const [{ EngineHost, ownEngine }, platform] = await Promise.all([
    import('../worker/host'),
    isNode ? import('../worker/platform-node').then((m) => m.nodePlatform) : import('../worker/platform-browser').then((m) => m.browserPlatform),
  ])
  const host = new EngineHost(projections, ownEngine(platform))
  return { api: host, died: new Promise(() => {}), end: async () => {} }
}

async function nodeWorker(url: string | URL | undefined, options: HostOptions): Promise<Connection> {
  const [{ Worker }, { wrap, proxy, releaseProxy }, { default: nodeEndpoint }, { registerErrorTransfer }] = await Promise.all([
    import('node:worker_threads'), import('comlink'), import('comlink/dist/esm/node-adapter.mjs'), import('./transfer'),
  ])
  registerErrorTransfer()
  const entry = url === undefined ? new URL('../worker/node-entry.ts', import.meta.url) : new URL(String(url), `file://${process.cwd()}/`)
  // TypeScript entries (this source tree, tests) start through tsx; built ones directly.
  // Workers inherit the process's flags; --input-type (as in `node --input-type=module -e …`)
  // is refused in a worker, so it is dropped.
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'))
  const start = (argv: string[]) => (entry.pathname.endsWith('.ts')
    ? new Worker(new URL('../worker/node-boot.mjs', import.meta.url), { workerData: { entry: entry.href }, execArgv: argv })
    : new Worker(entry, { execArgv: argv }))
  let worker: InstanceType<typeof Worker>
  try {
    worker = start(execArgv)
  } catch (err) {
    if ((err as { code?: string } | null)?.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err
    // Process-wide flags (V8's --expose-gc, --max-old-space-size...) are refused in a worker,
    // which names them: the worker runs without those, with the rest (--import tsx...).
    const refused = new Set((err as Error).message.replace(/^[^:]*:\s*/, '').split(',').map((f) => f.trim()))
    worker = start(execArgv.filter((a) => !refused.has(a)))
  }
  const threadId = worker.threadId
  let ended = false
  const died = new Promise<SessionfoldError>((resolve) => {
    const dead = (why: string) => {
      if (ended) return
      resolve(new SessionfoldError('WORKER_TERMINATED', `the sessionfold worker ${why}`))
    }
    worker.once('error', (err) => dead(`failed: ${err.message}`))
    worker.once('exit', (code) => dead(`exited with code ${code}`))
  })
  // Locks of a worker that died cannot be released by it: its lock files name this thread.
  // end() (store.close) waits for their removal, so a store opened after close finds them free.
  let locksReleased: Promise<void> = Promise.resolve()
  if (options.storage === 'fs') {
    worker.once('exit', () => {
      locksReleased = import('../worker/locks-fs').then((m) => m.releaseThreadLocks(options.dir, threadId)).catch(() => {})
    })
  }
  const api = wrap<EngineApi>(nodeEndpoint(worker))
  let pending = 0
  worker.unref()
  return {
    api: proxiedPush(api, proxy),
    died,
    busy(delta) {
      pending += delta
      if (pending === 1 && delta === 1) worker.ref()
      if (pending === 0) worker.unref()
    },
    async end() {
      ended = true
      ;(api as unknown as Record<symbol, () => void>)[releaseProxy]!()
      await worker.terminate()
      await locksReleased
    },
  }
}

/** The remote API, with `init`'s push callback passed as a comlink proxy (called back by the worker). */
function proxiedPush(api: Remote<EngineApi>, proxy: <T extends object>(obj: T) => T): EngineApi {
  return new Proxy(api, {
    get: (target, prop) => (prop === 'init'
      ? (o: HostOptions, push: (f: Frame[]) => void) => target.init(o, proxy(push))
      : (target as unknown as Record<string | symbol, unknown>)[prop]),
  }) as unknown as EngineApi
}

async function browserWorker(url: string | URL | undefined, shared: boolean): Promise<Connection> {
  const [{ wrap, proxy, releaseProxy }, { registerErrorTransfer }] = await Promise.all([import('comlink'), import('./transfer')])
  registerErrorTransfer()
  const entry = url ?? new URL('../worker/browser-entry.ts', import.meta.url)
  let ended = false
  let endpoint: MessagePort | Worker
  let stop: () => void
  let markDead: (why: string) => void = () => {}
  const died = new Promise<SessionfoldError>((resolve) => {
    const dead = (why: string) => {
      if (!ended) resolve(new SessionfoldError('WORKER_TERMINATED', `the sessionfold worker ${why}`))
    }
    markDead = dead
    if (shared && typeof SharedWorker !== 'undefined') {
      const sw = new SharedWorker(entry, { type: 'module', name: 'sessionfold' })
      sw.onerror = () => dead('failed')
      endpoint = sw.port
      sw.port.start()
      stop = () => sw.port.close()
    } else {
      // No SharedWorker (Chrome on Android): a dedicated worker behaves the same for this tab.
      const w = new Worker(entry, { type: 'module', name: 'sessionfold' })
      w.onerror = (e) => dead(`failed: ${e.message}`)
      endpoint = w
      stop = () => w.terminate()
    }
  })
  const api = wrap<EngineApi>(endpoint!)
  const locks0 = (globalThis.navigator as { locks?: LockManager } | undefined)?.locks
  // Shared: this tab holds a lock for as long as it lives; the shared host learns of its end.
  const tabLock = shared && typeof SharedWorker !== 'undefined' && locks0 ? `sessionfold:tab:${globalThis.crypto.randomUUID()}` : undefined
  if (tabLock) await new Promise<void>((held) => void locks0!.request(tabLock, () => (held(), new Promise<never>(() => {}))))
  // A worker that dies (crashes, closes itself, is killed with its tab) sends no event: watch
  // the lock it holds while alive, granted to us only once it is gone.
  const aliveLock = `sessionfold:alive:${globalThis.crypto.randomUUID()}`
  const locks = (globalThis.navigator as { locks?: LockManager } | undefined)?.locks
  return {
    aliveLock: locks ? aliveLock : undefined,
    tabLock,
    watch() {
      void locks?.request(aliveLock, async () => markDead('stopped'))
    },
    closing() {
      ended = true
    },
    api: proxiedPush(api, proxy),
    died,
    async end() {
      ended = true
      ;(api as unknown as Record<symbol, () => void>)[releaseProxy]!()
      stop()
    },
  }
}

/** Events verified per round trip to the worker: progress and cancellation happen between them. */
const VERIFY_BUDGET = 50_000

export interface VerifyOptions {
  signal?: AbortSignal
  /** Called after each step with events read so far (`done`) and the events stored when verify began (`total`). */
  onProgress?: (progress: { done: number; total: number }) => void
}

/** A store: sessions, listing and deletion. Close it to flush and release everything. */
export class Store {
  readonly #connection: Connection
  readonly #mirrors = new Map<SessionId, Set<ProjectionMapView>>()
  /** Rejecters of the calls in flight: WORKER_TERMINATED reaches them if the worker dies. */
  readonly #calls = new Set<(err: unknown) => void>()
  #closed: SessionfoldError | undefined
  #dead: SessionfoldError | undefined
  #nextToken = 1
  /** @internal */
  readonly _maxEventBytes: number

  /** @internal */
  constructor(connection: Connection, maxEventBytes: number) {
    this.#connection = connection
    this._maxEventBytes = maxEventBytes
    void connection.died.then((err) => {
      this.#dead = err
      for (const reject of this.#calls) reject(err)
      for (const set of this.#mirrors.values()) for (const m of set) m._fail(err)
    })
  }

  /** @internal Every call to the engine: CLOSED after close, WORKER_TERMINATED once it died. */
  async _call<T>(fn: (api: EngineApi) => Promise<T>): Promise<T> {
    if (this.#closed) throw this.#closed
    if (this.#dead) throw this.#dead
    this.#connection.busy?.(1)
    // Not Promise.race with `died`: each call would leave a reaction on that promise (pending
    // for the store's life) holding the call's result, a leak of every call ever made.
    let reject: ((err: unknown) => void) | undefined
    try {
      return await new Promise<T>((resolve, rej) => {
        reject = rej
        this.#calls.add(rej)
        fn(this.#connection.api).then(resolve, rej)
      })
    } finally {
      if (reject) this.#calls.delete(reject)
      this.#connection.busy?.(-1)
    }
  }

  /** @internal Frames pushed by the host. */
  readonly _push = (frames: Frame[]): void => {
    const everyMirror = () => [...this.#mirrors.values()].flatMap((set) => [...set])
    if (!Array.isArray(frames)) {
      const err = new SessionfoldError('PROJECTIONS_UNAVAILABLE', 'the worker sent frames that are not a list')
      for (const m of everyMirror()) m._fail(err)
      return
    }
    for (const frame of frames) {
      const problem = frameProblem(frame)
      const sessionId = (frame as Partial<Frame> | null)?.sessionId
      const named = typeof sessionId === 'string' && SESSION_ID_PATTERN.test(sessionId)
      if (problem) {
        // Values we cannot trust are not shown: the handles on that session stop following. A
        // frame that names no session could have been any session's: none can follow it (else
        // an append waiting to read its own write would wait forever).
        const err = new SessionfoldError('PROJECTIONS_UNAVAILABLE', `the worker sent a bad frame${named ? ` for ${where(sessionId)}` : ''}: ${problem}`, named ? { sessionId } : {})
        for (const m of named ? this.#mirrors.get(sessionId) ?? [] : everyMirror()) m._fail(err)
        continue
      }
      for (const m of this.#mirrors.get(sessionId as string) ?? []) m._apply(frame)
    }
  }

  /**
   * @internal What the worker answers is checked before the app sees it, like its frames: a
   * broken or hostile worker gives PROJECTIONS_UNAVAILABLE, never values of the wrong shape.
   */
  async _checked<T>(what: string, fn: (api: EngineApi) => Promise<T>, problemOf: (value: T) => string | undefined, sessionId?: SessionId): Promise<T> {
    const value = await this._call(fn)
    const problem = problemOf(value)
    if (problem === undefined) return value
    const handle = (value as Partial<HandleInfo> | null)?.handle
    if (what === 'handle' && typeof handle === 'number') await this._call((api) => api.closeHandle(handle)).catch(() => {})
    throw new SessionfoldError('PROJECTIONS_UNAVAILABLE', `the worker sent a bad ${what}${sessionId === undefined ? '' : ` for ${where(sessionId)}`}: ${problem}`, sessionId === undefined ? {} : { sessionId })
  }

  /** @internal */
  _open<V extends SessionView>(info: HandleInfo, make: (mirror: ProjectionMapView) => V): V {
    const mirror = new ProjectionMapView(info.snapshot)
    let set = this.#mirrors.get(info.header.id)
    if (!set) this.#mirrors.set(info.header.id, (set = new Set()))
    set.add(mirror)
    return make(mirror)
  }

  /** @internal */
  _forget(id: SessionId, mirror: ProjectionMapView): void {
    const set = this.#mirrors.get(id)
    set?.delete(mirror)
    if (set?.size === 0) this.#mirrors.delete(id)
  }

  /** @internal */
  _token(): number {
    return this.#nextToken++
  }

  /** Creates a root session, open for writing. */
  async createSession(options: { id?: SessionId; cwd?: string } = {}): Promise<Session> {
    assertOptions(options, 'createSession', ['id', 'cwd'])
    if (options.id !== undefined) assertSessionId(options.id)
    const info = await this._checked('handle', (api) => api.createSession(options), handleProblem, options.id)
    return this._open(info, (m) => new Session(this, info, m))
  }

  /** Opens a session for writing: SESSION_LOCKED while another client (tab, thread, process) has it so. */
  async openSession(id: SessionId): Promise<Session> {
    assertSessionId(id)
    const info = await this._checked('handle', (api) => api.openSession(id), handleProblem, id)
    return this._open(info, (m) => new Session(this, info, m))
  }

  /** Follows a session read-only; always allowed. */
  async observe(id: SessionId): Promise<SessionView> {
    assertSessionId(id)
    const info = await this._checked('handle', (api) => api.observe(id), handleProblem, id)
    return this._open(info, (m) => new SessionView(this, info, m))
  }

  /** Headers ordered by id, after the `after` cursor, at most `limit` (default 100). */
  async listSessions(options?: { after?: SessionId; limit?: number }): Promise<SessionHeader[]> {
    assertOptions(options, 'listSessions', ['after', 'limit'])
    return this._checked('session list', (api) => api.listSessions(options), (list) =>
      Array.isArray(list) ? list.map(headerProblem).find((p) => p !== undefined) : 'not an array')
  }

  /**
   * Reads every log and checkpoint of the store and reports each damaged session; changes
   * nothing (no repair, no checkpoint rewrite, no lock taken), so it is safe while an app
   * writes. Progress is in events: `total` is what was stored when verify began.
   */
  async verify(options: VerifyOptions = {}): Promise<VerifyReport> {
    if (!isPlainObject(options as unknown)) throw bad(`verify options must be an object, got ${describe(options)}`)
    const unknown = Object.keys(options).find((k) => k !== 'signal' && k !== 'onProgress')
    if (unknown !== undefined) throw bad(`verify options have an unknown field ${describe(unknown)}`)
    const { signal, onProgress } = options
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad('verify signal must be an AbortSignal')
    if (onProgress !== undefined && typeof onProgress !== 'function') throw bad(`verify onProgress must be a function, got ${describe(onProgress)}`)
    const cancelled = () => new SessionfoldError('CANCELLED', 'verify was cancelled')
    if (signal?.aborted) throw cancelled()
    const token = this._token()
    const onAbort = () => void this._call((api) => api.cancel(token)).catch(() => {})
    signal?.addEventListener('abort', onAbort)
    try {
      const plan = await this._checked('verify plan', (api) => api.verifyPlan(), verifyPlanProblem)
      const report: VerifyReport = { sessions: 0, events: 0, damaged: [] }
      onProgress?.({ done: 0, total: plan.events })
      for (let after: string | null = null; ;) {
        if (signal?.aborted) throw cancelled()
        const step = await this._checked('verify step', (api) => api.verifyStep(after, VERIFY_BUDGET, token), verifyStepProblem)
        report.sessions += step.sessions
        report.events += step.events
        report.damaged.push(...step.damaged)
        onProgress?.({ done: report.events, total: Math.max(plan.events, report.events) })
        if (step.next === null) return report
        after = step.next
      }
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /** Deletes a session nobody has open for writing (else SESSION_LOCKED). */
  async deleteSession(id: SessionId): Promise<void> {
    assertSessionId(id)
    await this._call((api) => api.deleteSession(id))
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
    return this._checked('batch of changes', (api) => api.changesSince(cursor ?? null, options ?? {}), changesProblem)
  }

  /**
   * Imports a batch made by another store's `changesSince`: missing sessions and events are
   * added with their headers and seqs unchanged; what is already here is compared, and a
   * difference is reported as a conflict with neither side changed. Idempotent. A malformed
   * batch is INVALID_ARGUMENT and nothing is written.
   */
  async applyChanges(batch: ChangeBatch): Promise<ApplyResult> {
    assertPlainJson(batch, 'the change batch')
    return this._checked('apply result', (api) => api.applyChanges(batch), applyResultProblem)
  }

  /**
   * Waits for every pending append, writes the close checkpoints, releases every lock and
   * ends the worker. Calls after it reject with CLOSED.
   */
  async close(): Promise<void> {
    if (this.#closed) return
    const closedError = new SessionfoldError('CLOSED', 'the store is closed')
    this.#connection.closing?.()
    try {
      if (!this.#dead) await this._call((api) => api.close())
    } finally {
      this.#closed = closedError
      await this.#connection.end()
      for (const set of this.#mirrors.values()) for (const m of set) m._fail(closedError)
      this.#mirrors.clear()
    }
  }
}

/** A read-only handle on a session: its header, live projections, events and children. */
export class SessionView {
  readonly id: SessionId
  readonly header: SessionHeader
  readonly projections: ProjectionMapView
  /** @internal */ protected readonly _store: Store
  /** @internal */ protected readonly _handle: number
  #closed = false

  /** @internal */
  constructor(store: Store, info: HandleInfo, mirror: ProjectionMapView) {
    this._store = store
    this._handle = info.handle
    this.id = info.header.id
    this.header = info.header
    this.projections = mirror
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
      const page = await this._store._checked('page of events', (api) => api.readEvents(this.id, at, end), (p) => eventsPageProblem(p, at), this.id)
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
    const token = this._store._token()
    const onAbort = () => void this._store._call((api) => api.cancel(token)).catch(() => {})
    signal?.addEventListener('abort', onAbort)
    try {
      const rows = await this._store._checked('list of children', (api) => api.listChildren(this.id, rest, token), (list) =>
        Array.isArray(list) ? list.map(childRowProblem).find((p) => p !== undefined) : 'not an array', this.id)
      if (signal?.aborted) throw cancelled()
      return rows
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /** Stops following the session (a writer also releases its lock, after its appends). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this._store._forget(this.id, this.projections)
    await this._store._call((api) => api.closeHandle(this._handle)).catch((err) => {
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
    const bodies = inputs.map((e) => encodeEventBody(e, this.id, { maxBytes: this._store._maxEventBytes, now }))
    assertOptions(options, 'append', ['expectedSeq'], this.id)
    const result = await this._store._checked('append result', (api) => api.append(this._handle, bodies, options), appendResultProblem, this.id)
    await this._reflect(result.lastSeq)
    return result
  }

  /**
   * Waits until this handle's values reflect `seq`. An acknowledged append is durable: if the
   * values stop first (the store closed, the worker died), the append still succeeded.
   */
  private async _reflect(seq: number): Promise<void> {
    await this.projections._waitFor(seq).catch((err: unknown) => {
      if (!isSessionfoldError(err, 'CLOSED', 'WORKER_TERMINATED')) throw err
    })
  }

  /** Creates a subagent (open for writing), then records it in this session's catalog. */
  async spawn(options: SpawnOptions): Promise<Session> {
    this._check()
    if (!isPlainObject(options as unknown)) throw bad(`spawn options for ${where(this.id)} must be an object, got ${describe(options)}`)
    const { events = [], ...rest } = options
    assertOptions(rest, 'spawn', ['mode', 'label', 'id'], this.id)
    if (!Array.isArray(events)) throw bad(`spawn events for ${where(this.id)} must be an array`)
    const bodies = events.map((e) => encodeEventBody(e, this.id, { maxBytes: this._store._maxEventBytes }))
    const info = await this._store._checked('handle', (api) => api.spawn(this._handle, rest, bodies), handleProblem, this.id)
    if (info.parentSeq !== undefined) await this._reflect(info.parentSeq)
    return this._store._open(info, (m) => new Session(this._store, info, m))
  }

  /** Records an execution outside this store in the catalog (no local session). */
  async recordExternal(options: { childId: string; label?: string }): Promise<AppendResult> {
    this._check()
    if (options === undefined) throw bad(`recordExternal options for ${where(this.id)} must be an object, got undefined`)
    assertOptions(options, 'recordExternal', ['childId', 'label'], this.id)
    const result = await this._store._checked('append result', (api) => api.recordExternal(this._handle, options), appendResultProblem, this.id)
    await this._reflect(result.lastSeq)
    return result
  }

  /** A new session seeded with this one's events [0, at) (default: all); open for writing. */
  async fork(options: { at?: number; id?: SessionId } = {}): Promise<Session> {
    this._check()
    assertOptions(options, 'fork', ['at', 'id'], this.id)
    const info = await this._store._checked('handle', (api) => api.fork(this._handle, options), handleProblem, this.id)
    return this._store._open(info, (m) => new Session(this._store, info, m))
  }
}
