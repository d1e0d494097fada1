// The browser worker of a store whose storage is 'opfs' (worker-entry.opfs.js): the default
// worker (browser.ts) with every backend, OPFS's among them (the file adapter on the origin's
// private file system, src/backends/opfs). The client starts it for such a store.
// zod-jitless first: it must run before any schema is built (ES modules evaluate in order).
import './zod-jitless'
import { browserPlatform } from '../../backends/browser'
import { serveEngineOn } from './serve-on'

// A failure to start, thrown where the page hears it: the worker's error event (WORKER_TERMINATED).
serveEngineOn(browserPlatform).catch((err: unknown) =>
  setTimeout(() => {
    throw err
  }),
)
