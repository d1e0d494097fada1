// A store in the Origin Private File System: its row in the browsers' list of backends
// (src/backends/browser.ts; the default worker's list has it without its code).
import type { BackendEntry } from '../platform'
import { opfsConfig, type OpfsConfig, type OpfsOptions } from './config'

/** The row without its code: what the client reads (see opfsStorage). */
export const opfsRow: Omit<BackendEntry<OpfsConfig, OpfsOptions>, 'load'> = {
  storage: 'opfs',
  options: ['name'],
  is: "an OPFS store is the folder `name` of the origin's private file system",
  config: opfsConfig,
}

export const opfsStorage: BackendEntry<OpfsConfig, OpfsOptions> = { ...opfsRow, load: () => import('./backend').then((m) => m.opfsBackend) }
