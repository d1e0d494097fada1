// The file adapter itself, on any file system with Node's names (options.ts): Node's files
// (index.ts, createFsAdapter) and a browser's Origin Private File System (src/backends/opfs).
// One folder per session (layout.ts), each log appended by group commit (group-commit.ts) and
// known to this process through the log cache (log-cache.ts). This file wires the parts
// together behind the guard.
import { SessionfoldError, isSessionfoldError, where } from '../../core/errors'
import { inTurns } from '../../core/in-turns'
import type { SessionId } from '../../core/model'
import { writing } from './log'
import { assertHeader, assertNewSessions, assertSeed, assertSessionId, createGuard, notFound, resolveList } from '../../storage/guard'
import { composeStorage } from '../../storage/records'
import type { KeyValueStore, LogStore, SessionInfo, StorageAdapter } from '../../storage/types'
import { storageError } from './errors'
import { createFeedFile } from './feed'
import { createFolders } from './folders'
import { createGroupCommit } from './group-commit'
import { createLogCache } from './log-cache'
import { createOffsetIndex } from './offset-index'
import { createRecordFiles } from './records'
import { settingsOf, type FsAdapterOptions, type FsPromises } from './options'
import { asEvent, asText, createEventReader, textsSkipping } from './read-events'
import { replaceInLog } from './replace-records'
import { createWriterHandles } from './writer-handles'

/** Operations (names given to run()) that change the store. */
const WRITES = new Set(['create', 'append', 'delete', 'replace', 'record write', 'record delete'])

/** Sessions createSessions makes at a time. */
const CREATE_AT_ONCE = 16

/** The file adapter on `options.fs` (see createFsAdapter, index.ts, for what it keeps and how). */
export function createFileAdapter(options: FsAdapterOptions & { fs: FsPromises }): StorageAdapter {
  const settings = settingsOf(options)
  const guard = createGuard('fs')
  const index = createOffsetIndex(settings)
  const handles = createWriterHandles(settings, index)
  const logs = createLogCache(settings, index, handles.drop)
  const feed = createFeedFile(settings)
  const folders = createFolders(settings, logs.isRemoving, feed)
  const records = createRecordFiles(settings, folders.has, folders.idsAfter)
  const commit = createGroupCommit(settings, handles, index, feed, guard.inFlight)
  const eventsOf = createEventReader(settings, index, guard)

  /** Runs a public operation through the guard, once the store's folders are there. */
  function run<T>(op: string, id: SessionId | undefined, fn: () => Promise<T>): Promise<T> {
    return guard.run(
      async () => {
        if (settings.readOnly && WRITES.has(op)) {
          throw new SessionfoldError(
            'STORAGE_UNAVAILABLE',
            `${op} of ${id === undefined ? 'the store' : where(id)} refused: the store at ${settings.root} is open read-only`,
            { sessionId: id },
          )
        }
        await folders.ready
        return fn()
      },
      (err) => storageError(err, id, op),
    )
  }

  /** An operation on session `id`, once its id is checked. */
  const onSession = <T>(op: string, id: SessionId, fn: () => Promise<T>): Promise<T> =>
    run(op, id, async () => {
      assertSessionId(id)
      return fn()
    })

  /** The session's log: SESSION_NOT_FOUND when there is none, its damage when it is damaged. */
  const logOf = async (id: SessionId, forWrite = false) => {
    const log = await logs.get(id, forWrite)
    if (!log) throw notFound(id)
    if (log.damage) throw log.damage
    return log
  }

  /**
   * createSessions: each made as createSession makes it (its folder's files synced, then renamed
   * into place), CREATE_AT_ONCE at a time so that their syncs overlap, without the writer lock,
   * checkpoint row and index entries an import made for each through createSession. Only where
   * folders are renamed into place: that rename is what refuses a taken id without a lock (a
   * file system that makes a folder in place, the origin's private one, relies on the writer lock).
   */
  const createSessions: LogStore['createSessions'] = (news) =>
    run('create', undefined, async () => {
      assertNewSessions(news)
      const made: boolean[] = []
      // A failure (named by its session) stops new creations; none is left running behind the call.
      // Their renames into sessions/ are synced once, at the end: also when one failed (those made
      // stay), and when none was made here (a session found in place may be one an earlier call
      // made and could not sync). The first failure is the one thrown.
      const failures: unknown[] = []
      await inTurns(news, CREATE_AT_ONCE, async ({ header, events }, at) => {
        try {
          await folders.create(header, events, 'unsynced')
          made[at] = true
        } catch (err) {
          if (!isSessionfoldError(err, 'SESSION_EXISTS')) throw storageError(err, header.id, 'create')
          made[at] = false
        }
      }).catch((err: unknown) => failures.push(err))
      await folders.syncSessions().catch((err: unknown) => failures.push(err))
      if (failures.length > 0) throw failures[0]
      return made
    })

  const log: LogStore = {
    kind: 'fs',

    createSession: (header, seed = []) =>
      run('create', undefined, async () => {
        assertHeader(header)
        assertSeed(header, seed)
        await folders.create(header, seed)
      }),

    ...(settings.fs.renamesFolders === false ? {} : { createSessions }),

    append: (id, batch) =>
      onSession('append', id, async () => {
        const log = await logOf(id, true)
        if (batch.length === 0) return
        return commit.append(log, batch)
      }),

    async *readEvents(id, range) {
      const log = await onSession('read', id, () => logOf(id))
      yield* eventsOf(log, range, asEvent)
    },

    async *readTexts(id, range, skip) {
      const log = await onSession('read', id, () => logOf(id))
      yield* eventsOf(log, range, skip ? textsSkipping(skip) : asText)
    },

    getSession: (id) =>
      onSession('read', id, async (): Promise<SessionInfo | undefined> => {
        await folders.settled(id) // named by the feed, its folder on its way (folders.ts)
        const log = await logs.get(id)
        if (!log) return undefined
        if (log.flushing) await log.lastDone
        if (log.damage) throw log.damage
        return { header: structuredClone(log.header), length: log.length }
      }),

    listSessions: (opts) =>
      run('list', undefined, async () => {
        const { after, limit } = resolveList(opts)
        return folders.headersAfter(after, limit)
      }),

    listIds: (opts) =>
      run('list', undefined, async () => {
        const { after, limit } = resolveList(opts)
        return (await folders.idsAfter(after)).slice(0, limit)
      }),

    deleteSession: (id) => onSession('delete', id, () => logs.remove(id, () => folders.remove(id))),
    feed: {
      id: () => run('feed read', undefined, () => feed.id()),
      head: () =>
        run('feed read', undefined, async () => {
          const at = await feed.head()
          await folders.settled() // sessions the feed names before `at` are in place for a walk after it
          return at
        }),
      read: (after, limit) => run('feed read', undefined, () => feed.read(after, limit)),
    },

    replaceRecords: (id, replacement) =>
      onSession('replace', id, async () => {
        const log = await logOf(id)
        await log.lastDone?.catch(() => {})
        if (writing(log))
          throw new SessionfoldError('SESSION_LOCKED', `replaceRecords of ${where(id)}: appends of this process are in flight (hold the writer lock)`, {
            sessionId: id,
          })
        try {
          await replaceInLog(settings, log, replacement)
        } finally {
          logs.forget(log) // its writer handle, inode and header are the old file's: loaded afresh
        }
      }),

    close: () =>
      guard.close(async () => {
        await folders.cleanup // its folders may still be in the making, its leftovers being removed
        await Promise.allSettled([...logs.logs()].map((l) => l.flushing))
        await Promise.allSettled([...logs.logs()].map(index.store))
        await handles.closeAll()
        await feed.close()
        logs.clear()
      }),
  }
  const kv: KeyValueStore = {
    get: (key) => run('record read', undefined, () => records.get(key)),
    put: (key, value, options) => run('record write', undefined, () => records.put(key, value, options)),
    delete: (key) => run('record delete', undefined, () => records.delete(key)),
    list: (prefix, range) => run('record read', undefined, () => records.list(prefix, range)),
    getMany: (keys) => run('record read', undefined, () => records.getMany!(keys)),
    writeMany: (writes, options) => run('record write', undefined, () => records.writeMany!(writes, options)),
  }
  return composeStorage(log, kv, { exists: (id) => run('read', id, () => folders.has(id)) })
}
