// The default browser worker entry (module Web Worker or SharedWorker): built-in units only.
// zod-jitless first: it must run before any schema is built (ES modules evaluate in order).
import './zod-jitless'
import { serveEngine } from './serve-browser'

// A failure to start, thrown where the page hears it: the worker's error event (WORKER_TERMINATED).
serveEngine().catch((err: unknown) =>
  setTimeout(() => {
    throw err
  }),
)
