import { createFsAdapter } from '../../adapters/fs'
import { checkStoreDir } from '../../adapters/fs/check-root'
import { createIndexedDbAdapter } from '../../adapters/indexeddb'
import { createMemoryAdapter } from '../../adapters/memory'
import { SessionfoldError, where } from '../../src/errors'
import { createLocalLocks } from '../locks'
import { fsGrowth } from './growth-fs'
import { createFsLocks } from '../locks/fs'
import type { Platform } from './index'

/** Node: files (with lock files shared by processes), memory, or an IndexedDB polyfill. */
export const nodePlatform: Platform = {
  check: async (o) => {
    if (o.storage === 'fs') await checkStoreDir(o.dir)
  },
  openStorage(o) {
    switch (o.storage) {
      case 'fs':
        // A torn tail cut before a write is reported where an operator looks: the process's log.
        return createFsAdapter({
          dir: o.dir,
          durability: o.durability,
          onRepair: (r) => console.warn(`sessionfold: cut ${r.bytes} bytes of a torn tail from ${r.file} (${where(r.sessionId)}), back to byte ${r.offset}`),
        })
      case 'memory':
        return createMemoryAdapter()
      case 'indexeddb':
        return createIndexedDbAdapter({ name: o.name, durability: o.durability })
      default:
        throw new SessionfoldError('INVALID_ARGUMENT', `unknown storage ${String(o.storage)}`)
    }
  },
  openLocks: (o) => (o.storage === 'fs' ? createFsLocks(o.dir) : createLocalLocks()),
  // Other processes (and threads) on the same folder: their appends show as growing files.
  openChannel: (o) => (o.storage === 'fs' ? fsGrowth(o.dir) : undefined),
}
