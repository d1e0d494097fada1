// sessionfold in Node and Electron's main process (the package's "node" condition): files by
// default, the engine in a worker_threads worker or, with worker: false, in this thread.
/**
 * The client: {@link openStore} and the {@link Store} it opens, the session handles
 * ({@link Session}, {@link SessionView}) with their live projections, {@link defineProjection}
 * for projections of your own, {@link sync} between stores, the DOM bindings ({@link bind},
 * {@link bindText}, {@link bindList}) and {@link SessionfoldError}. The same names in every
 * runtime: the package's `browser` and `node` conditions differ only in where `openStore`
 * puts the engine and the storage by default.
 *
 * @module sessionfold
 */
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
