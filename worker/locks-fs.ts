// Writer locks shared by every process (and worker thread) using one fs store: a lock file per
// session, created with O_EXCL, holding its owner's pid, thread and token. A lock whose owner
// process is gone is taken over; the client removes those of a worker thread that exited.
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, readdir, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { threadId } from 'node:worker_threads'
import { folderOf } from '../adapters/fs-paths'
import { SessionfoldError, where } from '../src/errors'
import type { SessionId } from '../src/model'
import { locked, type WriterLocks } from './locks'

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

export function createFsLocks(dir: string): WriterLocks {
  const lockDir = join(dir, 'locks')
  const token = randomBytes(8).toString('hex')
  const me: Owner = { pid: process.pid, thread: threadId, token }
  const held = new Set<SessionId>()
  const ready = mkdir(lockDir, { recursive: true })
  ready.catch(() => {}) // reported by the first call that awaits it
  const path = (id: SessionId) => join(lockDir, `${folderOf(id)}.lock`)

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

  return {
    async acquire(id) {
      await ready.catch((err: unknown) => {
        throw lockError(err, id)
      })
      if (held.has(id)) throw locked(id)
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          const fh = await open(path(id), 'wx')
          try {
            await fh.writeFile(JSON.stringify(me))
          } catch (err) {
            // Ours, but not whole (a full disk): an empty or half lock would keep the session
            // 'busy' for everyone until it went stale. Take it back.
            await fh.close().catch(() => {})
            await unlink(path(id)).catch(() => {})
            throw lockError(err, id)
          }
          await fh.close()
          held.add(id)
          let released = false
          return async () => {
            if (released) return
            released = true
            held.delete(id)
            const o = await owner(id)
            if (typeof o === 'object' && o.token === token) await unlink(path(id)).catch(() => {})
          }
        } catch (err) {
          if (err instanceof SessionfoldError) throw err
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw lockError(err, id)
          const o = await owner(id)
          if (!stale(o)) throw locked(id)
          await unlink(path(id)).catch(() => {}) // take over from a dead owner, then race for it again
        }
      }
      throw locked(id)
    },
    async isHeld(id) {
      await ready
      if (held.has(id)) return true
      const o = await owner(id)
      return o !== undefined && !stale(o)
    },
  }
}

/** Removes the lock files a worker thread of this process left when it exited. */
export async function releaseThreadLocks(dir: string, thread: number): Promise<void> {
  const lockDir = join(dir, 'locks')
  const names = await readdir(lockDir).catch(() => [] as string[])
  await Promise.all(names.map(async (name) => {
    try {
      const o = JSON.parse(await readFile(join(lockDir, name), 'utf8')) as Owner
      if (o.pid === process.pid && o.thread === thread) await unlink(join(lockDir, name))
    } catch {
      // gone or unreadable: nothing of ours
    }
  }))
}
