// sessionfold in browsers (the package's "browser" and default condition): IndexedDB by
// default, the engine in a module Web Worker, a SharedWorker (worker: 'shared') or, with
// worker: false or where no Worker exists, in this thread.
import { browserConnectors } from './client/connect-browser'
import { openStoreWith, type OpenStoreOptions } from './client/open-store'
import type { Store } from './client/store'

export * from './index'

/** Opens a store (see index-node.ts for an example). */
export function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  return openStoreWith(browserConnectors, options)
}
