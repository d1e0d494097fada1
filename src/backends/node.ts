import { createFsAdapter } from './fs'
import { checkStoreDir } from './fs/check-root'
import { createIndexedDbAdapter } from './indexeddb'
import { createMemoryAdapter } from './memory'
import { SessionfoldError, where } from '../core/errors'
import { createLocalLocks } from '../storage/locks'
import { fsGrowth } from './fs/growth'
import { createFsLocks } from './fs/locks'
import type { HostOptions } from '../core/protocol'
import type { Platform } from './platform'
import type { PostgresStore } from './postgres/backend'
import { nodeCipher, nodeCompressor } from '../storage/codec/node'

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
    if (o.storage === 'postgres') postgresStores.set(o, await (await import('./postgres/backend')).openPostgresStore(o))
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
