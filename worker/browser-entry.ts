// The default browser worker entry (module Web Worker or SharedWorker): built-in units only.
import { serveEngine } from './serve-browser'

void serveEngine()
