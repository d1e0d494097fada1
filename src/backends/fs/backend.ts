// A store in files, opened for an engine: the adapter, lock files shared by processes (and
// threads), and growth noticed by watching the logs of followed sessions.
import { stat } from 'node:fs/promises'
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import type { FsConfig } from './config'
import type { WriterLocks } from '../../storage/locks'
import type { Backend } from '../platform'
import { checkStoreDir } from './check-root'
import { fsGrowth } from './growth'
import { createFsAdapter } from './index'
import { locksDir, sessionsDir } from './layout'
import { createFsLocks, releaseThreadLocks } from './locks'

export const fsBackend: Backend<FsConfig> = {
  async open({ dir, durability }, purpose) {
    if (purpose === 'app') {
      await checkStoreDir(dir)
      return {
        // A torn tail cut before a write is reported where an operator looks: the process's log.
        storage: createFsAdapter({
          dir,
          durability,
          onRepair: (r) => console.warn(`sessionfold: cut ${r.bytes} bytes of a torn tail from ${r.file} (${where(r.sessionId)}), back to byte ${r.offset}`),
        }),
        locks: createFsLocks(dir),
        // Other processes (and threads) on the same folder: their appends show as growing files.
        channel: fsGrowth(dir),
      }
    }
    // The command line: read and write a store that is there; only `import` makes one.
    if (purpose !== 'create' && !(await isStore(dir))) throw new SessionfoldError('STORAGE_UNAVAILABLE', `there is no sessionfold store at ${dir} (use --dir)`)
    if (purpose === 'read') return { storage: createFsAdapter({ dir, readOnly: true }), locks: readOnlyLocks(dir) }
    return { storage: createFsAdapter({ dir, readOnly: false }), locks: createFsLocks(dir) }
  },
  releaseThread: ({ dir }, threadId) => releaseThreadLocks(dir, threadId),
}

async function isStore(dir: string): Promise<boolean> {
  return stat(sessionsDir(dir)).then(
    (s) => s.isDirectory(),
    () => false,
  )
}

/** Asks lock files who holds a session; takes none (and makes no lock folder where there is none). */
function readOnlyLocks(dir: string): WriterLocks {
  let probe: WriterLocks | undefined
  return {
    acquire: async (id: SessionId): Promise<never> => {
      throw new SessionfoldError('STORAGE_UNAVAILABLE', `session "${id}" cannot be opened for writing by a read-only command`, { sessionId: id })
    },
    isHeld: async (id: SessionId) => {
      if (
        !probe &&
        !(await stat(locksDir(dir)).then(
          () => true,
          () => false,
        ))
      )
        return false // no writer ever ran here
      probe ??= createFsLocks(dir)
      return probe.isHeld(id)
    },
  }
}
