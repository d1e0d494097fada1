// The change feed on files: `feed.log` in the store's root, appended (O_APPEND) by every process
// writing the store, one record per creation or group of appends to a session, written before
// the log's own bytes. A record is `\n<id> <from> <to>.\n`: the leading newline fences off a
// fragment a crash left, the final dot tells a whole record from a cut one. A position is a
// byte offset just after a record. Also the store's meta records (`meta/<key>`, replaced whole
// by rename).
//
// Records are not synced on their own (a second fdatasync beside the log's cost a lone batch of
// appends over half its time). A process that dies leaves them in the page cache, where every
// other process reads them; only a crash of the machine can lose the last ones, and then
// positions handed out before it may name records that are gone. So `feed.boot` holds the boot
// the feed was last written in (boot.ts), synced before the first record of a boot: a process
// that finds an earlier boot there first gives the feed a new identity, and every cursor made
// before the crash starts over with a walk (which sends each session from where the other side
// is), before anything of this boot is written or read.
import type { FileHandle } from 'node:fs/promises'
import type { SessionId } from '../../core/model'
import { SessionfoldError } from '../../core/errors'
import { newFeedId } from '../../storage/guard'
import type { ChangeFeed, FeedEntry } from '../../storage/types'
import { replaceDurable, syncDir, writeDurable } from './durable'
import { errno } from './errors'
import { bootIdentity, sameBoot } from './boot'
import { FEED_BOOT_FILE, FEED_FILE, FEED_ID_FILE, tmpDir } from './layout'
import type { FsSettings } from './options'
import { Buffer, join, sha256Hex } from './host'

const RECORD = /^([A-Za-z0-9_-]{1,128}) (\d{1,15}) (\d{1,15})\.$/
/** Bytes read per step while reading the feed. */
const CHUNK = 256 * 1024

export interface FeedFile extends ChangeFeed {
  /** Writes records for these writes (to the page cache, see above): call before writing their events. */
  record(writes: readonly { id: SessionId; from: number; to: number }[]): Promise<void>
  close(): Promise<void>
}

export function createFeedFile({ fs, root, readOnly }: Pick<FsSettings, 'fs' | 'root' | 'readOnly'>): FeedFile {
  const path = join(root, FEED_FILE)
  let handle: Promise<FileHandle> | undefined
  let dirty = false
  let id: Promise<string> | undefined
  /** This boot checked against `feed.boot` (and the feed made new if a machine crash came between). */
  let boot: Promise<void> | undefined
  /** Read-only, after a machine crash no writer has settled yet: this process's own identity. */
  let unsettled: string | undefined

  const open = () => (handle ??= fs.open(path, 'a'))
  const settle = () =>
    (boot ??= settleBoot().catch((err: unknown) => {
      boot = undefined
      throw err
    }))

  async function settleBoot(): Promise<void> {
    const now = await bootIdentity(fs)
    const marked = await readOptional(join(root, FEED_BOOT_FILE))
    if (marked !== undefined && sameBoot(marked.trim(), now)) return
    if (marked !== undefined) {
      // Written in another boot, and the machine went down since: records it had not synced
      // may be gone, so positions made before may name the wrong ones.
      if (readOnly) {
        unsettled = `unsettled-${newFeedId()}`
        return
      }
      // The new identity follows from the two boots, so processes of this boot that race here
      // all name the same one (a random one each would leave them handing out different ones).
      await replace(FEED_ID_FILE, (await sha256Hex(`${marked.trim()}>${now}`)).slice(0, 32))
    }
    // No mark: a new feed, or one whose records were each synced (an older sessionfold).
    if (!readOnly) await replace(FEED_BOOT_FILE, now)
  }

  /** Replaces file `name` in the root whole (made in tmp, moved in by rename, synced). */
  async function replace(name: string, text: string): Promise<void> {
    await replaceDurable(fs, join(tmpDir(root), `${name}-${newFeedId()}`), join(root, name), text)
  }

  async function readOptional(file: string): Promise<string | undefined> {
    try {
      return await fs.readFile(file, 'utf8')
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined
      throw err
    }
  }

  async function readId(): Promise<string> {
    await settle()
    if (unsettled) return unsettled
    const file = join(root, FEED_ID_FILE)
    const existing = await readOptional(file)
    if (existing !== undefined) return existing.trim()
    // A store opened read-only writes nothing: a feed never written to has no identity yet
    // (a cursor made now names none, and starts over once the feed has one).
    if (readOnly) return 'none'
    // Made whole in tmp, then linked in: a link is never made over an existing file, so should
    // two processes race, the first one made stays and the other reads it back (a rename would
    // replace it, and the two could go on naming different identities).
    const made = join(tmpDir(root), `feed-id-${newFeedId()}`)
    await writeDurable(fs, made, newFeedId())
    try {
      const linked = fs.link
        ? await fs.link(made, file).then(
            () => true,
            (err: unknown) => {
              if (errno(err) === 'EEXIST') return true
              // A file system without hard links (FAT, some network mounts): rename, as before.
              if (['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(errno(err) ?? '')) return false
              throw err
            },
          )
        : false
      if (!linked && (await readOptional(file)) === undefined) await fs.rename(made, file)
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
    id: () =>
      (id ??= readId().catch((err: unknown) => {
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
      await settle()
      const text = writes.map((w) => `\n${w.id} ${w.from} ${w.to}.\n`).join('')
      const fh = await open()
      const buf = Buffer.from(text, 'latin1')
      // One write: O_APPEND places it whole after whatever another process appended.
      let done = 0
      while (done < buf.length) done += fs.writeSync(fh.fd, buf, done, buf.length - done)
      dirty = true
    },
    async close() {
      const h = handle
      handle = undefined
      if (!h) return
      const fh = await h.catch(() => undefined)
      if (dirty) await fh?.datasync().catch(() => {})
      await fh?.close().catch(() => {})
    },
  }
}
