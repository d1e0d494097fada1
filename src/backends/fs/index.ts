// The Node file-system adapter: the file adapter (adapter.ts) on Node's files (node-fs.ts).
/**
 * Storage on plain files (Node only), behind the `StorageAdapter` interface. An app normally
 * picks it with `openStore({ storage: 'fs', dir })`, Node's default.
 *
 * @module sessionfold/adapters/fs
 */
import type { StorageAdapter } from '../../storage/types'
import { createFileAdapter } from './adapter'
import { nodeFileSystem } from './node-fs'
import type { FsAdapterOptions } from './options'

export type { FsAdapterOptions, FsPromises } from './options'
// The storage contract, for code that uses an adapter directly.
export * from '../../storage/public-types'

/**
 * A storage adapter on plain files (Node): one folder per session under `dir`, each event a
 * record with a CRC-32, a batch closed by a COMMIT flag, appends that arrive together sharing
 * one write and `fdatasync` per session. A torn tail left by a crash is cut back (and reported
 * to `onRepair`) before the next write; damage before the tail is `CORRUPT_LOG`. A full disk is
 * `STORAGE_QUOTA_EXCEEDED`.
 */
export function createFsAdapter(options: FsAdapterOptions = {}): StorageAdapter {
  return createFileAdapter({ ...options, fs: options.fs ?? nodeFileSystem() })
}
