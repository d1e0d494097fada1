// openStore's options, all checked before anything starts, and the opening itself: connect
// through the platform's connectors, then start the host.
import { SessionfoldError } from '../core/errors'
import type { EventDefinition } from '../core/events'
import type { ProjectionDefinition } from '../core/projection'
import type { HostOptions } from '../host/options'
import { DEFAULT_MAX_EVENT_BYTES } from '../core/limits'
import { storeConfig, storeOptionKeys, type StoreOptions } from '../backends/config'
import { assertOptions, describe, isPlainObject } from '../core/validate'
import type { Connectors } from './connection'
import { checkKey } from './keys'
import { Store } from './store'

/**
 * A dedicated Web Worker as openStore uses one: what `new Worker(…)` returns. Structural, so
 * that an app's types need no DOM lib to name it.
 */
export interface WorkerLike {
  /** Sends a message to the worker (the engine's calls go this way). */
  postMessage(message: unknown): void
  /** Stops the worker: `store.close()` calls it. */
  terminate(): void
}

/** A SharedWorker as openStore uses one: what `new SharedWorker(…)` returns (structural, as {@link WorkerLike}). */
export interface SharedWorkerLike {
  /** The port this page talks to the worker through. */
  readonly port: {
    /** Sends a message to the worker (the engine's calls go this way). */
    postMessage(message: unknown): void
    /** Closes this page's line to the worker: `store.close()` calls it. */
    close(): void
  }
}

/** Options of `openStore()`. Every one is checked before anything starts; an unknown key is `INVALID_ARGUMENT`. */
export interface OpenStoreOptions extends StoreOptions {
  /**
   * true (default): the engine runs in a worker (a module Web Worker in browsers,
   * worker_threads in Node); 'shared': a SharedWorker shared by the tabs of an origin (falls
   * back to a dedicated worker where SharedWorker is missing); false: in this thread. Where no
   * Worker exists (a service worker, an extension's background), true means this thread.
   *
   * In browsers, a function that starts your own worker file (one that calls
   * serveEngine({ projections })): openStore calls it once, and the `Worker` it returns runs the
   * engine for this store (a `SharedWorker`: the engine shared through its port, as with
   * 'shared'). Written `() => new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })`,
   * it is the pattern Vite, webpack, Parcel and esbuild-based tools bundle as a worker, with
   * your units in it. close() terminates that Worker (closes the SharedWorker's port). Refused
   * (`INVALID_ARGUMENT`, nothing started) with `workerUrl`, with `projections`, where no Worker
   * can start, and in Node, where `workerUrl` names your worker file; a function that throws or
   * returns no Worker is `INVALID_ARGUMENT` too (what it returned is terminated).
   *
   * @example
   * ```ts
   * const store = await openStore({
   *   worker: () => new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }),
   * })
   * ```
   */
  worker?: boolean | 'shared' | (() => WorkerLike | SharedWorkerLike)
  /**
   * Your own worker file that calls serveEngine({ projections }); default: the built-in one.
   * Only where the engine runs in a worker: rejected with worker: false, and where no Worker can
   * start (then pass worker: false and `projections`). In browsers a bundler ships the file
   * when it is started by a function (see `worker`): pass that instead.
   */
  workerUrl?: string | URL
  /** Your projection units, with worker: false only (in a worker, pass them to serveEngine). */
  projections?: readonly ProjectionDefinition[]
  /**
   * Your event definitions (`defineEvent`), with worker: false only (in a worker, pass them to
   * serveEngine): appends are checked against them, reads upcast to their latest version.
   */
  events?: readonly EventDefinition[]
  /**
   * When the engine checkpoints a live session's projection states (a cache that spares a
   * full refold on the next cold read), besides at creation, every `turn/end` and close.
   */
  checkpoint?: {
    /** After this many events since the last checkpoint (default 256). */
    everyEvents?: number
    /**
     * Once the session has had no new event for this long, in ms (default 2000), when events
     * are not yet checkpointed; at the latest 15 times this long after the first of them.
     */
    everyMs?: number
  }
  /** Largest encoded event, default 1 MiB. */
  maxEventBytes?: number
  /**
   * Encryption at rest (AES-256-GCM): `key` is 32 bytes or an AES-GCM `CryptoKey` (see
   * `deriveKey` for a passphrase). A store is encrypted or not from its creation: opening an
   * encrypted store without its key, with another key, or a plain store with a key rejects
   * with `KEY_REJECTED` before anything else is read or written.
   */
  encryption?: {
    /** 32 random bytes, or an AES-GCM CryptoKey of 256 bits allowed to encrypt and decrypt. */
    key: Uint8Array | CryptoKey
  }
  /**
   * `'deflate'` (default): appends and checkpoint rows of more than a few hundred bytes are
   * stored compressed (node:zlib in Node, CompressionStream in browsers). `'none'`: stored as
   * they are. Either reads what the other wrote.
   */
  compression?: 'deflate' | 'none'
}

const CLIENT_OPTIONS = ['worker', 'workerUrl', 'projections', 'events', 'checkpoint', 'maxEventBytes', 'encryption', 'compression']

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/** openStore of the platform whose `connectors` are given (see index-node.ts, index-browser.ts). */
export async function openStoreWith(connectors: Connectors, options: OpenStoreOptions): Promise<Store> {
  const { host, worker } = checkOptions(options, connectors)
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES
  const connection =
    worker === false || !connectors.canStartWorker()
      ? await connectors.inThread({ projections: options.projections ?? [], events: options.events ?? [] })
      : await connectors.inWorker({
          url: options.workerUrl,
          ...(typeof worker === 'function' ? { start: worker } : {}),
          shared: worker === 'shared',
          host,
        })
  const store = new Store(connection, maxEventBytes)
  connection.onPush(store._push)
  try {
    await store._call((api) => api.init({ ...host, aliveLock: connection.aliveLock, tabLock: connection.tabLock }))
    connection.watch?.()
  } catch (err) {
    await connection.end().catch(() => {})
    throw err
  }
  return store
}

/** The host's options, and where the engine runs; INVALID_ARGUMENT for anything else. */
function checkOptions(options: OpenStoreOptions, connectors: Connectors): { host: HostOptions; worker: NonNullable<OpenStoreOptions['worker']> } {
  if (!isPlainObject(options as unknown)) throw bad(`openStore options must be an object, got ${describe(options)}`)
  const known = [...storeOptionKeys(connectors.backends), ...CLIENT_OPTIONS]
  for (const key of Object.keys(options)) if (!known.includes(key)) throw bad(`openStore has no option ${describe(key)} ${connectors.here}`)
  const store = storeConfig(options, connectors.backends, connectors.defaultStorage, connectors.here)
  // Checked here, as they cross to the worker: it reads what the caller passed, or nothing.
  assertOptions(options.checkpoint, 'checkpoint', ['everyEvents', 'everyMs'])
  for (const [k, v] of Object.entries(options.checkpoint ?? {})) {
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)) throw bad(`checkpoint.${k} must be a number > 0, got ${describe(v)}`)
  }
  if (
    options.maxEventBytes !== undefined &&
    (typeof options.maxEventBytes !== 'number' || !Number.isFinite(options.maxEventBytes) || options.maxEventBytes <= 0)
  ) {
    throw bad(`maxEventBytes must be a number > 0, got ${describe(options.maxEventBytes)}`)
  }
  if (options.encryption !== undefined) {
    if (!isPlainObject(options.encryption as unknown)) throw bad(`encryption must be { key }, got ${describe(options.encryption)}`)
    for (const k of Object.keys(options.encryption)) if (k !== 'key') throw bad(`encryption has no option ${describe(k)}`)
  }
  const encryption = options.encryption === undefined ? undefined : { key: checkKey(options.encryption.key, 'encryption.key') }
  const compression = options.compression ?? 'deflate'
  if (compression !== 'deflate' && compression !== 'none') throw bad(`compression must be 'deflate' or 'none', got ${describe(compression)}`)
  const worker = options.worker ?? true
  if (worker !== true && worker !== false && worker !== 'shared' && typeof worker !== 'function')
    throw bad(`worker must be true, false, 'shared' or a function that starts your worker, got ${describe(worker)}`)
  if (options.projections !== undefined) {
    if (!Array.isArray(options.projections)) throw bad('projections must be an array of defineProjection() units')
    if (worker !== false)
      throw bad(
        `projections run in the engine: pass them with worker: false, or to serveEngine() in your own worker file (${typeof worker === 'function' ? 'the one your worker function starts' : 'workerUrl'})`,
      )
  }
  if (options.events !== undefined) {
    // Each definition is checked with the engine's code (connect-in-thread.ts), before anything opens.
    if (!Array.isArray(options.events)) throw bad(`events must be an array of defineEvent() definitions, got ${describe(options.events)}`)
    if (worker !== false) throw bad('events are checked in the engine: pass them with worker: false, or to serveEngine() in your own worker file (workerUrl)')
  }
  if (typeof worker === 'function') checkWorkerFunction(options, connectors)
  if (options.workerUrl !== undefined) {
    if (typeof options.workerUrl !== 'string' && !(options.workerUrl instanceof URL))
      throw bad(`workerUrl must be a string or a URL, got ${describe(options.workerUrl)}`)
    // Without the app's worker file the engine would run without the app's units: refused,
    // never ignored.
    if (worker === false)
      throw bad(
        'workerUrl cannot apply with worker: false (the engine runs in this thread, not in your worker file): pass your units as projections, or drop worker: false',
      )
    if (!connectors.canStartWorker())
      throw bad(
        "workerUrl cannot apply here: no Worker can start in this context (a service worker, an extension's background), so the engine runs in this thread: pass worker: false with your units as projections",
      )
  }
  const host: HostOptions = {
    store,
    checkpoint: options.checkpoint,
    maxEventBytes: options.maxEventBytes,
    compression,
    ...(encryption ? { encryption } : {}),
  }
  return { host, worker }
}

/** worker: a function, where it can start the engine's worker, and alone. */
function checkWorkerFunction(options: OpenStoreOptions, connectors: Connectors): void {
  // Two worker files: which one the engine runs in would be a guess.
  if (options.workerUrl !== undefined)
    throw bad(
      'worker (a function) and workerUrl both name your worker file: keep one (the function in browsers, where bundlers find the file it starts; workerUrl in Node)',
    )
  if (!connectors.startsWorkerFunction)
    throw bad(`worker cannot be a function ${connectors.here}: pass your worker file as workerUrl (openStore starts it in worker_threads, TypeScript included)`)
  if (!connectors.canStartWorker())
    throw bad(
      "worker cannot be a function here: no Worker can start in this context (a service worker, an extension's background), so the engine runs in this thread: pass worker: false with your units as projections",
    )
}
