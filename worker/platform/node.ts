import { createFsAdapter } from '../../adapters/fs'
import { checkStoreDir } from '../../adapters/fs/check-root'
import { createIndexedDbAdapter } from '../../adapters/indexeddb'
import { createMemoryAdapter } from '../../adapters/memory'
import { SessionfoldError, where } from '../../src/errors'
import { createLocalLocks } from '../locks'
import { fsGrowth } from './growth-fs'
import { createFsLocks } from '../locks/fs'
import type { HostOptions } from '../../src/protocol'
import type { Platform } from './index'
import type { PostgresStore } from './postgres'
import { nodeCipher, nodeCompressor } from '../../adapters/codec/node'

/** The PostgreSQL stores opened by check(), by the options they were opened with. */
const postgresStores = new WeakMap<HostOptions, PostgresStore>()

function postgresStore(o: HostOptions): PostgresStore {
  const store = postgresStores.get(o)
  if (!store) throw new SessionfoldError('STORAGE_UNAVAILABLE', 'the PostgreSQL store was not opened before its parts were asked for')
  return store
}

/** Node: files (with lock files shared by processes), PostgreSQL, memory, or an IndexedDB polyfill. */
export const nodePlatform: Platform = {
  check: async (o) => {
    if (o.storage === 'fs') await checkStoreDir(o.dir)
    if (o.storage === 'postgres') postgresStores.set(o, await (await import('./postgres')).openPostgresStore(o))
  },
  release: async (o) => {
    await postgresStores.get(o)?.end()
    postgresStores.delete(o)
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
      case 'postgres':
        return postgresStore(o).storage
      case 'memory':
        return createMemoryAdapter()
      case 'indexeddb':
        return createIndexedDbAdapter({ name: o.name, durability: o.durability })
      default:
        throw new SessionfoldError('INVALID_ARGUMENT', `unknown storage ${String(o.storage)}`)
    }
  },
  compressor: nodeCompressor,
  cipher: nodeCipher,
  openLocks: (o) => (o.storage === 'fs' ? createFsLocks(o.dir) : o.storage === 'postgres' ? postgresStore(o).locks : createLocalLocks()),
  // Other processes (and threads) on the same folder: their appends show as growing files.
  // PostgreSQL: every engine on the store, on any machine, hears appends by LISTEN/NOTIFY.
  openChannel: (o) => (o.storage === 'fs' ? fsGrowth(o.dir) : o.storage === 'postgres' ? postgresStore(o).channel : undefined),
}
