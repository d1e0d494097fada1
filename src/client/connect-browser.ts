// Browsers: the engine in a module Web Worker, or a SharedWorker shared by the tabs of an
// origin, or in this thread. The default worker is the file `worker-entry.browser.js` beside
// this code (`worker-entry.opfs.js` for a store whose storage is 'opfs'): the self-contained
// build in the package (dist/browser/), a stand-in that imports src/host/entry/browser.ts
// (browser-opfs.ts) in this source tree (src/client/). The URLs are literals, so that an app's
// bundler (Vite, webpack) finds the files and ships them.
// An app's own worker comes from its function (worker: () => new Worker(new URL(…))): the
// pattern bundlers ship as a worker, with the app's units in it. Either way, one function
// connects to what was started.
import { BROWSER_BACKENDS, browserPlatform } from '../backends/browser'
import { SessionfoldError, thrownText } from '../core/errors'
import { describe } from '../core/validate'
import type { Connection, Connectors } from './connection'
import { connectInThread } from './connect-in-thread'
import { WorkerDeath, loadComlink } from './remote-engine'

export const browserConnectors: Connectors = {
  defaultStorage: 'indexeddb',
  backends: BROWSER_BACKENDS,
  here: 'in browsers',
  startsWorkerFunction: true,
  canStartWorker: () => typeof Worker !== 'undefined',
  inThread: (app) => connectInThread(app, async () => browserPlatform),
  inWorker: async ({ url, start, shared, host }) => browserWorker(start ? ownWorker(start) : builtInWorker(url ?? defaultWorker(host.store.storage), shared)),
}

/**
 * The built-in worker for a store of `storage`: the OPFS worker for 'opfs' (the default one
 * lacks the file adapter's code, about 16 kB gzip, which a store in IndexedDB never runs).
 */
function defaultWorker(storage: string): URL {
  return storage === 'opfs' ? new URL('./worker-entry.opfs.js', import.meta.url) : new URL('./worker-entry.browser.js', import.meta.url)
}

/** Starts `entry` (workerUrl, or the built-in worker) in a SharedWorker if `shared` and there is one, else in a module Web Worker. */
function builtInWorker(entry: string | URL, shared: boolean): Worker | SharedWorker {
  // No SharedWorker (Chrome on Android): a dedicated worker behaves the same for this tab.
  return shared && typeof SharedWorker !== 'undefined'
    ? new SharedWorker(entry, { type: 'module', name: 'sessionfold' })
    : new Worker(entry, { type: 'module', name: 'sessionfold' })
}

const fn = (v: unknown): boolean => typeof v === 'function'
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null

/**
 * Calls the app's function, once: the Worker or SharedWorker it started, taken by its shape (a
 * bundler may wrap the constructors). Anything else is INVALID_ARGUMENT, ended first if it can be.
 */
export function ownWorker(start: () => unknown): Worker | SharedWorker {
  let made: unknown
  try {
    made = start()
  } catch (err) {
    const why = thrownText(err)
    throw new SessionfoldError('INVALID_ARGUMENT', `worker: your function that starts the engine's worker threw: ${why}`, { cause: err })
  }
  if (isObject(made) && fn(made.postMessage) && fn(made.terminate) && fn(made.addEventListener)) return made as unknown as Worker
  const port = isObject(made) ? made.port : undefined
  if (isObject(port) && fn(port.postMessage) && fn(port.start) && fn(port.addEventListener)) return made as unknown as SharedWorker
  if (isObject(made) && fn(made.then)) {
    // An async function: what it resolves with would run with no store to end it.
    ;(made as unknown as PromiseLike<unknown>).then(end, () => {})
    throw new SessionfoldError('INVALID_ARGUMENT', "worker: your function must return the Worker it starts, not a Promise (drop 'async')")
  }
  end(made)
  throw new SessionfoldError(
    'INVALID_ARGUMENT',
    `worker: your function must return a Worker or a SharedWorker (() => new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })), got ${describe(made)}`,
  )
}

/** Ends what a function returned that is no worker openStore can use: terminate() or port.close(), where it has them. */
function end(made: unknown): void {
  try {
    if (!isObject(made)) return
    if (fn(made.terminate)) (made as { terminate(): void }).terminate()
    else if (isObject(made.port) && fn(made.port.close)) (made.port as { close(): void }).close()
  } catch {
    // Not ours to fix: the refusal says what was wrong.
  }
}

/** The engine's line to `worker`: a dedicated Worker, or a SharedWorker through its port. */
async function browserWorker(worker: Worker | SharedWorker): Promise<Connection> {
  const death = new WorkerDeath()
  const sharedWorker = !('terminate' in worker)
  let endpoint: MessagePort | Worker
  let stop: () => void
  if (sharedWorker) {
    worker.addEventListener('error', () => death.dead('failed'))
    endpoint = worker.port
    worker.port.start()
    stop = () => worker.port.close()
  } else {
    worker.addEventListener('error', (e) => death.dead(`failed: ${e.message}`))
    endpoint = worker
    stop = () => worker.terminate()
  }
  let link: Awaited<ReturnType<typeof loadComlink>>
  try {
    link = await loadComlink()
  } catch (err) {
    stop()
    throw err
  }
  const { api, onPush, release } = link(endpoint)
  const locks = (globalThis.navigator as { locks?: LockManager } | undefined)?.locks
  // Shared: this tab holds a lock for as long as it lives; the shared host learns of its end.
  // Refused (an opaque origin refuses every lock), the tab goes without: its handles on the
  // shared host then close with the store, not with the tab.
  const wanted = sharedWorker && locks ? `sessionfold:tab:${globalThis.crypto.randomUUID()}` : undefined
  const tabLock = wanted && (await holdForever(locks!, wanted)) ? wanted : undefined
  // A worker that dies (crashes, closes itself, is killed with its tab) sends no event: watch
  // the lock it holds while alive, granted to us only once it is gone.
  const aliveLock = `sessionfold:alive:${globalThis.crypto.randomUUID()}`
  return {
    aliveLock: locks ? aliveLock : undefined,
    tabLock,
    watch() {
      // Refused: no watch (nor, then, a lock the host could hold), as where Web Locks are missing.
      locks?.request(aliveLock, async () => death.dead('stopped')).catch(() => {})
    },
    closing() {
      death.ending()
    },
    api,
    onPush,
    died: death.died,
    async end() {
      death.ending()
      release()
      stop()
    },
  }
}

/** Holds lock `name` for as long as this context lives, once granted; false if it is refused. */
function holdForever(locks: LockManager, name: string): Promise<boolean> {
  return new Promise((held) => {
    locks.request(name, () => (held(true), new Promise<never>(() => {}))).catch(() => held(false))
  })
}
