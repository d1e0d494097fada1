// Folder listings kept while a folder stands: a folder read again costs a stat, not a readdir of
// its hundreds of names (the session index's pages, a long log's history rows). A listing is
// used again while the folder's inode and mtime are what they were when it was read, and kept
// only when the folder was at least QUIET_NS old then: a change within the file system's
// timestamp granularity of the read could leave the mtime as it was, one after that cannot.
// Any process may change a folder; the stat sees it.
import { errno, namesIn } from './errors'
import type { FsPromises } from './options'

/** A folder's names as read, and its inode and mtime then. */
export interface Listing {
  ino: bigint
  mtime: bigint
  names: string[]
}

const QUIET_NS = 2_000_000_000n

/** Listings of at most `max` folders (the least recently used go first); `L` may carry what a user derives from the names. */
export function createListings<L extends Listing = Listing>(fs: Pick<FsPromises, 'readdir' | 'stat'>, max: number) {
  const kept = new Map<string, L>()
  return {
    /** Folder `dir` (no names when it is missing), from what is kept while the folder stands. */
    async get(dir: string): Promise<L> {
      let st: { ino: bigint; mtimeNs: bigint }
      try {
        st = await fs.stat(dir, { bigint: true })
      } catch (err) {
        if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') throw err
        kept.delete(dir)
        return { ino: -1n, mtime: -1n, names: [] } as Listing as L
      }
      const had = kept.get(dir)
      kept.delete(dir)
      if (had?.ino === st.ino && had.mtime === st.mtimeNs) {
        kept.set(dir, had) // the most recently used last
        return had
      }
      const read = { ino: st.ino, mtime: st.mtimeNs, names: await namesIn(fs, dir) } as Listing as L
      if (BigInt(Date.now()) * 1_000_000n - st.mtimeNs >= QUIET_NS) {
        if (kept.size >= max) kept.delete(kept.keys().next().value!)
        kept.set(dir, read)
      }
      return read
    },
    /** Forgets `dir` (this process changed it). */
    forget(dir: string): void {
      kept.delete(dir)
    },
  }
}
