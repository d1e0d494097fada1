// `sessionfold/worker` in browsers: serveEngine() makes this module Web Worker, or
// SharedWorker, an engine host.
// For units written in worker files: the strict schema of a ChunkedList state.
export { chunkedListSchema } from '../../core/chunked-list-schema'
import type { ServeEngineOptions } from '../host'
import { browserPlatform } from '../../backends/browser'
import { serveEngineOn } from './serve-on'
export type { ServeEngineOptions } from '../host'

/** Serves an engine from this worker (see the Node variant for an example). */
export function serveEngine(options: ServeEngineOptions = {}): Promise<void> {
  return serveEngineOn(browserPlatform, options)
}
