// A store in files: its row in Node's list of backends (src/backends/node.ts).
import type { BackendEntry } from '../platform'
import { fsConfig, type FsConfig, type FsOptions } from './config'

export const fsStorage: BackendEntry<FsConfig, FsOptions> = {
  storage: 'fs',
  options: ['dir'],
  is: 'an fs store is the folder `dir`',
  config: fsConfig,
  load: () => import('./backend').then((m) => m.fsBackend),
}
