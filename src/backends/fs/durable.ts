// Writes that survive a crash once they resolve: a whole file synced, and a folder synced so
// that a rename into it (or out of it) is durable too.
import type { FsPromises } from './options'
import { dirname } from './host'

/** Writes `data` as the whole of a new file at `path`, then syncs it. */
export async function writeDurable(fs: FsPromises, path: string, data: string | Buffer): Promise<void> {
  const fh = await fs.open(path, 'w')
  try {
    await fh.writeFile(data)
    await fh.datasync()
  } finally {
    await fh.close()
  }
}

/**
 * Replaces the file at `path` whole: `data` written and synced at `made` (a fresh name in the
 * store's tmp folder), renamed over `path`, and `path`'s folder synced. A crash leaves the old
 * file or the new one.
 */
export async function replaceDurable(fs: FsPromises, made: string, path: string, data: string | Buffer): Promise<void> {
  await writeDurable(fs, made, data)
  await fs.rename(made, path)
  await syncDir(fs, dirname(path))
}

/** Syncs a folder's entries (a rename into or out of it). */
export async function syncDir(fs: FsPromises, path: string): Promise<void> {
  if ((globalThis as { process?: { platform?: string } }).process?.platform === 'win32') return // directories cannot be opened for fsync there
  const fh = await fs.open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
