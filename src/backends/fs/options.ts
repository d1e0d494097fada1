// The fs adapter's options, and the settings its parts work from once defaults are applied.
import type { closeSync, fdatasync, fdatasyncSync, fstatSync, openSync, readSync, writeSync } from 'node:fs'
import type * as nodeFs from 'node:fs/promises'
import type { RepairReport } from '../../storage/types'

/**
 * The file operations the adapter uses: node:fs/promises, plus a synchronous positioned write
 * for log appends (a copy into the page cache, microseconds, which saves a thread-pool round
 * trip per batch) and a synchronous fdatasync for a lone flush (see group-commit.ts; while
 * several sessions flush, their fdatasyncs go to the thread pool so they run in parallel).
 */
export type FsPromises = Pick<typeof nodeFs, 'open' | 'mkdir' | 'readdir' | 'readFile' | 'rename' | 'rm' | 'stat' | 'unlink'> & {
  /** `node:fs`'s `writeSync`: a positioned write of a batch of records. */
  writeSync: typeof writeSync
  /** Optional: without it every fdatasync goes through the thread pool. */
  fdatasyncSync?: typeof fdatasyncSync
  /**
   * `node:fs`'s `openSync`. Optional, with `fstatSync`, `readSync`, `closeSync` and `fdatasync`:
   * a record put often (`PutOptions.often`, a Durable Stream's record) is opened, read and
   * written with these (copies in and out of the page cache, microseconds each, against a
   * thread-pool round trip each), and only its fdatasync waits on the thread pool. Without
   * them, through `open`'s file handle.
   */
  openSync?: typeof openSync
  /** `node:fs`'s `fstatSync` (see `openSync`). */
  fstatSync?: typeof fstatSync
  /** `node:fs`'s `readSync` (see `openSync`). */
  readSync?: typeof readSync
  /** `node:fs`'s `closeSync` (see `openSync`). */
  closeSync?: typeof closeSync
  /** `node:fs`'s `fdatasync`, the callback one (it runs on the thread pool). */
  fdatasync?: typeof fdatasync
  /**
   * Optional (node:fs/promises has it): puts a file in place only where none is, which the change
   * feed's identity needs when processes make it at once. Without it, rename, where two
   * processes racing may each keep the identity it made until they restart.
   */
  link?: typeof nodeFs.link
  /**
   * Optional (node:fs/promises has it): removes an empty folder, which a delete of a session
   * index entry does with the folders it empties. Without it they stay (empty, and read past).
   */
  rmdir?: typeof nodeFs.rmdir
  /**
   * Optional (`node:os`'s `uptime` by default): the machine's uptime in seconds. Where the
   * system has no boot id to read (Linux has one), it tells one boot of the machine from the
   * next, so that the change feed takes a new identity after a machine crash.
   */
  uptime?: () => number
  /**
   * `false` where a folder cannot be renamed (the origin's private file system): a session's
   * folder is then made in place, its header written last, and deleted header first (see
   * folders.ts). Default: folders are renamed, which Node's files do atomically.
   */
  renamesFolders?: boolean
}

/** Options of `createFsAdapter`. */
export interface FsAdapterOptions {
  /** Root folder of the store. Default: `.sessionfold` in the working directory. */
  dir?: string
  /** `strict` (default): an append resolves once fdatasync'ed. `relaxed`: once written; synced at close. */
  durability?: 'strict' | 'relaxed'
  /** Told when a torn or incomplete tail is cut from a log before it is written to again. */
  onRepair?: (report: RepairReport) => void
  /** Log files kept open for writing at once (default 256); the least recently used idle one is closed beyond it. */
  maxOpenFiles?: number
  /**
   * Reads only (the command line's read-only commands): no folder is made, no leftover cleaned,
   * no index rewritten, and every write rejects with STORAGE_UNAVAILABLE.
   */
  readOnly?: boolean
  /**
   * Sessions whose log state (length, index, header) is kept in memory when idle (default
   * 1024); beyond it the least recently used idle one is dropped and read again (its index and
   * tail) on next use, so memory stays bounded however many sessions a long-lived process touches.
   */
  maxCachedLogs?: number
  /**
   * The file system (default `node:fs/promises` with the synchronous calls above, its `stat` and
   * its `readFile` of files up to 1 MiB made with `statSync` and `readFileSync`: a thread-pool
   * round trip each costs more than the call); tests inject faults such as ENOSPC here.
   */
  fs?: FsPromises
}

/** The options with their defaults applied. */
export interface FsSettings {
  fs: FsPromises
  root: string
  /** Appends resolve once fdatasync'ed (durability 'strict'). */
  strict: boolean
  readOnly: boolean
  maxOpenFiles: number
  maxCachedLogs: number
  onRepair?: (report: RepairReport) => void
}

/** The settings of `options`, whose `fs` is given (Node's default: node-fs.ts). */
export function settingsOf(options: FsAdapterOptions & { fs: FsPromises }): FsSettings {
  return {
    fs: options.fs,
    root: options.dir ?? '.sessionfold',
    strict: (options.durability ?? 'strict') === 'strict',
    readOnly: options.readOnly === true,
    maxOpenFiles: options.maxOpenFiles ?? 256,
    maxCachedLogs: options.maxCachedLogs ?? 1024,
    onRepair: options.onRepair,
  }
}
