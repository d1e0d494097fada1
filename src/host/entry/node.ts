// The default worker_threads entry: an engine with the built-in units only.
import { serveEngine } from './serve-node'

await serveEngine()
