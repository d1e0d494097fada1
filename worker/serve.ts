// `sessionfold/worker`: serveEngine() turns the current worker (a module Web Worker, a
// SharedWorker, or a Node worker_threads worker) into an engine host reached over comlink.
import { expose, type Endpoint } from 'comlink'
import type { ProjectionDefinition } from '../src/projection'
import { registerErrorTransfer } from '../src/transfer'
import { EngineHost, sharedEngines } from './host'

export interface ServeEngineOptions {
  /** The app's projection units, registered after the built-in ones. */
  projections?: readonly ProjectionDefinition[]
}

const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string'

/**
 * Serves an engine from this worker. Apps with their own units write a worker file:
 *
 * @example
 * // my-worker.ts
 * import { serveEngine } from 'sessionfold/worker'
 * import { tokenCount } from './projections'
 * serveEngine({ projections: [tokenCount] })
 */
export async function serveEngine(options: ServeEngineOptions = {}): Promise<void> {
  registerErrorTransfer()
  const projections = options.projections ?? []
  if (isNode) {
    const { parentPort } = await import('node:worker_threads')
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs')
    if (!parentPort) throw new Error('serveEngine() must run inside a worker thread')
    expose(new EngineHost(projections), nodeEndpoint(parentPort) as Endpoint)
    return
  }
  const scope = globalThis as unknown as { onconnect?: unknown }
  if ('onconnect' in scope) {
    // A SharedWorker: every tab that connects gets its own host (its own handles) over one
    // shared engine, so all tabs share one lock table, one set of live sessions, one cache.
    const shared = sharedEngines()
    scope.onconnect = (event: MessageEvent) => {
      const port = event.ports[0]!
      expose(new EngineHost(projections, shared), port)
      port.start()
    }
    return
  }
  expose(new EngineHost(projections), globalThis as unknown as Endpoint)
}
