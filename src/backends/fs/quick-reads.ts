// Reads of a log made on the calling thread where the fs can (openForReading), as Node's default
// file system (node-fs.ts) makes its stats and its reads of small files. Each call of node:fs/promises is a round trip to libuv's thread pool: about 0.1 ms on the
// machines measured (a stat 118 µs, a readFile, four of them, 349 µs), against 6 µs for a
// statSync and 13 µs for a readFileSync of a small file in the page cache. A pass over many
// small sessions makes a dozen such calls a session, one after another, so it waited on the
// pool for nearly all its time. Files over QUICK_READ_BYTES (an offset index or a feed of a big
// store) are still read through the pool: the thread goes on with other work meanwhile. A
// log is read on this thread when the fs has the synchronous calls.
import type { closeSync, openSync, readSync } from 'node:fs'
import type * as nodeFs from 'node:fs/promises'
import { readerOf, type ReadAt } from './record-format'

/** What openForReading needs of an fs (FsPromises, options.ts, has these). */
export interface ReadingFs {
  open: typeof nodeFs.open
  openSync?: typeof openSync
  readSync?: typeof readSync
  closeSync?: typeof closeSync
}

/** A file opened for positioned reads (a log: its scan at open, its events read). */
export interface ReadableFile {
  read: ReadAt
  close(): Promise<void>
}

/**
 * Opens `path` for reading: with the fs's synchronous calls (`openSync`, `readSync`,
 * `closeSync`) its reads are made on this thread, a copy from the page cache each; else
 * through `open`'s file handle.
 */
export async function openForReading(fs: ReadingFs, path: string): Promise<ReadableFile> {
  const { openSync, readSync, closeSync } = fs
  if (!openSync || !readSync || !closeSync) {
    const fh = await fs.open(path, 'r')
    return { read: readerOf(fh), close: () => fh.close() }
  }
  const fd = openSync(path, 'r')
  return {
    read: async (buf, position) => readSync(fd, buf, 0, buf.length, position),
    close: async () => closeSync(fd),
  }
}
