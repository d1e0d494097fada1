// The sync access handles a worker has open, one per file, shared by that file's opens: a
// handle takes about 3 ms to open, so one nobody uses is kept a moment (IDLE_MS) for the next
// open. 'readwrite-unsafe' handles, so that this worker's readers and writer and other tabs'
// engines may each hold one at once (one writer per session is the store's own lock); a file
// with a handle open anywhere cannot be removed or moved, so a remove or move that meets one
// waits for it (whileBusy).
import { codeOf } from './errors'

/** A sync access handle (TypeScript's DOM library has none: it is a worker's). */
export interface SyncHandle {
  read(into: ArrayBufferView, options?: { at?: number }): number
  write(from: ArrayBufferView, options?: { at?: number }): number
  truncate(size: number): void
  getSize(): number
  flush(): void
  close(): void
}

/** A file handle as Chromium has it: sync access handles (shared ones too) and moves. */
export type OpenFile = FileSystemFileHandle & {
  createSyncAccessHandle(options?: { mode: 'readwrite' | 'readwrite-unsafe' }): Promise<SyncHandle>
  move(dir: FileSystemDirectoryHandle, name: string): Promise<void>
}

/** An open file of the pool. */
interface Pooled {
  handle: Promise<SyncHandle>
  users: number
  idle?: ReturnType<typeof setTimeout>
}

/** A handle nobody uses is closed after this long (another tab's remove waits for it). */
const IDLE_MS = 300
/** A remove or move that meets a file another tab holds open tries again, for up to this long. */
const BUSY_WAIT_MS = 5000

/**
 * `fn`, tried again while another tab holds the file open (it closes idle ones within
 * IDLE_MS); `busy` is told the first time (to ask the other tabs to let go at once).
 */
export async function whileBusy<T>(fn: () => Promise<T>, busy?: () => void): Promise<T> {
  for (let start: number | undefined; ; ) {
    try {
      return await fn()
    } catch (err) {
      if (codeOf(err) !== 'EBUSY' || Date.now() - (start ?? Date.now()) > BUSY_WAIT_MS) throw err
      if (start === undefined) busy?.()
      start ??= Date.now()
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}

/** The pool; `dropped(path)` is told of each handle closed under its users (a remove or a move). */
export function createHandlePool(dropped: (path: string) => void) {
  const pool = new Map<string, Pooled>()

  return {
    /** A handle of `path` (a key: its parts joined by '/'), opened when the pool has none. */
    acquire(path: string, file: OpenFile): Promise<SyncHandle> {
      let entry = pool.get(path)
      if (!entry) {
        const made: Pooled = { handle: file.createSyncAccessHandle({ mode: 'readwrite-unsafe' }), users: 0 }
        made.handle.catch(() => pool.get(path) === made && pool.delete(path))
        pool.set(path, (entry = made))
      }
      clearTimeout(entry.idle)
      entry.users++
      return entry.handle
    },

    release(path: string, handle: SyncHandle): void {
      const entry = pool.get(path)
      if (!entry) {
        handle.close() // dropped from the pool meanwhile (a remove or a move)
        return
      }
      if (--entry.users > 0) return
      entry.idle = setTimeout(() => {
        if (pool.get(path) !== entry || entry.users > 0) return
        pool.delete(path)
        handle.close()
      }, IDLE_MS)
    },

    /** Closes the handles of `at` and of everything under it (before it is removed or moved over). */
    async drop(at: string): Promise<void> {
      for (const [p, entry] of pool) {
        if (p !== at && !p.startsWith(`${at}/`)) continue
        pool.delete(p)
        clearTimeout(entry.idle)
        ;(await entry.handle.catch(() => undefined))?.close()
        dropped(p)
      }
    },

    async closeAll(): Promise<void> {
      const open = [...pool.values()]
      pool.clear()
      for (const entry of open) {
        clearTimeout(entry.idle)
        ;(await entry.handle.catch(() => undefined))?.close()
      }
    },
  }
}
