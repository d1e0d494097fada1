// IndexedDB storage for browsers and Electron renderers, on top of idb. Every write is one
// transaction that resolves on `complete`, so a resolved append is durable (per `durability`)
// and a failed one wrote nothing.
/**
 * Storage on IndexedDB (browsers, Electron renderers), behind the `StorageAdapter` interface.
 * An app normally picks it with `openStore({ storage: 'indexeddb' })`, the browsers' default.
 *
 * @module sessionfold/adapters/indexeddb
 */
import { SessionfoldError, where } from '../../core/errors'
import type { SessionEvent, SessionId } from '../../core/model'
import { utf8Length, type EncodedEvent } from '../../core/validate'
import {
  alreadyExists,
  assertContinues,
  assertHeader,
  assertNewSessions,
  assertSeed,
  assertSessionId,
  cancelled,
  assertGetSessions,
  createGuard,
  notFound,
  platformErrorCode,
  resolveList,
  resolveRange,
  toStorageError,
  feedAfter,
  checkReplacement,
  sameLength,
} from '../../storage/guard'
import { IdbConnection } from './connection'
import { createGroup, readGroup } from './groups'
import { isNamed, quiet, type Db, type StoreName, type Tx } from './schema'
import { createIdbRecords, deleteRecordsOf } from './records'
import { composeStorage } from '../../storage/records'
import { READ_PAGE, type LogStore, type ReadRange, type SessionInfo, type StorageAdapter } from '../../storage/types'

// The storage contract, for code that uses an adapter directly.
export * from '../../storage/public-types'

/** Options of {@link createIndexedDbAdapter}. */
export interface IndexedDbAdapterOptions {
  /** Database name (default 'sessionfold'). */
  name?: string
  /** 'strict' (default): a write resolves once flushed to disk. */
  durability?: 'strict' | 'relaxed'
  /**
   * Default: `globalThis.indexedDB`, looked up on first use. idb recognises IDB objects by the
   * global `IDBDatabase`, `IDBRequest`... constructors, so those must be the factory's.
   */
  indexedDB?: IDBFactory
}

/** Version 2 adds the change feed (`feed`, keys from a key generator: commit order) and `meta`; 3 the key-value records (`kv`). */
const VERSION = 3
/** The meta key of the feed's identity (not a valid user key: those follow the session id rule). */
const FEED_ID_KEY = '#feed'

/** An append waiting for the next group's transaction. */
interface PendingAppend {
  id: SessionId
  batch: readonly EncodedEvent[]
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * A storage adapter on IndexedDB (browsers, Electron renderers, or any `IDBFactory` such as
 * fake-indexeddb): one transaction per write, resolved on `complete`, so a resolved append is
 * durable (per `durability`) and a failed one wrote nothing. Appends that arrive together, to
 * any sessions, commit in one transaction. A full quota is `STORAGE_QUOTA_EXCEEDED`.
 */
export function createIndexedDbAdapter(options: IndexedDbAdapterOptions = {}): StorageAdapter {
  const name = options.name ?? 'sessionfold'
  const durability = options.durability ?? 'strict'
  const connection = new IdbConnection(name, VERSION, FEED_ID_KEY, options.indexedDB)
  const guard = createGuard('indexeddb')

  const toError = (err: unknown, op: string, id: SessionId | undefined): SessionfoldError =>
    toStorageError(err, id, (code) => {
      const subject = id === undefined ? `IndexedDB database "${name}"` : `${where(id)} in IndexedDB database "${name}"`
      const { name: errName, message } = (err ?? {}) as { name?: unknown; message?: unknown }
      const detail = typeof message === 'string' ? `${String(errName)}: ${message}` : String(err)
      if (code === 'STORAGE_QUOTA_EXCEEDED') return `${op} ${subject} exceeds the storage quota; nothing was written (${detail})`
      if (code === 'INVALID_ARGUMENT') return `${op} ${subject}: the value cannot be stored (${detail})`
      return `${op} ${subject} failed (${detail})`
    })

  // Runs one operation on the shared connection. A connection closed under us (Dexie#1139)
  // shows as InvalidStateError or a dropped promise: reopen and retry once. A failed
  // transaction was aborted and wrote nothing, so the retry is safe.
  const withDb = async <T>(op: string, id: SessionId | undefined, body: (db: Db) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      const p = connection.connect()
      try {
        return await body(await p)
      } catch (err) {
        if (err instanceof SessionfoldError) throw err
        const lost = platformErrorCode(err) !== 'STORAGE_QUOTA_EXCEEDED' && (!connection.isCurrent(p) || isNamed(err, 'InvalidStateError'))
        if (lost) connection.forget(p)
        if (!lost || attempt > 1) throw toError(err, op, id)
      }
    }
  }

  /** A call about session `id`: checked, tracked by the guard, then `body`. */
  const forSession = <T>(id: SessionId, body: () => Promise<T>): Promise<T> =>
    guard.run(async () => {
      assertSessionId(id)
      return body()
    })

  // One transaction. When the body throws, the transaction is aborted (nothing half-written);
  // success waits for `complete`, never just a request's success.
  const inTx = async <M extends IDBTransactionMode, T>(
    db: Db,
    stores: StoreName[],
    mode: M,
    body: (tx: Tx<M>) => Promise<T>,
    txDurability = durability,
  ): Promise<T> => {
    const tx = db.transaction(stores, mode, { durability: txDurability })
    const done = tx.done
    done.catch(() => {}) // awaited below; this only keeps an abort from going unhandled
    let result: T
    try {
      result = await body(tx)
    } catch (err) {
      try {
        tx.abort()
      } catch {
        // already finished or aborting
      }
      const cause = await done.then(
        () => undefined,
        (e: unknown) => e,
      )
      // The transaction aborted by itself (a quota reached, a failed disk): its pending
      // requests fail with a bare AbortError, and the abort's own error is what happened.
      throw isNamed(err, 'AbortError') && cause !== undefined && !isNamed(cause, 'AbortError') ? cause : err
    }
    await done
    return result
  }

  const putEvents = (tx: Tx<'readwrite'>, id: SessionId, batch: readonly EncodedEvent[]) =>
    batch.map((e) => quiet(tx.objectStore('events').put(e.event, [id, e.event.seq])))

  // Group commit: appends (to any session) that arrive while a transaction is committing wait,
  // and go together in the next one: one commit for all of them, as the fs adapter's group
  // shares one fdatasync. Each still succeeds or fails on its own (its session gone, a seq that
  // does not continue); a transaction that fails fails every append in it.
  let appends: PendingAppend[] = []
  let flushing: Promise<void> | undefined

  async function flushAppends(): Promise<void> {
    try {
      while (appends.length > 0) {
        const group = appends
        appends = []
        await writeGroup(group)
      }
    } finally {
      flushing = undefined
    }
  }

  async function writeGroup(group: PendingAppend[]): Promise<void> {
    const ids = [...new Set(group.map((p) => p.id))]
    /** Appends refused on their own (they are told at once); the others land or fail together. */
    const refused = new Set<PendingAppend>()
    try {
      await withDb('append to', ids.length === 1 ? ids[0] : undefined, (db) =>
        inTx(db, ['sessions', 'events', 'feed'], 'readwrite', async (tx) => {
          const landed: PendingAppend[] = []
          const sessions = tx.objectStore('sessions')
          const metas = new Map(await Promise.all(ids.map(async (id) => [id, await sessions.get(id)] as const)))
          const before = new Map([...metas].map(([id, m]) => [id, m?.length ?? 0]))
          const writes: Promise<unknown>[] = []
          for (const p of group) {
            const meta = metas.get(p.id)
            try {
              if (!meta) throw notFound(p.id)
              assertContinues(p.id, p.batch, meta.length)
            } catch (err) {
              refused.add(p)
              p.reject(err)
              continue
            }
            landed.push(p)
            writes.push(...putEvents(tx, p.id, p.batch))
            meta.length += p.batch.length
          }
          for (const id of new Set(landed.map((p) => p.id))) {
            const meta = metas.get(id)!
            writes.push(quiet(sessions.put(meta, id)))
            writes.push(quiet(tx.objectStore('feed').add({ id, from: before.get(id)!, to: meta.length })))
          }
          // No more requests: ask for the commit now. Left to auto-commit, the transaction commits
          // only once every put's result has come back to this thread and nothing new was asked
          // (one more round trip to the browser's IndexedDB per group). A failed put still aborts it.
          tx.commit()
          await Promise.all(writes)
        }),
      )
    } catch (err) {
      for (const p of group) if (!refused.has(p)) p.reject(ids.length === 1 || !(err instanceof SessionfoldError) ? err : inGroup(err, p.id))
      return
    }
    for (const p of group) if (!refused.has(p)) p.resolve()
  }

  /** A failed group's error, as each of its appends reports it: naming its own session. */
  const inGroup = (err: SessionfoldError, id: SessionId) =>
    new SessionfoldError(err.code, `append to ${where(id)} failed with the appends committed beside it: ${err.message}`, { sessionId: id, cause: err })

  const getInfo = (id: SessionId): Promise<SessionInfo | undefined> =>
    withDb('read', id, (db) =>
      inTx(db, ['sessions'], 'readonly', async (tx) => {
        const meta = await tx.objectStore('sessions').get(id)
        return meta && { header: meta.header, length: meta.length }
      }),
    )

  const log: LogStore = {
    kind: 'indexeddb',
    createSession: (header, seed = []) =>
      guard.run(async () => {
        assertHeader(header)
        assertSeed(header, seed)
        const id = header.id
        await withDb('create', id, (db) =>
          inTx(db, ['sessions', 'events', 'feed'], 'readwrite', async (tx) => {
            const sessions = tx.objectStore('sessions')
            if ((await sessions.getKey(id)) !== undefined) throw alreadyExists(id)
            const added = quiet(sessions.add({ header, length: seed.length }, id))
            const fed = quiet(tx.objectStore('feed').add({ id, from: 0, to: seed.length }))
            await Promise.all([added, fed, ...putEvents(tx, id, seed)])
          }),
        )
      }),
    // One strict transaction for all of them (one a session costs about 4 ms in Chromium).
    createSessions: (news) =>
      guard.run(async () => {
        assertNewSessions(news)
        return news.length === 0
          ? []
          : withDb('create', undefined, (db) => inTx(db, ['sessions', 'events', 'feed'], 'readwrite', (tx) => createGroup(tx, news)))
      }),
    append: (id, batch) =>
      forSession(
        id,
        () =>
          new Promise<void>((resolve, reject) => {
            appends.push({ id, batch, resolve, reject })
            if (flushing === undefined) flushing = flushAppends()
          }),
      ),
    async *readEvents(id, range?: ReadRange): AsyncGenerator<SessionEvent[]> {
      guard.check()
      assertSessionId(id)
      const info = await guard.run(() => getInfo(id))
      if (!info) throw notFound(id)
      const { from, to } = resolveRange(id, range, info.length)
      // getAll over bounded key ranges, one short transaction per page: no cursors (quadratic
      // in fake-indexeddb) and no transaction held open while the caller works on a page.
      for (let at = from; at < to; at += READ_PAGE) {
        if (range?.signal?.aborted) throw cancelled(id)
        const end = Math.min(to, at + READ_PAGE)
        const page = await guard.run(() =>
          withDb('read', id, (db) =>
            inTx(db, ['sessions', 'events'], 'readonly', async (tx) => {
              const meta = await tx.objectStore('sessions').get(id)
              // Deleted, or deleted and created again, since the read began.
              if (!meta || meta.header.createdAt !== info.header.createdAt || meta.length < end) throw notFound(id)
              return tx.objectStore('events').getAll(IDBKeyRange.bound([id, at], [id, end - 1]), READ_PAGE)
            }),
          ),
        )
        if (page.length !== end - at || page.some((e, i) => e.seq !== at + i)) {
          throw new SessionfoldError('CORRUPT_LOG', `${where(id, at)}: events ${at}..${end - 1} are missing or out of order in IndexedDB`, {
            sessionId: id,
            seq: at,
          })
        }
        yield page
      }
    },
    getSession: (id) => forSession(id, () => getInfo(id)),
    // One read-only transaction for all of them (one a session costs 0.6 ms in Chromium).
    getSessions: (ids, maxEvents) =>
      guard.run(async () => {
        assertGetSessions(ids, maxEvents)
        return withDb('read', undefined, (db) => inTx(db, ['sessions', 'events'], 'readonly', (tx) => readGroup(tx, ids, maxEvents)))
      }),
    listSessions: (options) =>
      guard.run(async () => {
        const { after, limit } = resolveList(options)
        // Keys are ids, and IndexedDB orders strings by code unit: the order of compareIds.
        const metas = await withDb('list', undefined, (db) =>
          inTx(db, ['sessions'], 'readonly', (tx) =>
            tx.objectStore('sessions').getAll(after === undefined ? null : IDBKeyRange.lowerBound(after, true), limit),
          ),
        )
        return metas.map((m) => m.header)
      }),
    listIds: (options) =>
      guard.run(async () => {
        const { after, limit } = resolveList(options)
        return withDb('list', undefined, (db) =>
          inTx(db, ['sessions'], 'readonly', (tx) =>
            tx.objectStore('sessions').getAllKeys(after === undefined ? null : IDBKeyRange.lowerBound(after, true), limit),
          ),
        ) as Promise<SessionId[]>
      }),
    deleteSession: (id) =>
      forSession(id, async () => {
        await withDb('delete', id, (db) =>
          inTx(db, ['sessions', 'events', 'checkpoints', 'kv', 'feed'], 'readwrite', async (tx) => {
            const there = (await quiet(tx.objectStore('sessions').getKey(id))) !== undefined
            await Promise.all([
              deleteRecordsOf(tx, id),
              quiet(tx.objectStore('sessions').delete(id)),
              quiet(tx.objectStore('events').delete(IDBKeyRange.bound([id, 0], [id, Infinity]))),
              // A delete in the change feed: changesSince sends the session's tombstone from here.
              there ? quiet(tx.objectStore('feed').add({ id, from: 0, to: 0 })) : undefined,
            ])
          }),
        )
      }),
    feed: {
      id: () =>
        guard.run(() =>
          withDb('read the feed of', undefined, (db) =>
            inTx(db, ['meta'], 'readonly', async (tx) => {
              const id = await tx.objectStore('meta').get(FEED_ID_KEY)
              if (id === undefined) throw new SessionfoldError('CORRUPT_LOG', `IndexedDB database "${name}" has a feed without its identity`)
              return id
            }),
          ),
        ),
      head: () =>
        guard.run(() =>
          withDb('read the feed of', undefined, (db) =>
            inTx(db, ['feed'], 'readonly', async (tx) => {
              const last = await tx.objectStore('feed').openKeyCursor(null, 'prev')
              return last ? String(last.key) : ''
            }),
          ),
        ),
      read: (after, limit) =>
        guard.run(async () => {
          const start = feedAfter(after, Number.MAX_SAFE_INTEGER)
          return withDb('read the feed of', undefined, (db) =>
            inTx(db, ['feed'], 'readonly', async (tx) => {
              const range = IDBKeyRange.lowerBound(start, true)
              const [keys, values] = await Promise.all([tx.objectStore('feed').getAllKeys(range, limit), tx.objectStore('feed').getAll(range, limit)])
              return values.map((v, i) => ({ at: String(keys[i]), id: v.id, from: v.from, to: v.to }))
            }),
          )
        }),
    },
    // In one transaction: every record and the header, or nothing.
    replaceRecords: (id, replacement) =>
      forSession(id, () =>
        withDb('replace records of', id, (db) =>
          inTx(db, ['sessions', 'events'], 'readwrite', async (tx) => {
            const [meta, events] = [await tx.objectStore('sessions').get(id), tx.objectStore('events')]
            if (!meta) throw notFound(id)
            const header = checkReplacement(id, replacement, meta)
            const stored = await Promise.all(replacement.records.map((r) => quiet(events.get([id, r.event.seq]))))
            replacement.records.forEach((r, i) => sameLength(id, r.event.seq, stored[i] && utf8Length(JSON.stringify(stored[i])), r.json))
            const writes: Promise<unknown>[] = replacement.records.map((r) => quiet(events.put(r.event, [id, r.event.seq])))
            if (header) writes.push(quiet(tx.objectStore('sessions').put({ header, length: meta.length }, id)))
            await Promise.all(writes)
          }),
        ),
      ),
    close: () =>
      guard.close(async () => {
        await connection.close()
      }),
  }
  const kv = createIdbRecords({ run: (op, id, body) => guard.run(() => withDb(op, id, body)), inTx, durability })
  return composeStorage(log, kv, {
    exists: (id) =>
      forSession(id, () =>
        withDb('read', id, (db) => inTx(db, ['sessions'], 'readonly', async (tx) => (await tx.objectStore('sessions').getKey(id)) !== undefined)),
      ),
  })
}
