// A store in the Origin Private File System, opened for an engine in a dedicated worker: the
// file adapter (src/backends/fs/adapter.ts) on the origin's files (files.ts), with the locks
// and growth notices the origin's tabs share (tabs.ts), as IndexedDB's.
import { SessionfoldError, where } from '../../core/errors'
import { createFileAdapter } from '../fs/adapter'
import type { Backend, Durability } from '../platform'
import type { StorageAdapter } from '../../storage/types'
import type { OpfsConfig } from './config'
import { createOpfsFiles } from './files'

/** Why this context cannot keep an OPFS store, or undefined where it can. */
export function whyNoOpfs(): string | undefined {
  const scope = globalThis as { FileSystemSyncAccessHandle?: unknown; navigator?: { storage?: { getDirectory?: unknown } } }
  if (typeof scope.navigator?.storage?.getDirectory !== 'function') return 'this browser has no origin private file system (navigator.storage.getDirectory)'
  if (scope.FileSystemSyncAccessHandle === undefined)
    return 'sync access handles are only in a dedicated worker: open the store with its default worker (not worker: false, not a SharedWorker)'
  return undefined
}

/** The file adapter on the folder `name` of the origin's private file system; STORAGE_UNAVAILABLE where there is none (see whyNoOpfs). */
export async function openOpfsStorage(name: string, durability: Durability): Promise<StorageAdapter> {
  const why = whyNoOpfs()
  if (why) throw new SessionfoldError('STORAGE_UNAVAILABLE', `storage 'opfs' is not available here: ${why}`)
  let folder: FileSystemDirectoryHandle
  try {
    folder = await (await navigator.storage.getDirectory()).getDirectoryHandle(name, { create: true })
  } catch (err) {
    throw new SessionfoldError('STORAGE_UNAVAILABLE', `the origin's private file system refused the folder "${name}": ${(err as Error).message}`, {
      cause: err,
    })
  }
  const files = createOpfsFiles(folder, `sessionfold-opfs-folders:${name}`)
  const storage = createFileAdapter({
    dir: '.',
    durability,
    fs: files,
    onRepair: (r) => console.warn(`sessionfold: cut ${r.bytes} bytes of a torn tail from ${r.file} (${where(r.sessionId)}), back to byte ${r.offset}`),
  })
  const close = storage.close.bind(storage)
  storage.close = async () => {
    await close()
    await files.close()
  }
  return storage
}

export const opfsBackend: Backend<OpfsConfig> = {
  async open({ name, durability }, _purpose, platform) {
    const storage = await openOpfsStorage(name, durability)
    return { storage, ...(await platform.neighbours(`opfs:${name}`)) }
  },
}
