// Writer locks shared by every process (and worker thread) using one fs store: a lock file per
// session, created with O_EXCL, holding its owner's pid, thread and token. A lock whose owner
// process is gone is taken over; the client removes those of a worker thread that exited.
import { randomBytes } from 'node:crypto'
import { type Stats, statSync } from 'node:fs'
import { link, mkdir, open, readFile, readdir, stat, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { threadId } from 'node:worker_threads'
import { lockFile, locksDir } from './layout'
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { locked, type WriterLocks } from '../../storage/locks'

interface Owner {
  pid: number
  thread: number
  token: string
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' // exists, but not ours to signal
  }
}

/** A lock file that cannot be made (a full disk, a read-only store) is a storage error naming the session. */
function lockError(err: unknown, id: SessionId): SessionfoldError {
  const code = (err as NodeJS.ErrnoException | null)?.code
  const details = { sessionId: id, cause: err }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new SessionfoldError('STORAGE_QUOTA_EXCEEDED', `the writer lock of ${where(id)} cannot be written: no space left (${code})`, details)
  }
  return new SessionfoldError('STORAGE_UNAVAILABLE', `the writer lock of ${where(id)} cannot be written: ${(err as Error)?.message ?? String(err)}`, details)
}

/** A want file's time is taken as up to this much late: some file systems keep whole seconds only. */
const MTIME_SLACK_MS = 1000

export function createFsLocks(dir: string): WriterLocks {
  const lockDir = locksDir(dir)
  const token = randomBytes(8).toString('hex')
  const me: Owner = { pid: process.pid, thread: threadId, token }
  const held = new Set<SessionId>()
  const ready = mkdir(lockDir, { recursive: true })
  ready.catch(() => {}) // reported by the first call that awaits it
  const path = (id: SessionId) => lockFile(dir, id)

  /** The owner, 'busy' for a lock file being written this very moment, undefined for none. */
  async function owner(id: SessionId): Promise<Owner | 'busy' | undefined> {
    try {
      return JSON.parse(await readFile(path(id), 'utf8')) as Owner
    } catch {
      // Absent, or empty/half-written: by a process that died creating it, or one creating it now.
      const st = await stat(path(id)).catch(() => undefined)
      return st && Date.now() - st.mtimeMs < 2000 ? 'busy' : undefined
    }
  }

  /** A lock is stale when its owner process is gone (threads of ours: see releaseThreadLocks). */
  const stale = (o: Owner | 'busy' | undefined) => o === undefined || (o !== 'busy' && !isAlive(o.pid))

  /**
   * The lock file now at the session's path: its owner, and a key naming this very file (its
   * owner's token, or for an unreadable one its inode and mtime); no key when there is none.
   */
  async function current(id: SessionId): Promise<{ owner: Owner | 'busy' | undefined; key?: string }> {
    const st = await stat(path(id)).catch(() => undefined)
    if (!st) return { owner: undefined }
    const o = await owner(id)
    const t = typeof o === 'object' ? (o as { token?: unknown } | null)?.token : undefined
    return { owner: o, key: typeof t === 'string' && /^[0-9a-f]{16}$/.test(t) ? `t${t}` : `i${st.ino}-${Math.floor(st.mtimeMs)}` }
  }

  /**
   * Removes a stale lock file, if it is still the one named by `key`. Processes that found the
   * same dead lock race for a marker file (O_EXCL) named after it, and only the one that made
   * the marker removes the lock: without it, a slow one could remove the lock that a faster
   * one had just taken over, and both would think they hold the session.
   */
  async function takeOver(id: SessionId, key: string): Promise<void> {
    const marker = `${path(id)}.takeover-${key}`
    try {
      await (await open(marker, 'wx')).close()
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw lockError(err, id)
      // Another process is taking over this very lock. One that died doing so (a take-over
      // lasts milliseconds) leaves its marker: old markers are removed.
      const st = await stat(marker).catch(() => undefined)
      if (st && Date.now() - st.mtimeMs > 10_000) await unlink(marker).catch(() => {})
      return
    }
    try {
      const now = await current(id)
      if (now.key === key && stale(now.owner)) await unlink(path(id)).catch(() => {})
    } finally {
      await unlink(marker).catch(() => {})
    }
  }

  /** Beside the lock: touched by every engine refused it, so that one holding it for a while knows to let go (`wanted`). */
  const wantFile = (id: SessionId) => `${path(id)}.want`

  /** SESSION_LOCKED, once the want file says so to the holder (a file that cannot be written only goes unsaid). */
  async function refused(id: SessionId): Promise<SessionfoldError> {
    await writeFile(wantFile(id), '').catch(() => {})
    return locked(id)
  }

  /** Writes `data` whole to a new file at `file` (EEXIST if there is one); on failure, leaves none. */
  async function writeNew(file: string, data: string, id: SessionId): Promise<void> {
    const fh = await open(file, 'wx')
    try {
      await fh.writeFile(data)
    } catch (err) {
      await fh.close().catch(() => {})
      await unlink(file).catch(() => {})
      throw lockError(err, id)
    }
    await fh.close()
  }

  /**
   * Creates the session's lock file, whole or not at all: written under a name of our own,
   * then hard-linked into place (which fails with EEXIST if there is a lock). A thread or
   * process that dies mid-way leaves no empty lock file, which would keep the session 'busy'
   * for everyone until it went stale; only a temp file that releaseThreadLocks (or nobody)
   * removes. Where hard links are not supported, the lock file is created with O_EXCL and written.
   */
  async function create(id: SessionId): Promise<void> {
    const tmp = `${path(id)}.${process.pid}-${threadId}-${token}.tmp`
    await writeNew(tmp, JSON.stringify(me), id)
    try {
      await link(tmp, path(id))
      return
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EXDEV') throw err
    } finally {
      await unlink(tmp).catch(() => {})
    }
    await writeNew(path(id), JSON.stringify(me), id)
  }

  return {
    async acquire(id) {
      await ready.catch((err: unknown) => {
        throw lockError(err, id)
      })
      if (held.has(id)) throw locked(id)
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await create(id)
          held.add(id)
          let released = false
          return async () => {
            if (released) return
            released = true
            held.delete(id)
            const o = await owner(id)
            if (typeof o === 'object' && o.token === token) await unlink(path(id)).catch(() => {})
            await unlink(wantFile(id)).catch(() => {}) // whoever wanted it can take it now
          }
        } catch (err) {
          if (err instanceof SessionfoldError) throw err
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw lockError(err, id)
          const now = await current(id)
          if (!stale(now.owner)) throw await refused(id)
          if (now.key !== undefined) await takeOver(id, now.key) // from a dead owner; then race for it again
        }
      }
      throw await refused(id)
    },
    async isHeld(id) {
      await ready
      if (held.has(id)) return true
      const o = await owner(id)
      return o !== undefined && !stale(o)
    },
    async wanted(id, since) {
      // Asked every IDLE_MS of a Durable Stream held idle (stream-writers.ts), and the file is
      // mostly not there: a synchronous stat that returns undefined for a missing file costs a
      // few microseconds, where the promise's ENOENT made an Error and a thread-pool round trip
      // (queued behind the store's fdatasyncs) each time.
      let st: Stats | undefined
      try {
        st = statSync(wantFile(id), { throwIfNoEntry: false })
      } catch {
        st = undefined
      }
      return st !== undefined && st.mtimeMs >= since - MTIME_SLACK_MS
    },
  }
}

/** Removes the lock files a worker thread of this process left when it exited. */
export async function releaseThreadLocks(dir: string, thread: number): Promise<void> {
  const lockDir = locksDir(dir)
  const names = await readdir(lockDir).catch(() => [] as string[])
  await Promise.all(
    names.map(async (name) => {
      try {
        // A lock it was about to link into place.
        if (name.endsWith('.tmp') && name.includes(`.${process.pid}-${thread}-`)) return await unlink(join(lockDir, name))
        const o = JSON.parse(await readFile(join(lockDir, name), 'utf8')) as Owner
        if (o.pid === process.pid && o.thread === thread) await unlink(join(lockDir, name))
      } catch {
        // gone or unreadable: nothing of ours
      }
    }),
  )
}
