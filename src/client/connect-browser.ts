// Browsers: the engine in a module Web Worker, or a SharedWorker shared by the tabs of an
// origin, or in this thread. The default worker is the file `worker-entry.browser.js` beside
// this code (`worker-entry.opfs.js` for a store whose storage is 'opfs'): the self-contained
// build in the package (dist/browser/), a stand-in that imports src/host/entry/browser.ts
// (browser-opfs.ts) in this source tree (src/client/). The URLs are literals, so that an app's
// bundler (Vite, webpack) finds the files and ships them.
import { BROWSER_BACKENDS, browserPlatform } from '../backends/browser'
import type { Connection, Connectors } from './connection'
import { connectInThread } from './connect-in-thread'
import { WorkerDeath, loadComlink } from './remote-engine'

export const browserConnectors: Connectors = {
  defaultStorage: 'indexeddb',
  backends: BROWSER_BACKENDS,
  here: 'in browsers',
  canStartWorker: () => typeof Worker !== 'undefined',
  inThread: (app) => connectInThread(app, async () => browserPlatform),
  inWorker: ({ url, shared, host }) => browserWorker(url ?? defaultWorker(host.store.storage), shared),
}

/**
 * The built-in worker for a store of `storage`: the OPFS worker for 'opfs' (the default one
 * lacks the file adapter's code, about 16 kB gzip, which a store in IndexedDB never runs).
 */
function defaultWorker(storage: string): URL {
  return storage === 'opfs' ? new URL('./worker-entry.opfs.js', import.meta.url) : new URL('./worker-entry.browser.js', import.meta.url)
}

async function browserWorker(entry: string | URL, shared: boolean): Promise<Connection> {
  const link = await loadComlink()
  const death = new WorkerDeath()
  const sharedWorker = shared && typeof SharedWorker !== 'undefined'
  let endpoint: MessagePort | Worker
  let stop: () => void
  if (sharedWorker) {
    const sw = new SharedWorker(entry, { type: 'module', name: 'sessionfold' })
    sw.onerror = () => death.dead('failed')
    endpoint = sw.port
    sw.port.start()
    stop = () => sw.port.close()
  } else {
    // No SharedWorker (Chrome on Android): a dedicated worker behaves the same for this tab.
    const w = new Worker(entry, { type: 'module', name: 'sessionfold' })
    w.onerror = (e) => death.dead(`failed: ${e.message}`)
    endpoint = w
    stop = () => w.terminate()
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
