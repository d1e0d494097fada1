// `sessionfold/worker` in Node: serveEngine() makes this worker_threads worker an engine host.
/**
 * For a worker file of your own, when your app has projections of its own: {@link serveEngine}
 * makes the worker an engine host with your units registered, and `openStore({ workerUrl })`
 * starts it. In Node the worker is a `worker_threads` worker; in browsers a module Web Worker
 * or a SharedWorker (the same names, from the package's `browser` condition).
 *
 * @module sessionfold/worker
 */
import { expose, type Endpoint } from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { parentPort } from 'node:worker_threads'
import { registerErrorTransfer } from '../../core/transfer'
// For units written in worker files: the strict schema of a ChunkedList state.
export { chunkedListSchema } from '../../core/chunked-list-schema'
import { EngineHost, appOf, ownEngine, postPushes, type ServeEngineOptions } from '../host'
import { nodePlatform } from '../../backends/node'
import { NODE_ENGINE_EXTRAS } from '../node-extras'
export type { ServeEngineOptions } from '../host'

/**
 * Serves an engine from this worker. Apps with their own units write a worker file:
 *
 * @example
 * // my-worker.ts
 * import { serveEngine } from 'sessionfold/worker'
 * import { tokenCount } from './token-count' // the app's units: defineProjection(…)
 * await serveEngine({ projections: [tokenCount] })
 */
export async function serveEngine(options: ServeEngineOptions = {}): Promise<void> {
  if (!parentPort) throw new Error('serveEngine() must run inside a worker thread')
  registerErrorTransfer()
  expose(new EngineHost(appOf(options), ownEngine(nodePlatform, NODE_ENGINE_EXTRAS), postPushes(parentPort)), nodeEndpoint(parentPort) as Endpoint)
}
