// Node's file system, as the file adapter takes it by default (createFsAdapter, index.ts): the
// promises API, the synchronous calls it uses where a thread-pool round trip costs more than the
// call (options.ts, quick-reads.ts), and the machine's uptime (boot.ts).
import { closeSync, fdatasync, fdatasyncSync, fstatSync, openSync, readFileSync, readSync, statSync, writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { uptime } from 'node:os'
import type { FsPromises } from './options'

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

/** Node's file system with the calls above: the fs of createFsAdapter when none is given. */
export const nodeFileSystem = (): FsPromises => ({
  ...nodeFs,
  readFile: quickReadFile,
  stat: quickStat,
  writeSync,
  fdatasyncSync,
  openSync,
  fstatSync,
  readSync,
  closeSync,
  fdatasync,
  uptime,
})
