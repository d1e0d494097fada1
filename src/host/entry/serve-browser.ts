// `sessionfold/worker` in browsers: serveEngine() makes this module Web Worker, or
// SharedWorker, an engine host.
import { expose, type Endpoint } from 'comlink'
import { registerErrorTransfer } from '../../core/transfer'
// For units written in worker files: the strict schema of a ChunkedList state.
export { chunkedListSchema } from '../../core/chunked-list-schema'
import { EngineHost, ownEngine, postPushes, type ServeEngineOptions, sharedEngines } from '../host'
import { browserPlatform } from '../../backends/browser'
export type { ServeEngineOptions } from '../host'

/** Serves an engine from this worker (see the Node variant for an example). */
export async function serveEngine(options: ServeEngineOptions = {}): Promise<void> {
  registerErrorTransfer()
  const projections = options.projections ?? []
  const scope = globalThis as unknown as { onconnect?: unknown }
  if ('onconnect' in scope) {
    // A SharedWorker: each tab gets its own host (its own handles) over one shared engine, so
    // all tabs share one lock table, one set of live sessions, one cache.
    const shared = sharedEngines(browserPlatform)
    scope.onconnect = (event: MessageEvent) => {
      const port = event.ports[0]!
      expose(new EngineHost(projections, shared, postPushes(port)), port)
      port.start()
    }
    return
  }
  expose(new EngineHost(projections, ownEngine(browserPlatform), postPushes(globalThis as unknown as MessagePort)), globalThis as unknown as Endpoint)
}
