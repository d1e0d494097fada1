// sessionfold in Node and Electron's main process (the package's "node" condition): files by
// default, the engine in a worker_threads worker or, with worker: false, in this thread.
import { nodeConnectors } from './client/connect-node'
import { openStoreWith, type OpenStoreOptions } from './client/open-store'
import type { Store } from './client/store'

export * from './index'

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
export function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  return openStoreWith(nodeConnectors, options)
}
