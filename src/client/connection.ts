// The line from a store to its engine host, and what each platform's connect file makes of it
// (connect-node.ts, connect-browser.ts, connect-in-thread.ts). The package entry of each
// platform (index-node.ts, index-browser.ts) hands its Connectors to openStore.
import type { SessionfoldError } from '../core/errors'
import type { AppDefinitions } from '../host/engine-source'
import type { Push } from '../core/protocol'
import type { HostOptions } from '../host/options'
import type { StorageKind } from '../backends/config'
import type { AnyBackendEntry } from '../backends/platform'
import type { EngineApi } from '../host/host'

export interface Connection {
  api: EngineApi
  /** Where the host's pushes go (frames, replication states), in the order it sent them. */
  onPush(listener: (push: Push) => void): void
  /** The engine runs in this thread (worker: false): functions may be passed to it. */
  inThread?: boolean
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
  /**
   * Keeps a Node process alive (+1) for values that change without a call of this store (a
   * view followed for another process's writer, with listeners), until as many -1.
   */
  hold?(delta: 1 | -1): void
}

/** How openStore reaches an engine on one platform. */
export interface Connectors {
  /** The storage of a store whose options name none. */
  readonly defaultStorage: StorageKind
  /** The platform's backends (src/backends/node.ts, browser.ts), whose rows parse the store options. */
  readonly backends: readonly AnyBackendEntry[]
  /** Where this is, for messages: 'in Node', 'in browsers'. */
  readonly here: string
  /** Whether `worker` may be a function that starts the engine's worker (browsers); where not, `workerUrl` names the app's. */
  readonly startsWorkerFunction: boolean
  /** Whether a worker can start here: where none can (a service worker), the engine runs in this thread. */
  canStartWorker(): boolean
  /** The engine in this thread, with the app's units and event definitions. */
  inThread(app: AppDefinitions): Promise<Connection>
  inWorker(request: WorkerRequest): Promise<Connection>
}

export interface WorkerRequest {
  /** The app's worker file; undefined: the built-in one (or the one `start` starts). */
  url: string | URL | undefined
  /** The app's function that starts its worker (`worker: () => new Worker(…)`), not yet called. */
  start?: () => unknown
  /** A SharedWorker, where there are any. */
  shared: boolean
  host: HostOptions
}
