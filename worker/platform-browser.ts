import { createIndexedDbAdapter } from '../adapters/indexeddb'
import { createMemoryAdapter } from '../adapters/memory'
import { SessionfoldError } from '../src/errors'
import { createLocalLocks } from './locks'
import type { Platform } from './platform'

/** Browsers: IndexedDB or memory; no files. */
export const browserPlatform: Platform = {
  openStorage(o) {
    switch (o.storage) {
      case 'indexeddb':
        return createIndexedDbAdapter({ name: o.name, durability: o.durability })
      case 'memory':
        return createMemoryAdapter()
      default:
        throw new SessionfoldError('INVALID_ARGUMENT', `storage '${String(o.storage)}' is not available in a browser`)
    }
  },
  openLocks: () => createLocalLocks(),
}
