// The reference adapter: the storage contract in its plainest form, and the test double.
/**
 * Storage in memory, behind the {@link StorageAdapter} interface that every sessionfold storage
 * implements. The adapters are the layer under the engine: an app normally picks one with
 * `openStore({ storage })` and never calls them.
 *
 * @module sessionfold/adapters/memory
 */
import type { SessionEvent, SessionHeader, SessionId } from '../../core/model'
import { utf8Length, type EncodedEvent } from '../../core/validate'
import {
  alreadyExists,
  assertContinues,
  assertGetSessions,
  assertHeader,
  assertNewSessions,
  assertSeed,
  assertSessionId,
  cancelled,
  createGuard,
  notFound,
  resolveList,
  resolveRange,
} from '../../storage/guard'
import { checkReplacement, feedAfter, newFeedId, sameLength } from '../../storage/guard'
import { assertKey, flat, notFoundForKey, rangeStart, resolveKeyRange, sessionOfKey, sessionPrefix, takeFrom } from '../../storage/kv'
import { composeStorage } from '../../storage/records'
import {
  READ_PAGE,
  compareIds,
  type FeedEntry,
  type KeyValueStore,
  type LogStore,
  type ReadRange,
  type SessionInfo,
  type SessionRead,
  type StorageAdapter,
} from '../../storage/types'
import { createSortedKeys } from './sorted-keys'

// The storage contract, for code that uses an adapter directly.
export * from '../../storage/public-types'

interface Stored {
  header: SessionHeader
  /** Encoded events: every read parses afresh, so callers never share or mutate stored data. */
  events: string[]
}

/**
 * A storage adapter that keeps everything in this process's memory (gone when it ends): the
 * reference implementation of {@link StorageAdapter}, and a test double. Events are stored
 * as JSON and parsed afresh on each read, so callers never share stored objects.
 */
export function createMemoryAdapter(): StorageAdapter {
  const sessions = new Map<SessionId, Stored>()
  const guard = createGuard('memory')
  /** The change feed: entry i is at position String(i + 1). */
  const feed: Omit<FeedEntry, 'at'>[] = []
  const feedId = newFeedId()
  /** Key-value records by flat key (kv.ts): the store's rows (checkpoints, history, meta) among them. */
  const records = new Map<string, string>()
  /** The same keys in order: a list reads its page and one key more, whatever the store holds. */
  const order = createSortedKeys()

  const get = (id: SessionId): Stored => {
    assertSessionId(id)
    const s = sessions.get(id)
    if (!s) throw notFound(id)
    return s
  }
  const idsAfter = (after: SessionId | undefined, limit: number): SessionId[] =>
    [...sessions.keys()]
      .filter((id) => after === undefined || id > after)
      .sort(compareIds)
      .slice(0, limit)

  const log: LogStore = {
    kind: 'memory',
    createSession: (header, seed = []) =>
      guard.run(async () => {
        assertHeader(header)
        assertSeed(header, seed)
        if (sessions.has(header.id)) throw alreadyExists(header.id)
        sessions.set(header.id, { header: structuredClone(header), events: seed.map((e) => e.json) })
        feed.push({ id: header.id, from: 0, to: seed.length })
      }),
    createSessions: (news) =>
      guard.run(async () => {
        assertNewSessions(news)
        return news.map(({ header, events }) => {
          if (sessions.has(header.id)) return false
          sessions.set(header.id, { header: structuredClone(header), events: events.map((e) => e.json) })
          feed.push({ id: header.id, from: 0, to: events.length })
          return true
        })
      }),
    append: (id, batch: readonly EncodedEvent[]) =>
      guard.run(async () => {
        const s = get(id)
        assertContinues(id, batch, s.events.length)
        if (batch.length === 0) return
        feed.push({ id, from: s.events.length, to: s.events.length + batch.length })
        for (const e of batch) s.events.push(e.json)
      }),
    async *readEvents(id, range?: ReadRange): AsyncGenerator<SessionEvent[]> {
      guard.check()
      const s = get(id)
      const { from, to } = resolveRange(id, range, s.events.length)
      for (let at = from; at < to; at += READ_PAGE) {
        if (range?.signal?.aborted) throw cancelled(id)
        if (sessions.get(id) !== s) throw notFound(id)
        yield s.events.slice(at, Math.min(to, at + READ_PAGE)).map((j) => JSON.parse(j) as SessionEvent)
      }
    },
    getSession: (id) =>
      guard.run(async (): Promise<SessionInfo | undefined> => {
        assertSessionId(id)
        const s = sessions.get(id)
        return s && { header: structuredClone(s.header), length: s.events.length }
      }),
    getSessions: (ids, maxEvents) =>
      guard.run(async (): Promise<(SessionRead | undefined)[]> => {
        assertGetSessions(ids, maxEvents)
        return ids.map((id) => {
          const s = sessions.get(id)
          if (!s) return undefined
          const read: SessionRead = { header: structuredClone(s.header), length: s.events.length }
          if (s.events.length <= maxEvents) read.events = s.events.map((j) => JSON.parse(j) as SessionEvent)
          return read
        })
      }),
    listSessions: (options) =>
      guard.run(async () => {
        const { after, limit } = resolveList(options)
        return idsAfter(after, limit).map((id) => structuredClone(sessions.get(id)!.header))
      }),
    listIds: (options) =>
      guard.run(async () => {
        const { after, limit } = resolveList(options)
        return idsAfter(after, limit)
      }),
    deleteSession: (id) =>
      guard.run(async () => {
        assertSessionId(id)
        if (sessions.delete(id)) feed.push({ id, from: 0, to: 0 }) // a delete: changesSince sends its tombstone
        const own = sessionPrefix(id)
        const gone: string[] = []
        for (const k of order.from(own)) {
          if (!k.startsWith(own)) break
          gone.push(k)
        }
        for (const k of gone) {
          records.delete(k)
          order.remove(k)
        }
      }),
    feed: {
      id: () => guard.run(async () => feedId),
      head: () => guard.run(async () => (feed.length === 0 ? '' : String(feed.length))),
      read: (after, limit) =>
        guard.run(async () => {
          const start = feedAfter(after, feed.length)
          return feed.slice(start, start + limit).map((e, i) => ({ ...e, at: String(start + i + 1) }))
        }),
    },
    replaceRecords: (id, replacement) =>
      guard.run(async () => {
        const s = get(id)
        const header = checkReplacement(id, replacement, { header: s.header, length: s.events.length })
        for (const r of replacement.records) sameLength(id, r.event.seq, utf8Length(s.events[r.event.seq]!), r.json)
        for (const r of replacement.records) s.events[r.event.seq] = r.json
        if (header) s.header = structuredClone(header)
      }),
    close: () => guard.close(),
  }
  const kv: KeyValueStore = {
    get: (key) =>
      guard.run(async () => {
        assertKey(key)
        return records.get(flat(key))
      }),
    put: (key, value) =>
      guard.run(async () => {
        assertKey(key)
        const owner = sessionOfKey(key)
        if (owner !== undefined && !sessions.has(owner)) throw notFoundForKey(owner, key)
        const k = flat(key)
        if (!records.has(k)) order.add(k)
        records.set(k, value)
      }),
    delete: (key) =>
      guard.run(async () => {
        assertKey(key)
        const k = flat(key)
        if (records.delete(k)) order.remove(k)
      }),
    list: (prefix, range) =>
      guard.run(async () => {
        const r = resolveKeyRange(prefix, range)
        return takeFrom(order.from(rangeStart(r)), r)
      }),
  }
  return composeStorage(log, kv, { exists: async (id) => sessions.has(id) })
}
