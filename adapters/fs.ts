// The Node file-system adapter. One folder per session (see fs-paths.ts):
//   header.json      the header, written once inside a temp folder that is renamed into place
//   events.log       records of fs-log.ts, appended and fdatasync'ed before an append resolves
//   events.idx       sparse offset index (Float64 LE offset of seq 64k): a hint, checked on use
//   checkpoint.json  the checkpoint row, exactly its JSON shape (temp file + fsync + rename)
// Appends to a session queue behind its flush in progress and go out together in one write
// and one fdatasync (group commit); sessions flush in parallel. A log is opened by reading
// only the index and the records after its last entry, so opening costs O(tail), not O(log).
import { randomBytes } from 'node:crypto'
import { fdatasyncSync, writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { SessionfoldError, where } from '../src/errors'
import type { SessionEvent, SessionHeader, SessionId } from '../src/model'
import { sessionHeaderSchema } from '../src/schemas'
import type { EncodedEvent } from '../src/validate'
import { INDEX_STRIDE, encodeBatch, newWindow, readFrame, scanLog, type ReadAt } from './fs-log'
import { folderOf, idOfFolder } from './fs-paths'
import {
  alreadyExists, assertContinues, assertHeader, assertSeed, assertSessionId, cancelled, createGuard, notFound,
  resolveList, resolveRange, toStorageError,
} from './guard'
import {
  READ_PAGE, compareIds, type CheckpointRow, type ReadRange, type RepairReport, type SessionInfo, type StorageAdapter,
} from './types'

/**
 * The file operations the adapter uses: node:fs/promises, plus a synchronous positioned write
 * for log appends (a copy into the page cache, microseconds, which saves a thread-pool round
 * trip per batch) and a synchronous fdatasync for a lone flush (see writeGroup; while several
 * sessions flush, their fdatasyncs go to the thread pool so they run in parallel).
 */
export type FsPromises = Pick<typeof nodeFs, 'open' | 'mkdir' | 'readdir' | 'readFile' | 'rename' | 'rm' | 'stat' | 'unlink'> & {
  writeSync: typeof writeSync
  /** Optional: without it every fdatasync goes through the thread pool. */
  fdatasyncSync?: typeof fdatasyncSync
}

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
  /** The file system (default `node:fs/promises` and `writeSync`); tests inject faults such as ENOSPC here. */
  fs?: FsPromises
}

const HEADER = 'header.json'
const LOG = 'events.log'
const INDEX = 'events.idx'
const CHECKPOINT = 'checkpoint.json'
/** Temp entries older than this are leftovers of a crash (younger ones may be another process's). */
const STALE_TMP_MS = 10 * 60 * 1000
const READ_CHUNK = 256 * 1024
/** Index entries (of 64 events each) held back before writing them to events.idx. */
const INDEX_BATCH = 8

interface Pending {
  batch: readonly EncodedEvent[]
  resolve: () => void
  reject: (err: unknown) => void
}

/** What this process knows of one session's log. */
interface Log {
  id: SessionId
  dir: string
  header: SessionHeader
  ino: number
  /** End of the last whole batch. */
  size: number
  /** Bytes in the file as last seen: more than `size` means a torn tail to cut before writing. */
  fileSize: number
  length: number
  /** index[k]: offset of the record of seq k * INDEX_STRIDE. */
  index: number[]
  /** Index entries known to be in events.idx. */
  indexStored: number
  /** The write of index entries in progress (one at a time per log; appends never wait for it). */
  indexing?: Promise<void>
  /** Damage found while opening: every later use fails with it. */
  damage?: SessionfoldError
  fh?: FileHandle
  queue: Pending[]
  /** Length including queued batches: what the next append must continue. */
  queued: number
  flushing?: Promise<void>
  /** Settles with the last queued batch: getSession waits for it, so a length it returns is not about to be overtaken. */
  lastDone?: Promise<void>
}

/** Operations (names given to run()) that change the store. */
const WRITES = new Set(['create', 'append', 'delete', 'checkpoint write', 'checkpoint delete'])

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code

function storageError(err: unknown, id: SessionId | undefined, op: string): SessionfoldError {
  return toStorageError(err, id, (code) => {
    const subject = id === undefined ? 'the store' : where(id)
    return code === 'STORAGE_QUOTA_EXCEEDED'
      ? `${op} of ${subject} failed: no space left (${errno(err)})`
      : `${op} of ${subject} failed: ${(err as Error)?.message ?? String(err)}`
  })
}

function corrupt(log: { id: SessionId; dir: string }, offset: number, what: string, seq?: number): SessionfoldError {
  return new SessionfoldError(
    'CORRUPT_LOG',
    `log of ${where(log.id, seq)} is damaged at byte ${offset} of ${join(log.dir, LOG)}: ${what}`,
    { sessionId: log.id, seq },
  )
}

export function createFsAdapter(options: FsAdapterOptions = {}): StorageAdapter {
  const fs: FsPromises = options.fs ?? { ...nodeFs, writeSync, fdatasyncSync }
  const root = options.dir ?? '.sessionfold'
  const sessionsDir = join(root, 'sessions')
  const tmpDir = join(root, 'tmp')
  const trashDir = join(root, 'trash')
  const strict = (options.durability ?? 'strict') === 'strict'
  const maxOpen = options.maxOpenFiles ?? 256
  const maxCached = options.maxCachedLogs ?? 1024
  /** Logs with a flush in progress (see writeGroup: a lone one syncs on this thread). */
  let flushingLogs = 0

  const logs = new Map<SessionId, Log>()
  const loading = new Map<SessionId, Promise<Log | undefined>>()
  const deleting = new Set<SessionId>()
  /** Open writer handles, least recently used first. */
  const handles = new Map<Log, FileHandle>()
  const guard = createGuard('fs')

  const readOnly = options.readOnly === true
  const ready = (async () => {
    if (readOnly) {
      await fs.stat(sessionsDir) // a store that is not there: STORAGE_UNAVAILABLE, not an empty one
      return
    }
    for (const d of [sessionsDir, tmpDir, trashDir]) await fs.mkdir(d, { recursive: true })
  })()
  ready.catch(() => {}) // reported by the first call that awaits it
  // Leftovers of crashes (temp entries, deleted sessions not yet removed) go in the background:
  // no call waits for them, close() does.
  const cleanup = ready.then(async () => {
    if (readOnly) return
    const now = Date.now()
    for (const name of await fs.readdir(tmpDir)) {
      const p = join(tmpDir, name)
      const st = await fs.stat(p).catch(() => undefined)
      if (st && now - st.mtimeMs > STALE_TMP_MS) await fs.rm(p, { recursive: true, force: true })
    }
    for (const name of await fs.readdir(trashDir)) await fs.rm(join(trashDir, name), { recursive: true, force: true })
  }).catch(() => {})

  /** Runs a public operation through the guard, once the store's folders are there. */
  function run<T>(op: string, id: SessionId | undefined, fn: () => Promise<T>): Promise<T> {
    return guard.run(async () => {
      if (readOnly && WRITES.has(op)) {
        throw new SessionfoldError('STORAGE_UNAVAILABLE', `${op} of ${id === undefined ? 'the store' : where(id)} refused: the store at ${root} is open read-only`, { sessionId: id })
      }
      await ready
      return fn()
    }, (err) => storageError(err, id, op))
  }

  const dirOf = (id: SessionId) => join(sessionsDir, folderOf(id))
  const reader = (fh: FileHandle): ReadAt => async (buf, position) => (await fh.read(buf, 0, buf.length, position)).bytesRead

  async function writeDurable(path: string, data: string | Buffer): Promise<void> {
    const fh = await fs.open(path, 'w')
    try {
      await fh.writeFile(data)
      await fh.datasync()
    } finally {
      await fh.close()
    }
  }

  async function syncDir(path: string): Promise<void> {
    if (process.platform === 'win32') return // directories cannot be opened for fsync there
    const fh = await fs.open(path, 'r')
    try {
      await fh.sync()
    } finally {
      await fh.close()
    }
  }

  // ---- opening logs -------------------------------------------------------------------

  /** The session's log state, refreshed if another process changed the file. */
  const writing = (log: Log) => log.flushing !== undefined || log.queue.length > 0

  /**
   * `forWrite`: an append. While we hold the log's writer handle we are its one writer (the
   * engine's writer lock keeps other processes out, and re-reads getSession when it takes
   * the lock), so no stat is needed to trust what we know.
   */
  async function getLog(id: SessionId, forWrite = false): Promise<Log | undefined> {
    if (deleting.has(id)) return undefined
    const cached = logs.get(id)
    if (cached) {
      // Most recently used last: trimLogs drops from the front.
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
    const dir = dirOf(id)
    const sizeBefore = cached?.fileSize
    let st
    try {
      st = await fs.stat(join(dir, LOG))
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
    const log = await openLog(id, dir, st.ino, st.size)
    if (log) {
      logs.set(id, log)
      trimLogs()
    }
    return log
  }

  /** Drops the least recently used idle logs beyond maxCachedLogs (not one being written, indexed, or with a writer handle). */
  function trimLogs(): void {
    if (logs.size <= maxCached) return
    for (const [id, log] of logs) {
      if (logs.size <= maxCached) break
      if (writing(log) || log.fh || log.indexing || loading.has(id)) continue
      logs.delete(id)
    }
  }

  async function openLog(id: SessionId, dir: string, ino: number, fileSize: number): Promise<Log | undefined> {
    let raw: string
    try {
      raw = await fs.readFile(join(dir, HEADER), 'utf8')
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined
      throw err
    }
    let header: SessionHeader
    try {
      header = sessionHeaderSchema.parse(JSON.parse(raw)) as SessionHeader
    } catch {
      throw new SessionfoldError('CORRUPT_LOG', `header of ${where(id)} in ${join(dir, HEADER)} is unreadable`, { sessionId: id })
    }
    if (header.id !== id) {
      throw new SessionfoldError('CORRUPT_LOG', `header in ${join(dir, HEADER)} names session "${header.id}", not "${id}"`, { sessionId: id })
    }
    const stored = await readIndex(dir)
    const log: Log = { id, dir, header, ino, size: 0, fileSize, length: 0, index: [], indexStored: 0, queue: [], queued: 0 }
    const fh = await fs.open(join(dir, LOG), 'r')
    try {
      // Trust the last index entry that points at the record it claims; scan from there.
      let k = stored.length - 1
      while (k > 0 && !(await recordIs(fh, stored[k]!, k * INDEX_STRIDE, fileSize))) k--
      const start = k >= 1 ? stored[k]! : 0
      const scan = await scanLog(reader(fh), start, Math.max(k, 0) * INDEX_STRIDE, fileSize)
      log.index = [...stored.slice(0, Math.max(k, 0)), ...scan.indexed]
      log.size = scan.end
      log.length = log.queued = scan.length
      if (scan.damagedAt !== undefined) log.damage = corrupt(log, scan.damagedAt, 'a bad record followed by whole ones', scan.length)
      const same = stored.length >= log.index.length && log.index.every((o, i) => o === stored[i])
      log.indexStored = same ? log.index.length : await rewriteIndex(log)
    } finally {
      await fh.close()
    }
    return log
  }

  /** Reads records another process appended since we last looked. */
  async function extend(log: Log, fileSize: number): Promise<void> {
    const fh = await fs.open(join(log.dir, LOG), 'r')
    try {
      const scan = await scanLog(reader(fh), log.size, log.length, fileSize)
      if (writing(log)) return // we began appending meanwhile: what grew is ours
      log.index.push(...scan.indexed)
      log.size = scan.end
      log.length = log.queued = scan.length
      log.fileSize = fileSize
      if (scan.damagedAt !== undefined) log.damage = corrupt(log, scan.damagedAt, 'a bad record followed by whole ones', scan.length)
    } finally {
      await fh.close()
    }
  }

  async function readIndex(dir: string): Promise<number[]> {
    let buf: Buffer
    try {
      buf = await fs.readFile(join(dir, INDEX))
    } catch (err) {
      if (errno(err) === 'ENOENT') return []
      throw err
    }
    const out: number[] = []
    for (let at = 0; at + 8 <= buf.length; at += 8) out.push(buf.readDoubleLE(at))
    return out
  }

  /** True when a whole record of event `seq` starts at `offset`. */
  async function recordIs(fh: FileHandle, offset: number, seq: number, fileSize: number): Promise<boolean> {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset >= fileSize) return false
    const w = newWindow(4096)
    const frame = await readFrame(reader(fh), w, offset, fileSize)
    if (frame.kind !== 'ok') return false
    try {
      return (JSON.parse(w.buf.toString('utf8', frame.start, frame.end)) as SessionEvent).seq === seq
    } catch {
      return false
    }
  }

  async function rewriteIndex(log: Log): Promise<number> {
    if (readOnly) return 0
    await log.indexing // an append's background write of entries goes first, then this replaces the file
    const buf = Buffer.allocUnsafe(log.index.length * 8)
    log.index.forEach((o, i) => buf.writeDoubleLE(o, i * 8))
    const tmp = join(tmpDir, `${folderOf(log.id)}.idx.${randomBytes(6).toString('hex')}`)
    try {
      await fs.open(tmp, 'w').then(async (fh) => {
        try {
          await fh.writeFile(buf)
        } finally {
          await fh.close()
        }
      })
      await fs.rename(tmp, join(log.dir, INDEX))
      return log.index.length
    } catch {
      await fs.rm(tmp, { force: true }).catch(() => {})
      return 0 // only a hint: the next open scans a little more
    }
  }

  function forget(log: Log): void {
    if (logs.get(log.id) === log) logs.delete(log.id)
    const fh = log.fh
    handles.delete(log)
    log.fh = undefined
    if (fh) void fh.close().catch(() => {})
  }

  // ---- appending ----------------------------------------------------------------------

  async function writer(log: Log): Promise<FileHandle> {
    if (log.fh) {
      handles.delete(log)
      handles.set(log, log.fh)
      return log.fh
    }
    const fh = await fs.open(join(log.dir, LOG), 'r+')
    log.fh = fh
    handles.set(log, fh)
    for (const [other, h] of handles) {
      if (handles.size <= maxOpen) break
      if (other === log || other.flushing) continue
      handles.delete(other)
      other.fh = undefined
      await storeIndex(other)
      if (!strict) await h.datasync().catch(() => {})
      await h.close().catch(() => {})
    }
    return fh
  }

  async function flushLoop(log: Log): Promise<void> {
    flushingLogs++
    try {
      for (let first = true; log.queue.length > 0; first = false) {
        // After a flush, one turn of the event loop: callers it woke queue their next appends
        // now and join this group, instead of each waiting for an fdatasync of their own.
        if (!first) await new Promise<void>((resolve) => setImmediate(resolve))
        const group = log.queue.splice(0)
        try {
          await writeGroup(log, group.length === 1 ? group[0]!.batch : group.flatMap((p) => p.batch))
          for (const p of group) p.resolve()
        } catch (err) {
          // Batches queued behind this group were numbered after it: none of them can land.
          const rest = log.queue.splice(0)
          log.queued = log.length
          const e = storageError(err, log.id, 'append')
          for (const p of [...group, ...rest]) p.reject(e)
        }
      }
    } finally {
      flushingLogs--
      log.flushing = undefined
    }
  }

  async function writeGroup(log: Log, events: readonly EncodedEvent[]): Promise<void> {
    const fh = await writer(log)
    if (log.fileSize > log.size) {
      // A torn tail (a crash mid-write): cut it before anything is written after it.
      await fh.truncate(log.size)
      await fh.datasync()
      const report: RepairReport = { sessionId: log.id, file: join(log.dir, LOG), offset: log.size, bytes: log.fileSize - log.size }
      log.fileSize = log.size
      options.onRepair?.(report)
    }
    const { buf, offsets } = encodeBatch(events)
    try {
      let done = 0
      while (done < buf.length) done += fs.writeSync(fh.fd, buf, done, buf.length - done, log.size + done)
      if (strict) {
        // A lone flush syncs on this thread, as better-sqlite3 does: cheaper than the thread
        // pool's round trip. While other sessions flush too, the sync goes to the pool so that
        // they sync in parallel.
        if (flushingLogs === 1 && fs.fdatasyncSync) fs.fdatasyncSync(fh.fd)
        else await fh.datasync()
      }
    } catch (err) {
      // Nothing of the group counts. If the cut fails too, the next write cuts first.
      log.fileSize = log.size + buf.length
      await fh.truncate(log.size).then(() => { log.fileSize = log.size }, () => {})
      throw err
    }
    for (let i = 0; i < events.length; i++) {
      if ((log.length + i) % INDEX_STRIDE === 0) log.index.push(log.size + offsets[i]!)
    }
    log.size += buf.length
    log.fileSize = log.size
    log.length += events.length
    // The index is a hint (never synced, checked on use): the append does not wait for its
    // write, which costs three thread-pool round trips (open, write, close) every 512 events.
    if (log.index.length - log.indexStored >= INDEX_BATCH && !log.indexing) void storeIndex(log)
  }

  /**
   * Appends unstored index entries to events.idx. Done every INDEX_BATCH entries, in the
   * background, and when a log is put away, not per append; a failure only means a longer scan
   * at the next open. Writes of one log run one after another, never at once.
   */
  function storeIndex(log: Log): Promise<void> {
    if (readOnly) return Promise.resolve()
    const p = (log.indexing ?? Promise.resolve()).then(() => writeIndexEntries(log))
    log.indexing = p
    void p.then(() => {
      if (log.indexing === p) log.indexing = undefined
    })
    return p
  }

  async function writeIndexEntries(log: Log): Promise<void> {
    const from = log.indexStored
    const to = log.index.length
    if (to <= from) return
    const buf = Buffer.allocUnsafe((to - from) * 8)
    for (let i = from; i < to; i++) buf.writeDoubleLE(log.index[i]!, (i - from) * 8)
    try {
      const fh = await fs.open(join(log.dir, INDEX), 'a')
      try {
        await fh.write(buf, 0, buf.length, null)
      } finally {
        await fh.close()
      }
      log.indexStored = to
    } catch {
      // left as a hint for the next open to recompute
    }
  }

  // ---- reading ------------------------------------------------------------------------

  async function* readRange(log: Log, fh: FileHandle, from: number, to: number, signal?: AbortSignal): AsyncGenerator<SessionEvent[]> {
    let rebuilt = false
    for (;;) {
      const block = Math.floor(from / INDEX_STRIDE)
      const start = log.index[block]
      if (start !== undefined && (await recordIs(fh, start, block * INDEX_STRIDE, log.size))) {
        yield* readFrom(log, fh, start, block * INDEX_STRIDE, from, to, signal)
        return
      }
      if (rebuilt) throw corrupt(log, start ?? 0, `the record of seq ${block * INDEX_STRIDE} cannot be found`, block * INDEX_STRIDE)
      // The index is wrong (damaged or stale): rebuild it from a full scan, once.
      const scan = await scanLog(reader(fh), 0, 0, log.size)
      if (scan.end < log.size) throw corrupt(log, scan.damagedAt ?? scan.end, 'a record with a bad checksum', scan.length)
      log.index = scan.indexed
      log.indexStored = await rewriteIndex(log)
      rebuilt = true
    }
  }

  async function* readFrom(log: Log, fh: FileHandle, at: number, seq: number, from: number, to: number, signal?: AbortSignal): AsyncGenerator<SessionEvent[]> {
    const w = newWindow(READ_CHUNK)
    const read = reader(fh)
    let page: SessionEvent[] = []
    while (seq < to) {
      const frame = await readFrame(read, w, at, log.size)
      if (frame.kind !== 'ok') throw corrupt(log, at, 'a record with a bad checksum or length', seq)
      if (seq >= from) {
        let event: SessionEvent
        try {
          event = JSON.parse(w.buf.toString('utf8', frame.start, frame.end)) as SessionEvent
        } catch {
          throw corrupt(log, at, 'a record that is not JSON', seq)
        }
        if (event?.seq !== seq) throw corrupt(log, at, `a record of seq ${String(event?.seq)} where ${seq} belongs`, seq)
        page.push(event)
        if (page.length === READ_PAGE) {
          if (signal?.aborted) throw cancelled(log.id)
          guard.check()
          yield page
          page = []
        }
      }
      at = w.pos + frame.end
      seq++
    }
    if (page.length > 0) {
      if (signal?.aborted) throw cancelled(log.id)
      yield page
    }
  }

  async function headerOf(id: SessionId): Promise<SessionHeader | undefined> {
    try {
      const h = sessionHeaderSchema.parse(JSON.parse(await fs.readFile(join(dirOf(id), HEADER), 'utf8'))) as SessionHeader
      return h.id === id ? h : undefined
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined
      throw new SessionfoldError('CORRUPT_LOG', `header of ${where(id)} is unreadable`, { sessionId: id, cause: err })
    }
  }

  async function idsAfter(after: SessionId | undefined): Promise<SessionId[]> {
    return (await fs.readdir(sessionsDir))
      .map(idOfFolder)
      .filter((id): id is SessionId => id !== undefined && (after === undefined || id > after))
      .sort(compareIds)
  }

  async function sessionExists(id: SessionId): Promise<boolean> {
    return !deleting.has(id) && (await fs.stat(join(dirOf(id), HEADER)).then(() => true, (err) => {
      if (errno(err) === 'ENOENT') return false
      throw err
    }))
  }

  return {
    kind: 'fs',

    createSession(header, seed = []) {
      return run('create', undefined, async () => {
        assertHeader(header)
        assertSeed(header, seed)
        const id = header.id
        const final = dirOf(id)
        if (await sessionExists(id)) throw alreadyExists(id)
        const tmp = join(tmpDir, `${folderOf(id)}.${randomBytes(6).toString('hex')}`)
        await fs.mkdir(tmp)
        try {
          await writeDurable(join(tmp, HEADER), JSON.stringify(header))
          const batch = seed.length > 0 ? encodeBatch(seed) : undefined
          await writeDurable(join(tmp, LOG), batch?.buf ?? Buffer.alloc(0))
          if (batch) {
            const idx = Buffer.allocUnsafe(Math.ceil(seed.length / INDEX_STRIDE) * 8)
            for (let k = 0; k * INDEX_STRIDE < seed.length; k++) idx.writeDoubleLE(batch.offsets[k * INDEX_STRIDE]!, k * 8)
            await writeDurable(join(tmp, INDEX), idx)
          }
          await syncDir(tmp)
          try {
            await fs.rename(tmp, final)
          } catch (err) {
            const code = errno(err)
            if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'EPERM' || code === 'EISDIR') throw alreadyExists(id)
            throw err
          }
        } catch (err) {
          await fs.rm(tmp, { recursive: true, force: true }).catch(() => {})
          throw err
        }
        await syncDir(sessionsDir)
      })
    },

    append(id, batch) {
      return run('append', id, async () => {
        assertSessionId(id)
        const log = await getLog(id, true)
        if (!log) throw notFound(id)
        if (log.damage) throw log.damage
        if (batch.length === 0) return
        assertContinues(id, batch, log.queued)
        log.queued += batch.length
        const done = new Promise<void>((resolve, reject) => log.queue.push({ batch, resolve, reject }))
        log.flushing ??= flushLoop(log)
        log.lastDone = done.catch(() => {})
        return done
      })
    },

    async *readEvents(id, range?: ReadRange) {
      const log = await run('read', id, async () => {
        assertSessionId(id)
        const l = await getLog(id)
        if (!l) throw notFound(id)
        if (l.damage) throw l.damage
        return l
      })
      const { from, to } = resolveRange(id, range, log.length)
      if (from >= to) return
      if (range?.signal?.aborted) throw cancelled(id)
      let fh: FileHandle
      try {
        fh = await fs.open(join(log.dir, LOG), 'r')
      } catch (err) {
        throw errno(err) === 'ENOENT' ? notFound(id) : storageError(err, id, 'read')
      }
      try {
        for await (const page of readRange(log, fh, from, to, range?.signal)) yield page
      } catch (err) {
        throw storageError(err, id, 'read')
      } finally {
        await fh.close()
      }
    },

    getSession(id) {
      return run('read', id, async (): Promise<SessionInfo | undefined> => {
        assertSessionId(id)
        const log = await getLog(id)
        if (!log) return undefined
        if (log.flushing) await log.lastDone
        if (log.damage) throw log.damage
        return { header: structuredClone(log.header), length: log.length }
      })
    },

    listSessions(opts) {
      return run('list', undefined, async () => {
        const { after, limit } = resolveList(opts)
        const ids = await idsAfter(after)
        const out: SessionHeader[] = []
        // Read a few more than asked, in case some vanish (deleted meanwhile). A session whose
        // header is damaged is left out of the listing (verify reports it; opening it throws).
        const step = Math.min(limit, 32)
        for (let i = 0; i < ids.length && out.length < limit; i += step) {
          const headers = await Promise.all(ids.slice(i, i + step).map((id) => headerOf(id).catch(() => undefined)))
          for (const h of headers) if (h && out.length < limit) out.push(h)
        }
        return out
      })
    },

    listIds(opts) {
      return run('list', undefined, async () => {
        const { after, limit } = resolveList(opts)
        return (await idsAfter(after)).slice(0, limit)
      })
    },

    deleteSession(id) {
      return run('delete', id, async () => {
        assertSessionId(id)
        const log = logs.get(id)
        deleting.add(id)
        try {
          if (log?.flushing) await log.flushing
          if (log?.indexing) await log.indexing // no late write into a session made again under this id
          if (log) forget(log)
          const trash = join(trashDir, `${folderOf(id)}.${randomBytes(6).toString('hex')}`)
          try {
            await fs.rename(dirOf(id), trash)
          } catch (err) {
            if (errno(err) === 'ENOENT') return
            throw err
          }
          await syncDir(sessionsDir)
          await fs.rm(trash, { recursive: true, force: true })
        } finally {
          deleting.delete(id)
        }
      })
    },

    getCheckpoint(id) {
      return run('checkpoint read', id, async () => {
        assertSessionId(id)
        let raw: string
        try {
          raw = await fs.readFile(join(dirOf(id), CHECKPOINT), 'utf8')
        } catch (err) {
          if (errno(err) !== 'ENOENT') throw err
          if (!(await sessionExists(id))) throw notFound(id)
          return undefined
        }
        try {
          return JSON.parse(raw) as unknown
        } catch {
          throw new SessionfoldError('CORRUPT_LOG', `checkpoint of ${where(id)} is not JSON`, { sessionId: id })
        }
      })
    },

    putCheckpoint(id, row: CheckpointRow) {
      return run('checkpoint write', id, async () => {
        assertSessionId(id)
        if (!(await sessionExists(id))) throw notFound(id)
        const tmp = join(tmpDir, `${folderOf(id)}.ckpt.${randomBytes(6).toString('hex')}`)
        try {
          await writeDurable(tmp, JSON.stringify(row))
          await fs.rename(tmp, join(dirOf(id), CHECKPOINT))
        } catch (err) {
          await fs.rm(tmp, { force: true }).catch(() => {})
          throw errno(err) === 'ENOENT' ? notFound(id) : err
        }
      })
    },

    deleteCheckpoint(id) {
      return run('checkpoint delete', id, async () => {
        assertSessionId(id)
        try {
          await fs.unlink(join(dirOf(id), CHECKPOINT))
        } catch (err) {
          if (errno(err) !== 'ENOENT') throw err
          if (!(await sessionExists(id))) throw notFound(id)
        }
      })
    },

    close: () => guard.close(async () => {
      await cleanup // its folders may still be in the making, its leftovers being removed
      await Promise.allSettled([...logs.values()].map((l) => l.flushing))
      await Promise.allSettled([...logs.values()].map(storeIndex))
      for (const [log, fh] of handles) {
        if (!strict) await fh.datasync().catch(() => {})
        await fh.close().catch(() => {})
        log.fh = undefined
      }
      handles.clear()
      logs.clear()
    }),
  }
}
