// The default file system's reads of small files and its stats, made on the calling thread.
// Each call of node:fs/promises is a round trip to libuv's thread pool: about 0.1 ms on the
// machines measured (a stat 118 µs, a readFile, four of them, 349 µs), against 6 µs for a
// statSync and 13 µs for a readFileSync of a small file in the page cache. A pass over many
// small sessions makes a dozen such calls a session, one after another, so it waited on the
// pool for nearly all its time. Files over QUICK_READ_BYTES (an offset index or a feed of a big
// store) are still read through the pool: the thread goes on with other work meanwhile. A
// log is read the same way (openForReading) when the fs has the synchronous calls.
import { type closeSync, type openSync, readFileSync, type readSync, statSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { readerOf, type ReadAt } from './record-format'

/** Files up to this size are read on the calling thread. */
export const QUICK_READ_BYTES = 1024 * 1024

/** `readFile` of node:fs/promises, on this thread for a file up to QUICK_READ_BYTES. */
export const quickReadFile = (async (path: string, options?: Parameters<typeof nodeFs.readFile>[1]) => {
  // A file not there throws its ENOENT here too (readFileSync), as the read would.
  if (typeof path !== 'string' || (statSync(path, { throwIfNoEntry: false })?.size ?? 0) > QUICK_READ_BYTES) return nodeFs.readFile(path, options)
  return readFileSync(path, options as Parameters<typeof readFileSync>[1])
}) as typeof nodeFs.readFile

/** `stat` of node:fs/promises, on this thread. */
export const quickStat = (async (path: string, options?: Parameters<typeof statSync>[1]) => statSync(path, options)) as typeof nodeFs.stat

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
