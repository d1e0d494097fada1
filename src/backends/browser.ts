// Browsers' backends, one line each: IndexedDB, the origin's private file system and memory, with the locks and growth notices
// shared by an origin's tabs; no files. Each row is its folder's registration.ts: the client reads the
// rows to check openStore's options; the engine loads a backend's code from its row.
import { SessionfoldError } from '../core/errors'
import { indexedDbStorage } from './indexeddb/registration'
import { memoryStorage } from './memory/registration'
import { opfsRow, opfsStorage } from './opfs/registration'
import { browserPlatformOf } from './browser-platform'
import type { Platform } from './platform'

export const BROWSER_BACKENDS = [indexedDbStorage, opfsStorage, memoryStorage] as const

// Pure (so a bundle that takes only the default worker's platform holds no OPFS code).
export const browserPlatform: Platform = /* @__PURE__ */ browserPlatformOf(BROWSER_BACKENDS)

/**
 * The backends of the default browser worker (worker-entry.browser.js): the list above with the
 * OPFS row's code left out. That code is the file adapter (about 16 kB gzip), which a store on
 * IndexedDB never runs; a store whose storage is 'opfs' gets the OPFS worker
 * (worker-entry.opfs.js, src/host/entry/browser-opfs.ts), which has it, as has an app's own
 * worker (sessionfold/worker).
 */
export const defaultWorkerPlatform: Platform = /* @__PURE__ */ browserPlatformOf([
  indexedDbStorage,
  {
    ...opfsRow,
    load: async () => {
      throw new SessionfoldError('STORAGE_UNAVAILABLE', "storage 'opfs' is not in this worker: the OPFS worker (worker-entry.opfs.js) keeps it")
    },
  },
  memoryStorage,
])
