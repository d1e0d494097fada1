// The store's folders and each session's folder. The store's are made at start (read-only:
// required to be there) and crash leftovers are cleaned from them in the background; a
// session's folder is created whole (made in tmp, synced, renamed into place) and deleted by
// renaming it to the trash, so no reader ever sees half of one.
import { SessionfoldError, where } from '../../core/errors'
import type { SessionHeader, SessionId } from '../../core/model'
import { storedHeaderSchema } from '../../core/schemas'
import type { EncodedEvent } from '../../core/validate'
import { alreadyExists } from '../../storage/guard'
import { compareIds } from '../../storage/types'
import { syncDir, writeDurable } from './durable'
import type { FeedFile } from './feed'
import { errno } from './errors'
import { HEADER_FILE, INDEX_FILE, LOG_FILE, idOfFolder, scratchName, sessionDir, sessionsDir, tmpDir, trashDir } from './layout'
import { INDEX_STRIDE, indexOfBatch } from './offset-index'
import type { FsSettings } from './options'
import { encodeBatch } from './record-format'
import { Buffer, join } from './host'

/** Temp entries older than this are leftovers of a crash (younger ones may be another process's). */
const STALE_TMP_MS = 10 * 60 * 1000

export interface Folders {
  /** The store's folders are there (made, unless read-only). Rejects when they cannot be. */
  ready: Promise<void>
  /** Crash leftovers being removed, in the background: no call waits for it, close does. */
  cleanup: Promise<void>
  /**
   * Makes the session's folder with its header and seed, whole. SESSION_EXISTS when taken.
   * `placed: 'unsynced'`: the rename into sessions/ is left for the caller to sync
   * (syncSessions), once for many creations.
   */
  create(header: SessionHeader, seed: readonly EncodedEvent[], placed?: 'unsynced'): Promise<void>
  /** Syncs sessions/ (the creations made with `placed: 'unsynced'` are then durable). */
  syncSessions(): Promise<void>
  /** Deletes the session's folder; quietly when there is none. */
  remove(id: SessionId): Promise<void>
  /** True when the session exists (and is not being removed). */
  has(id: SessionId): Promise<boolean>
  /** Ids of the store's sessions after `after`, in order. */
  idsAfter(after: SessionId | undefined): Promise<SessionId[]>
  /** Up to `limit` headers of sessions after `after`, in order, skipping damaged ones. */
  headersAfter(after: SessionId | undefined, limit: number): Promise<SessionHeader[]>
  /** Once the creations of `id` (of any session, without one) that the feed may name already are in place, or failed. */
  settled(id?: SessionId): Promise<void>
}

export function createFolders(
  { fs, root, readOnly }: Pick<FsSettings, 'fs' | 'root' | 'readOnly'>,
  isRemoving: (id: SessionId) => boolean,
  feed: Pick<FeedFile, 'record'>,
): Folders {
  const sessions = sessionsDir(root)
  const tmp = tmpDir(root)
  const trash = trashDir(root)
  /** Creations whose feed record may be written and whose folder is not in place yet. */
  const placing = new Map<Promise<void>, SessionId>()

  const ready = (async () => {
    if (readOnly) {
      await fs.stat(sessions) // a store that is not there: STORAGE_UNAVAILABLE, not an empty one
      return
    }
    for (const d of [sessions, tmp, trash]) await fs.mkdir(d, { recursive: true })
  })()
  ready.catch(() => {}) // reported by the first call that awaits it
  const cleanup = ready
    .then(async () => {
      if (readOnly) return
      const now = Date.now()
      for (const name of await fs.readdir(tmp)) {
        const p = join(tmp, name)
        const st = await fs.stat(p).catch(() => undefined)
        if (st && now - st.mtimeMs > STALE_TMP_MS) await fs.rm(p, { recursive: true, force: true })
      }
      for (const name of await fs.readdir(trash)) await fs.rm(join(trash, name), { recursive: true, force: true })
    })
    .catch(() => {})

  async function has(id: SessionId): Promise<boolean> {
    return (
      !isRemoving(id) &&
      (await fs.stat(join(sessionDir(root, id), HEADER_FILE)).then(
        () => true,
        (err) => {
          if (errno(err) === 'ENOENT') return false
          throw err
        },
      ))
    )
  }

  async function headerOf(id: SessionId): Promise<SessionHeader | undefined> {
    try {
      const h = storedHeaderSchema.parse(JSON.parse(await fs.readFile(join(sessionDir(root, id), HEADER_FILE), 'utf8'))) as SessionHeader
      return h.id === id ? h : undefined
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined
      throw new SessionfoldError('CORRUPT_LOG', `header of ${where(id)} is unreadable`, { sessionId: id, cause: err })
    }
  }

  async function idsAfter(after: SessionId | undefined): Promise<SessionId[]> {
    return (await fs.readdir(sessions))
      .map(idOfFolder)
      .filter((id): id is SessionId => id !== undefined && (after === undefined || id > after))
      .sort(compareIds)
  }

  /**
   * A new log's offset index (offset-index.ts): a hint checked on use, so written without a sync;
   * none for a seed of at most INDEX_STRIDE events, whose index is entry 0 alone (a log starts
   * at 0: the entry tells nothing, and a log's first load takes a missing file for it). A
   * failure to write it, or a file written in part, fails nothing: its entries are checked on use.
   */
  async function writeIndex(path: string, offsets: readonly number[]): Promise<void> {
    if (offsets.length > INDEX_STRIDE)
      await fs
        .open(path, 'w')
        .then((fh) => fh.writeFile(indexOfBatch(offsets)).finally(() => fh.close()))
        .catch(() => {})
  }

  /**
   * A file system that cannot rename a folder (the origin's private file system): the session's
   * folder is made where it stays, and its header, written beside it and renamed into place
   * (a file's rename), comes last, so that a reader finds the session whole or not at all (has()
   * looks for the header). The caller holds the session's writer lock (the engine's), so no
   * other creation of the id runs meanwhile; what a crash left of an earlier attempt or of a
   * delete (a folder without a header) is removed first.
   */
  async function createInPlace(header: SessionHeader, seed: readonly EncodedEvent[]): Promise<void> {
    const id = header.id
    const final = sessionDir(root, id)
    await fs.rm(final, { recursive: true, force: true })
    await fs.mkdir(final, { recursive: true })
    const batch = seed.length > 0 ? encodeBatch(seed) : undefined
    await writeDurable(fs, join(final, LOG_FILE), batch?.buf ?? Buffer.alloc(0))
    if (batch) await writeIndex(join(final, INDEX_FILE), batch.offsets)
    const made = join(final, scratchName(id, 'hdr'))
    await writeDurable(fs, made, JSON.stringify(header))
    let placed!: () => void
    const inPlace = new Promise<void>((resolve) => (placed = resolve))
    placing.set(inPlace, id)
    try {
      await feed.record([{ id, from: 0, to: seed.length }]) // before the header is in place, as above
      await fs.rename(made, join(final, HEADER_FILE))
    } finally {
      placing.delete(inPlace)
      placed()
    }
  }

  /** A delete where folders cannot be renamed: the header goes first (the session is gone), then the rest. */
  async function removeInPlace(id: SessionId): Promise<void> {
    const dir = sessionDir(root, id)
    try {
      await fs.unlink(join(dir, HEADER_FILE))
    } catch (err) {
      if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return
      throw err
    }
    await feed.record([{ id, from: 0, to: 0 }])
    await fs.rm(dir, { recursive: true, force: true })
  }

  return {
    ready,
    cleanup,
    has,
    idsAfter,
    async settled(id) {
      await Promise.all([...placing].filter(([, of]) => id === undefined || of === id).map(([p]) => p))
    },
    async headersAfter(after, limit) {
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
    },
    syncSessions: () => syncDir(fs, sessions),
    async create(header, seed, placed) {
      const id = header.id
      const final = sessionDir(root, id)
      if (await has(id)) throw alreadyExists(id)
      if (fs.renamesFolders === false) return createInPlace(header, seed)
      const made = join(tmp, scratchName(id))
      await fs.mkdir(made)
      try {
        await writeDurable(fs, join(made, HEADER_FILE), JSON.stringify(header))
        const batch = seed.length > 0 ? encodeBatch(seed) : undefined
        await writeDurable(fs, join(made, LOG_FILE), batch?.buf ?? Buffer.alloc(0))
        if (batch) await writeIndex(join(made, INDEX_FILE), batch.offsets)
        await syncDir(fs, made)
        // Before the folder is in place: a crash leaves a record of nothing, never a session
        // the feed does not name (or, after a machine crash, a feed started over: feed.ts).
        // Until it is, a reader of this process that sees the record waits (settled), rather than
        // take the session for one deleted since.
        let placed!: () => void
        const inPlace = new Promise<void>((resolve) => (placed = resolve))
        placing.set(inPlace, id)
        try {
          await feed.record([{ id, from: 0, to: seed.length }])
          try {
            await fs.rename(made, final)
          } catch (err) {
            const code = errno(err)
            if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'EPERM' || code === 'EISDIR') throw alreadyExists(id)
            throw err
          }
        } finally {
          placing.delete(inPlace)
          placed()
        }
      } catch (err) {
        await fs.rm(made, { recursive: true, force: true }).catch(() => {})
        throw err
      }
      if (placed !== 'unsynced') await syncDir(fs, sessions)
    },
    async remove(id) {
      if (fs.renamesFolders === false) return removeInPlace(id)
      const away = join(trash, scratchName(id))
      try {
        await fs.rename(sessionDir(root, id), away)
      } catch (err) {
        if (errno(err) === 'ENOENT') return
        throw err
      }
      await syncDir(fs, sessions)
      // After the folder is gone, so a reader of the feed that comes to this record finds it gone:
      // changesSince sends the session's tombstone from here (src/engine/tombstones.ts).
      await feed.record([{ id, from: 0, to: 0 }])
      await fs.rm(away, { recursive: true, force: true })
    },
  }
}
