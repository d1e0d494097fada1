// A store in the Origin Private File System: its row in the browsers' list of backends
// (src/backends/browser.ts).
import type { BackendEntry } from '../platform'
import { opfsConfig, type OpfsConfig, type OpfsOptions } from './config'

export const opfsStorage: BackendEntry<OpfsConfig, OpfsOptions> = {
  storage: 'opfs',
  options: ['name'],
  is: "an OPFS store is the folder `name` of the origin's private file system",
  config: opfsConfig,
  load: () => import('./backend').then((m) => m.opfsBackend),
}
