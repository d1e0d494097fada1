// The default browser worker entry (module Web Worker or SharedWorker): built-in units only,
// every backend but OPFS's code (a store whose storage is 'opfs' gets browser-opfs.ts's worker).
// zod-jitless first: it must run before any schema is built (ES modules evaluate in order).
import './zod-jitless'
import { defaultWorkerPlatform } from '../../backends/browser'
import { serveEngineOn } from './serve-on'

// A failure to start, thrown where the page hears it: the worker's error event (WORKER_TERMINATED).
serveEngineOn(defaultWorkerPlatform).catch((err: unknown) =>
  setTimeout(() => {
    throw err
  }),
)
