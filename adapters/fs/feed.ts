// The change feed on files: `feed.log` in the store's root, appended (O_APPEND) by every process
// writing the store, one record per creation or group of appends to a session, written before
// the log's own bytes and synced with them. A record is `\n<id> <from> <to>.\n`: the leading
// newline fences off a fragment a crash left, the final dot tells a whole record from a cut
// one. A position is a byte offset just after a record. Also the store's meta records
// (`meta/<key>`, replaced whole by rename).
import { join } from 'node:path'
import type { FileHandle } from 'node:fs/promises'
import type { SessionId } from '../../src/model'
import { SessionfoldError } from '../../src/errors'
import { assertMeta, newFeedId } from '../guard'
import type { ChangeFeed, FeedEntry } from '../types'
import { syncDir, writeDurable } from './durable'
import { errno } from './errors'
import { FEED_FILE, FEED_ID_FILE, metaDir, tmpDir } from './layout'
import type { FsSettings } from './options'

const RECORD = /^([A-Za-z0-9_-]{1,128}) (\d{1,15}) (\d{1,15})\.$/
/** Bytes read per step while reading the feed. */
const CHUNK = 256 * 1024

export interface FeedFile extends ChangeFeed {
  /** Writes records for these writes (not yet synced): call before writing their events. */
  record(writes: readonly { id: SessionId; from: number; to: number }[]): Promise<void>
  /** Resolves once every record written before the call is synced (syncs are shared). */
  sync(): Promise<void>
  /** The same, on this thread (a lone flush's path). */
  syncNow(): void
  getMeta(key: string): Promise<string | undefined>
  putMeta(key: string, value: string): Promise<void>
  close(): Promise<void>
}

export function createFeedFile({ fs, root, readOnly }: Pick<FsSettings, 'fs' | 'root' | 'readOnly'>): FeedFile {
  const path = join(root, FEED_FILE)
  let handle: Promise<FileHandle> | undefined
  /** The handle once open (record() awaits it, so a synced flush after record() finds it). */
  let opened: FileHandle | undefined
  let dirty = false
  let syncing: Promise<void> | undefined
  let again: Promise<void> | undefined
  let id: Promise<string> | undefined

  const open = () => (handle ??= fs.open(path, 'a').then((fh) => (opened = fh)))

  async function syncOnce(): Promise<void> {
    dirty = false
    await (await open()).datasync()
  }

  function sync(): Promise<void> {
    if (!handle) return Promise.resolve()
    if (!dirty) return syncing ?? Promise.resolve() // the sync under way started after the last record
    // One sync at a time; whoever arrives during one shares the next, which covers them all.
    if (!syncing) {
      syncing = syncOnce().finally(() => { syncing = undefined })
      return syncing
    }
    again ??= syncing.catch(() => {}).then(() => {
      again = undefined
      return sync()
    })
    return again
  }

  async function readId(): Promise<string> {
    const file = join(root, FEED_ID_FILE)
    try {
      return (await fs.readFile(file, 'utf8')).trim()
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err
    }
    // A store opened read-only writes nothing: a feed never written to has no identity yet
    // (a cursor made now names none, and starts over once the feed has one).
    if (readOnly) return 'none'
    // Made whole in tmp, then moved in by rename: every process reads the same identity, and
    // rename keeps the first one made should two processes race (the later one reads it back).
    const made = join(tmpDir(root), `feed-id-${newFeedId()}`)
    await writeDurable(fs, made, newFeedId())
    try {
      const existing = await fs.readFile(file, 'utf8').catch(() => undefined)
      if (existing === undefined) await fs.rename(made, file)
    } finally {
      await fs.rm(made, { force: true })
    }
    await syncDir(fs, root)
    return (await fs.readFile(file, 'utf8')).trim()
  }

  async function size(): Promise<number> {
    try {
      return (await fs.stat(path)).size
    } catch (err) {
      if (errno(err) === 'ENOENT') return 0
      throw err
    }
  }

  async function readFrom(start: number, limit: number, stopAt = Infinity): Promise<{ entries: FeedEntry[]; end: number }> {
    const entries: FeedEntry[] = []
    let fh: FileHandle
    try {
      fh = await fs.open(path, 'r')
    } catch (err) {
      if (errno(err) === 'ENOENT') return { entries, end: 0 }
      throw err
    }
    let end = start
    try {
      let at = start
      let carry = ''
      while (entries.length < limit && at < stopAt) {
        const buf = Buffer.alloc(CHUNK)
        const { bytesRead } = await fh.read(buf, 0, CHUNK, at)
        if (bytesRead === 0) break
        const text = carry + buf.toString('latin1', 0, bytesRead)
        const base = at - carry.length
        at += bytesRead
        let lineStart = 0
        for (let nl = text.indexOf('\n'); nl >= 0 && entries.length < limit; nl = text.indexOf('\n', lineStart)) {
          const piece = text.slice(lineStart, nl)
          lineStart = nl + 1
          end = base + lineStart
          const m = RECORD.exec(piece)
          if (m) entries.push({ at: String(end), id: m[1]!, from: Number(m[2]), to: Number(m[3]) })
        }
        carry = text.slice(lineStart)
        if (entries.length >= limit) break
      }
    } finally {
      await fh.close()
    }
    return { entries, end }
  }

  return {
    id: () => (id ??= readId().catch((err: unknown) => {
      id = undefined
      throw err
    })),
    async head() {
      // After the last whole line: a record being written now is not counted in yet.
      const total = await size()
      if (total === 0) return ''
      const from = Math.max(0, total - 4096)
      const fh = await fs.open(path, 'r')
      try {
        const buf = Buffer.alloc(total - from)
        const { bytesRead } = await fh.read(buf, 0, buf.length, from)
        const nl = buf.subarray(0, bytesRead).lastIndexOf(10)
        return nl < 0 ? (from === 0 ? '' : String(from)) : String(from + nl + 1)
      } finally {
        await fh.close()
      }
    },
    async read(after, limit) {
      const start = after === '' ? 0 : Number(after)
      if (!Number.isSafeInteger(start) || start < 0 || String(start) !== (after || '0')) {
        throw new SessionfoldError('INVALID_ARGUMENT', `feed position ${JSON.stringify(after)} is not one of this store's`)
      }
      return (await readFrom(start, limit)).entries
    },
    async record(writes) {
      if (writes.length === 0) return
      const text = writes.map((w) => `\n${w.id} ${w.from} ${w.to}.\n`).join('')
      const fh = await open()
      const buf = Buffer.from(text, 'latin1')
      // One write: O_APPEND places it whole after whatever another process appended.
      let done = 0
      while (done < buf.length) done += fs.writeSync(fh.fd, buf, done, buf.length - done)
      dirty = true
    },
    sync,
    syncNow() {
      if (!dirty || !opened) return
      if (!fs.fdatasyncSync) throw new Error('syncNow needs fdatasyncSync')
      dirty = false
      fs.fdatasyncSync(opened.fd)
    },
    async getMeta(key) {
      assertMeta(key)
      try {
        return await fs.readFile(join(metaDir(root), key), 'utf8')
      } catch (err) {
        if (errno(err) === 'ENOENT') return undefined
        throw err
      }
    },
    async putMeta(key, value) {
      assertMeta(key, value)
      const dir = metaDir(root)
      await fs.mkdir(dir).catch((err: unknown) => {
        if (errno(err) !== 'EEXIST') throw err
      })
      const made = join(tmpDir(root), `meta-${key}-${newFeedId()}`)
      await writeDurable(fs, made, value)
      await fs.rename(made, join(dir, key))
      await syncDir(fs, dir)
    },
    async close() {
      const h = handle
      handle = undefined
      opened = undefined
      if (!h) return
      const fh = await h.catch(() => undefined)
      if (dirty) await fh?.datasync().catch(() => {})
      await fh?.close().catch(() => {})
    },
  }
}
