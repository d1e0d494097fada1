// The logs this process knows, kept fresh: a log is loaded on first use (its index and the
// records after the index's last entry), read again only as far as another process appended,
// and dropped when idle beyond maxCachedLogs, so memory stays bounded however many sessions
// a long-lived process touches.
import { SessionfoldError, where } from '../../core/errors'
import type { SessionHeader, SessionId } from '../../core/model'
import { storedHeaderSchema } from '../../core/schemas'
import { corrupt, errno } from './errors'
import { HEADER_FILE, LOG_FILE, sessionDir } from './layout'
import { writing, type Log } from './log'
import { INDEX_STRIDE, recordIs, type OffsetIndex } from './offset-index'
import type { FsSettings } from './options'
import { openForReading } from './quick-reads'
import { scanLog } from './scan'
import { join } from './host'

export interface LogCache {
  /**
   * The session's log state, refreshed if another process changed the file; undefined when
   * there is no such session. `forWrite`: an append. While we hold the log's writer handle we
   * are its one writer (the engine's writer lock keeps other processes out, and re-reads
   * getSession when it takes the lock), so no stat is needed to trust what we know.
   */
  get(id: SessionId, forWrite?: boolean): Promise<Log | undefined>
  /**
   * Runs `removeFiles` with the session reading as absent: its writes in progress finish
   * first, and the log is forgotten.
   */
  remove(id: SessionId, removeFiles: () => Promise<void>): Promise<void>
  /** True while the session is being removed. */
  isRemoving(id: SessionId): boolean
  /** Forgets `log` (its file was replaced): its writer handle is closed, the next use loads it afresh. */
  forget(log: Log): void
  logs(): IterableIterator<Log>
  clear(): void
}

export function createLogCache(
  { fs, root, maxCachedLogs }: Pick<FsSettings, 'fs' | 'root' | 'maxCachedLogs'>,
  index: Pick<OffsetIndex, 'read' | 'rewrite'>,
  /** Told when a log is forgotten: its writer handle is closed. */
  onForget: (log: Log) => void,
): LogCache {
  const logs = new Map<SessionId, Log>()
  const loading = new Map<SessionId, Promise<Log | undefined>>()
  const removing = new Set<SessionId>()

  async function get(id: SessionId, forWrite = false): Promise<Log | undefined> {
    if (removing.has(id)) return undefined
    const cached = logs.get(id)
    if (cached) {
      // Most recently used last: trim drops from the front.
      logs.delete(id)
      logs.set(id, cached)
    }
    if (cached && (writing(cached) || (forWrite && cached.fh))) return cached
    let p = loading.get(id)
    if (!p) {
      p = refresh(id, cached).finally(() => loading.delete(id))
      loading.set(id, p)
    }
    return p
  }

  async function refresh(id: SessionId, cached: Log | undefined): Promise<Log | undefined> {
    const dir = sessionDir(root, id)
    const sizeBefore = cached?.fileSize
    let st
    try {
      st = await fs.stat(join(dir, LOG_FILE))
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err
      if (cached) forget(cached)
      return undefined
    }
    // Our own appends may have started, or even finished, while we waited: then our state is
    // the truth, and the size the stat saw is stale or our own write, not another process's.
    if (cached && (writing(cached) || cached.fileSize !== sizeBefore)) return cached
    if (cached && cached.ino === st.ino && st.size === cached.fileSize) return cached
    if (cached && cached.ino === st.ino && st.size > cached.fileSize && !cached.damage) {
      // Another process appended: read only what it added.
      await extend(cached, st.size)
      return cached
    }
    if (cached) forget(cached)
    const log = await load(id, dir, st.ino, st.size)
    if (log) {
      logs.set(id, log)
      trim()
    }
    return log
  }

  /** Drops the least recently used idle logs beyond maxCachedLogs (not one being written, indexed, or with a writer handle). */
  function trim(): void {
    if (logs.size <= maxCachedLogs) return
    for (const [id, log] of logs) {
      if (logs.size <= maxCachedLogs) break
      if (writing(log) || log.fh || log.indexing || loading.has(id)) continue
      logs.delete(id)
    }
  }

  async function load(id: SessionId, dir: string, ino: number, fileSize: number): Promise<Log | undefined> {
    let raw: string
    try {
      raw = await fs.readFile(join(dir, HEADER_FILE), 'utf8')
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined
      throw err
    }
    let header: SessionHeader
    try {
      header = storedHeaderSchema.parse(JSON.parse(raw)) as SessionHeader
    } catch {
      throw new SessionfoldError('CORRUPT_LOG', `header of ${where(id)} in ${join(dir, HEADER_FILE)} is unreadable`, { sessionId: id })
    }
    if (header.id !== id) {
      throw new SessionfoldError('CORRUPT_LOG', `header in ${join(dir, HEADER_FILE)} names session "${header.id}", not "${id}"`, { sessionId: id })
    }
    const stored = await index.read(dir)
    const log: Log = { id, dir, header, ino, size: 0, fileSize, length: 0, index: [], indexStored: 0, queue: [], queued: 0 }
    const file = await openForReading(fs, join(dir, LOG_FILE))
    try {
      const { read } = file
      // Trust the last index entry that points at the record it claims; scan from there.
      let k = stored.length - 1
      while (k > 0 && !(await recordIs(read, stored[k]!, k * INDEX_STRIDE, fileSize))) k--
      const start = k >= 1 ? stored[k]! : 0
      const scan = await scanLog(read, start, Math.max(k, 0) * INDEX_STRIDE, fileSize)
      log.index = [...stored.slice(0, Math.max(k, 0)), ...scan.indexed]
      log.size = scan.end
      log.length = log.queued = scan.length
      if (scan.damagedAt !== undefined) log.damage = corrupt(log, scan.damagedAt, 'a bad record followed by whole ones', scan.length)
      const same = stored.length >= log.index.length && log.index.every((o, i) => o === stored[i])
      // No index file and no entry past 0 (a small log made whole: folders.ts): nothing to store
      // yet; the entries that follow are written with it, from entry 0.
      if (!same && stored.length === 0 && log.index.length <= 1) log.indexStored = 0
      else log.indexStored = same ? log.index.length : await index.rewrite(log)
    } finally {
      await file.close()
    }
    return log
  }

  /** Reads records another process appended since we last looked. */
  async function extend(log: Log, fileSize: number): Promise<void> {
    const file = await openForReading(fs, join(log.dir, LOG_FILE))
    try {
      const scan = await scanLog(file.read, log.size, log.length, fileSize)
      if (writing(log)) return // we began appending meanwhile: what grew is ours
      log.index.push(...scan.indexed)
      log.size = scan.end
      log.length = log.queued = scan.length
      log.fileSize = fileSize
      if (scan.damagedAt !== undefined) log.damage = corrupt(log, scan.damagedAt, 'a bad record followed by whole ones', scan.length)
    } finally {
      await file.close()
    }
  }

  function forget(log: Log): void {
    if (logs.get(log.id) === log) logs.delete(log.id)
    onForget(log)
  }

  return {
    get,
    async remove(id, removeFiles) {
      const log = logs.get(id)
      removing.add(id)
      try {
        if (log?.flushing) await log.flushing
        if (log?.indexing) await log.indexing // no late write into a session made again under this id
        if (log) forget(log)
        await removeFiles()
      } finally {
        removing.delete(id)
      }
    },
    isRemoving: (id) => removing.has(id),
    forget,
    logs: () => logs.values(),
    clear: () => logs.clear(),
  }
}
