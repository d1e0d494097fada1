// Node's file-system calls, as the file adapter uses them (src/backends/fs/options.ts), on the
// Origin Private File System of a dedicated worker: files through sync access handles
// ('readwrite-unsafe', so that this worker's readers, its writer and other tabs' engines may
// each hold one; one writer per session is the store's own lock), folders through directory
// handles. A log's writes and flushes are synchronous calls on its handle, as Node's
// writeSync/fdatasyncSync are. Failures carry Node's codes (ENOENT, EEXIST, ENOTEMPTY, ENOSPC…),
// which is what the adapter reads. OPFS moves files only: folders are not renamed
// (`renamesFolders: false`, and the adapter makes and deletes a session's folder in place).
import type { FsPromises } from '../fs/options'
import { Buffer } from '../fs/host'
import { codeOf, fsError, wrap } from './errors'
import { createHandlePool, type OpenFile, type SyncHandle, whileBusy } from './pool'
import { createStats } from './stats'

/** Node's file-system calls on the origin's files, and what the OPFS store does with them at open and close. */
export type OpfsFiles = FsPromises & {
  /** Closes every handle this worker has open. */
  close(): Promise<void>
}

/** The parts of `path` ('a/b/c'); absolute paths name nothing here (Linux's boot id: ENOENT). */
function partsOf(path: string): string[] {
  if (path.startsWith('/')) throw fsError('ENOENT', `${path}: no absolute paths in the origin's file system`)
  return path.split('/').filter((p) => p !== '' && p !== '.')
}

/**
 * The file system of the folder `top` of the origin (its store's folder, the adapter's root, is
 * a path under it). `channelName` names the BroadcastChannel on which the tabs on the store
 * tell each other of folders removed.
 */
export function createOpfsFiles(top: FileSystemDirectoryHandle, channelName: string): OpfsFiles {
  /** Files by number, for writeSync and fdatasyncSync: the handle each has now. */
  const byFd = new Map<number, { path: string; handle?: SyncHandle }>()
  let nextFd = 3
  const { fileStats, dirStats, forgetInodes } = createStats(partsOf)
  const pool = createHandlePool((path) => {
    for (const f of byFd.values()) if (f.path === path) f.handle = undefined
  })
  const { acquire, release } = pool
  const drop = (path: string) => pool.drop(partsOf(path).join('/'))

  /**
   * Folder handles by path: a walk from the top costs a lookup a level, about a millisecond
   * each. What is removed or moved here is forgotten here and, over a BroadcastChannel, in the
   * other tabs on the store (`gone`: their folder handles and inode stand-ins of it; until that
   * message comes, one of them may find it gone by its old handle: ENOENT, as it would a
   * moment later). A remove that meets a file another tab holds open asks it to let go
   * (`release`: it closes its handles of the path, and opens them again if it uses them after).
   */
  const folders = new Map<string, FileSystemDirectoryHandle>()
  const others = typeof BroadcastChannel === 'function' ? new BroadcastChannel(channelName) : undefined
  if (others)
    others.onmessage = (event: MessageEvent) => {
      const { gone, release } = (event.data ?? {}) as { gone?: unknown; release?: unknown }
      if (typeof gone === 'string') forget(gone, false)
      if (typeof release === 'string') void drop(release)
    }

  /** `path` removed or moved: its folder handles and inode stand-ins forgotten, here and (`tell`) in the other tabs. */
  function forget(path: string, tell = true): void {
    const at = partsOf(path).join('/')
    for (const key of folders.keys()) if (key === at || key.startsWith(`${at}/`)) folders.delete(key)
    forgetInodes(at)
    if (tell) others?.postMessage({ gone: at })
  }

  /** `fn`, a remove or a move of `path`: the other tabs asked to let go of the path's files if it meets one they hold. */
  const freeing = <T>(path: string, fn: () => Promise<T>): Promise<T> => whileBusy(fn, () => others?.postMessage({ release: partsOf(path).join('/') }))

  async function dirOf(parts: readonly string[], create = false): Promise<FileSystemDirectoryHandle> {
    let dir = top
    let key = ''
    for (const p of parts) {
      key = key === '' ? p : `${key}/${p}`
      const known = folders.get(key)
      if (known) dir = known
      else folders.set(key, (dir = await dir.getDirectoryHandle(p, { create })))
    }
    return dir
  }

  /** The parent folder of `path` and the last name in it. */
  async function place(path: string, create = false): Promise<{ dir: FileSystemDirectoryHandle; name: string }> {
    const parts = partsOf(path)
    const name = parts.pop()
    if (name === undefined) throw fsError('EISDIR', `${path} is the top folder`)
    return { dir: await dirOf(parts, create), name }
  }

  async function fileOf(path: string, create = false): Promise<OpenFile> {
    const { dir, name } = await place(path)
    try {
      return (await dir.getFileHandle(name, { create })) as OpenFile
    } catch (err) {
      if ((err as Error).name === 'TypeMismatchError') throw fsError('EISDIR', `${path} is a folder`)
      throw err
    }
  }

  /** What `path` is: a file, a folder, or (ENOENT) nothing. */
  async function entryOf(path: string): Promise<{ file?: OpenFile; dir?: FileSystemDirectoryHandle }> {
    const parts = partsOf(path)
    if (parts.length === 0) return { dir: top }
    const { dir, name } = await place(path)
    try {
      return { file: (await dir.getFileHandle(name)) as OpenFile }
    } catch (err) {
      if ((err as Error).name !== 'TypeMismatchError') throw err
      return { dir: await dir.getDirectoryHandle(name) }
    }
  }

  async function open(path: string, flags: string = 'r') {
    const key = partsOf(path).join('/')
    const create = flags !== 'r' && flags !== 'r+'
    if (flags === 'wx' || flags === 'ax') {
      const there = await fileOf(path).then(
        () => true,
        (err) => (codeOf(err) === 'ENOENT' ? false : Promise.reject(err)),
      )
      if (there) throw fsError('EEXIST', `${path} exists`)
    }
    if (flags === 'r') {
      const { dir } = await entryOf(path)
      if (dir) return folderHandle() // opened to be synced: its entries are the browser's to keep
    }
    const file = await fileOf(path, create)
    let handle: SyncHandle | undefined = await acquire(key, file)
    if (flags.startsWith('w')) handle.truncate(0)
    const appends = flags.startsWith('a')
    let position = 0
    const fd = nextFd++
    const entry: { path: string; handle?: SyncHandle } = { path: key, handle }
    byFd.set(fd, entry)
    /** The handle, opened again where a remove or move of its path closed it. */
    const live = async (): Promise<SyncHandle> => {
      if (!entry.handle) entry.handle = handle = await acquire(key, await fileOf(path))
      return entry.handle
    }
    const at = (h: SyncHandle, pos: number | null | undefined, length: number) => {
      const p = appends ? h.getSize() : (pos ?? position)
      if (pos === null || pos === undefined || appends) position = p + length
      return p
    }
    return {
      fd,
      async write(data: Uint8Array | string, offset = 0, length?: number, pos?: number | null) {
        const h = await live()
        const bytes = typeof data === 'string' ? Buffer.from(data) : data.subarray(offset, offset + (length ?? data.length - offset))
        const bytesWritten = h.write(bytes, { at: at(h, pos, bytes.length) })
        return { bytesWritten, buffer: data }
      },
      async writeFile(data: Uint8Array | string) {
        const h = await live()
        const bytes = typeof data === 'string' ? Buffer.from(data) : data
        h.write(bytes, { at: at(h, null, bytes.length) })
      },
      async read(buffer: Uint8Array, offset = 0, length = buffer.length - offset, pos?: number | null) {
        const h = await live()
        const into = buffer.subarray(offset, offset + length)
        const p = pos ?? position
        const bytesRead = h.read(into, { at: p })
        if (pos === null || pos === undefined) position = p + bytesRead
        return { bytesRead, buffer }
      },
      async stat() {
        return fileStats(path, (await live()).getSize(), Date.now())
      },
      async truncate(length = 0) {
        ;(await live()).truncate(length)
      },
      async datasync() {
        ;(await live()).flush()
      },
      async sync() {
        ;(await live()).flush()
      },
      async close() {
        byFd.delete(fd)
        if (entry.handle) release(key, entry.handle)
        entry.handle = undefined
      },
    }
  }

  /** A folder opened for reading, as syncDir (src/backends/fs/durable.ts) opens one to sync it. */
  function folderHandle() {
    const refuse = async () => {
      throw fsError('EISDIR', 'a folder has no bytes to read or write')
    }
    return {
      fd: -1,
      read: refuse,
      write: refuse,
      writeFile: refuse,
      truncate: refuse,
      stat: async () => dirStats(),
      datasync: async () => {},
      sync: async () => {},
      close: async () => {},
    }
  }

  const syncOf = (fd: number): SyncHandle => {
    const h = byFd.get(fd)?.handle
    if (!h) throw fsError('EBADF', `file ${fd} is not open`)
    return h
  }

  const fs = {
    open: (path: string, flags?: string) => open(path, flags).catch((err) => Promise.reject(wrap(err, `open ${path}`))),

    async readFile(path: string, options?: BufferEncoding | { encoding?: BufferEncoding | null } | null) {
      try {
        const bytes = new Uint8Array(await (await (await fileOf(path)).getFile()).arrayBuffer())
        const encoding = typeof options === 'string' ? options : options?.encoding
        const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
        return encoding ? buf.toString(encoding) : buf
      } catch (err) {
        throw wrap(err, `read ${path}`)
      }
    },

    async stat(path: string) {
      try {
        const { file } = await entryOf(path)
        if (!file) return dirStats()
        const f = await file.getFile()
        return fileStats(path, f.size, f.lastModified)
      } catch (err) {
        throw wrap(err, `stat ${path}`)
      }
    },

    async mkdir(path: string, options?: { recursive?: boolean }) {
      try {
        const parts = partsOf(path)
        if (options?.recursive) {
          await dirOf(parts, true)
          return undefined
        }
        const { dir, name } = await place(path)
        const there = await dir.getDirectoryHandle(name).then(
          () => true,
          (err) => (codeOf(err) === 'ENOENT' ? false : Promise.reject(err)),
        )
        if (there) throw fsError('EEXIST', `mkdir ${path}: exists`)
        await dir.getDirectoryHandle(name, { create: true })
        return undefined
      } catch (err) {
        throw wrap(err, `mkdir ${path}`)
      }
    },

    async readdir(path: string) {
      try {
        const { dir } = await entryOf(path)
        if (!dir) throw fsError('ENOTDIR', `readdir ${path}: a file`)
        const names: string[] = []
        for await (const name of (dir as FileSystemDirectoryHandle & { keys(): AsyncIterable<string> }).keys()) names.push(name)
        return names.sort()
      } catch (err) {
        throw wrap(err, `readdir ${path}`)
      }
    },

    async rename(from: string, to: string) {
      try {
        const { file, dir } = await entryOf(from)
        if (dir) throw fsError('ENOTSUP', `rename ${from}: the origin's file system moves files only, not folders`)
        const target = await place(to)
        const over: { dir?: unknown } = await entryOf(to).catch((err) => (codeOf(err) === 'ENOENT' ? {} : Promise.reject(err)))
        if (over.dir) throw fsError('EISDIR', `rename ${from} over the folder ${to}`)
        await drop(from)
        await drop(to)
        await freeing(to, () => freeing(from, () => (file as OpenFile).move(target.dir, target.name)))
        forget(from)
        forget(to)
      } catch (err) {
        throw wrap(err, `rename ${from} to ${to}`)
      }
    },

    async rm(path: string, options?: { recursive?: boolean; force?: boolean }) {
      try {
        const { dir, name } = await place(path)
        await drop(path)
        await freeing(path, () => dir.removeEntry(name, { recursive: options?.recursive === true }))
        forget(path)
      } catch (err) {
        if (options?.force && codeOf(err) === 'ENOENT') return
        throw wrap(err, `rm ${path}`)
      }
    },

    async unlink(path: string) {
      try {
        const { file } = await entryOf(path)
        if (!file) throw fsError('EISDIR', `unlink ${path}: a folder`)
        const { dir, name } = await place(path)
        await drop(path)
        await freeing(path, () => dir.removeEntry(name))
        forget(path)
      } catch (err) {
        throw wrap(err, `unlink ${path}`)
      }
    },

    async rmdir(path: string) {
      try {
        const { dir: folder } = await entryOf(path)
        if (!folder) throw fsError('ENOTDIR', `rmdir ${path}: a file`)
        const { dir, name } = await place(path)
        await dir.removeEntry(name)
        forget(path)
      } catch (err) {
        throw wrap(err, `rmdir ${path}`)
      }
    },

    writeSync(fd: number, buffer: Uint8Array, offset = 0, length = buffer.length - offset, position?: number | null) {
      const h = syncOf(fd)
      try {
        return h.write(buffer.subarray(offset, offset + length), { at: position ?? h.getSize() })
      } catch (err) {
        throw wrap(err, `write to file ${fd}`)
      }
    },

    fdatasyncSync(fd: number) {
      try {
        syncOf(fd).flush()
      } catch (err) {
        throw wrap(err, `flush file ${fd}`)
      }
    },

    async close() {
      others?.close()
      await pool.closeAll()
    },
  }
  return { ...fs, renamesFolders: false } as unknown as OpfsFiles
}
