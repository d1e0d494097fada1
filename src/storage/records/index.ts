// The whole storage contract made of a backend's two parts: its log store and its key-value
// records. Checkpoint rows, history rows and meta records are written here once (rows.ts), for
// every backend and for the record codec, which wraps the two parts and composes them again.
import { SessionfoldError } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { assertKey, assertValue, flat, MAX_KEY_PARTS, resolveKeyRange } from '../kv'
import type { KeyValueStore, LogStore, NewSession, ReadRange, RecordKey, SkipTexts, StorageAdapter } from '../types'
import { isReserved } from './keys'
import { storeRows, type Exists } from './rows'

export { isReserved, rowKind, checkpointKey, historyKey, historyPrefix, metaKey, positionOf, positionPart } from './keys'

/** Where a composed storage keeps its key-value records whole (the store's rows among them). */
export const RECORDS: unique symbol = Symbol.for('sessionfold.records')

/** A storage made by {@link composeStorage}: its key-value records reachable whole. */
export interface ComposedStorage extends StorageAdapter {
  readonly [RECORDS]: KeyValueStore
}

export interface ComposeOptions {
  /** Whether a session is there (default: the log's getSession). */
  exists?: Exists
  /** A further check of a value the public `kv` is given (the codec's bound on sealed values). */
  checkValue?: (key: RecordKey, value: string) => void
}

/** The key-value records of a composed storage, whole (undefined for storage made otherwise). */
export function recordsOf(storage: StorageAdapter): KeyValueStore | undefined {
  return (storage as Partial<ComposedStorage>)[RECORDS]
}

const reserved = (key: RecordKey) =>
  new SessionfoldError('INVALID_ARGUMENT', `record key ${flat(key)} is the store's own (its checkpoint, history and meta rows)`)

/** The greatest key part there is ([A-Za-z0-9_-]{1,128}). */
const LAST_PART = 'z'.repeat(128)

/**
 * A cursor past every key of the store's own namespace that reserved `key` is in (`_index` or
 * `_meta` and all under it, or a session's rows of one kind): its parts that name it, then the
 * greatest parts there are. So a list passes over the session index (400,000 keys in a store of
 * 100,000 sessions) in one step rather than page by page.
 */
function pastReserved(key: RecordKey): RecordKey {
  const named = key[0] === 'session' ? key.slice(0, 3) : key.slice(0, 1)
  return [...named, ...Array.from({ length: MAX_KEY_PARTS - named.length }, () => LAST_PART)]
}

/**
 * The records as an app or the engine sees them: keys and values checked, the store's own rows
 * refused and left out of lists.
 */
export function publicRecords(kv: KeyValueStore, checkValue?: (key: RecordKey, value: string) => void): KeyValueStore {
  const mine = (key: unknown): RecordKey => {
    assertKey(key)
    if (isReserved(key)) throw reserved(key)
    return key
  }
  return {
    get: async (key) => kv.get(mine(key)),
    put: async (key, value, options) => {
      mine(key)
      assertValue(key, value)
      checkValue?.(key, value)
      return kv.put(key, value, options)
    },
    delete: async (key) => kv.delete(mine(key)),
    async list(prefix, range) {
      const { limit } = resolveKeyRange(prefix, range)
      const out: string[][] = []
      let after = range?.after
      for (;;) {
        const page = await kv.list(prefix, { limit, ...(after ? { after } : {}) })
        for (const key of page) if (!isReserved(key) && out.length < limit) out.push(key)
        if (page.length < limit || out.length >= limit) return out
        const last = page[page.length - 1]!
        after = isReserved(last) ? pastReserved(last) : last
      }
    },
  }
}

/** The whole storage contract over a log store and its key-value records. */
export function composeStorage(log: LogStore, kv: KeyValueStore, options: ComposeOptions = {}): ComposedStorage {
  const exists = options.exists ?? (async (id: SessionId) => (await log.getSession(id)) !== undefined)
  const rows = storeRows(kv, exists)
  return {
    kind: log.kind,
    createSession: (header, seed) => log.createSession(header, seed),
    append: (id, batch) => log.append(id, batch),
    readEvents: (id, range) => log.readEvents(id, range),
    ...(log.readTexts ? { readTexts: (id: SessionId, range?: ReadRange, skip?: SkipTexts) => log.readTexts!(id, range, skip) } : {}),
    getSession: (id) => log.getSession(id),
    ...(log.getSessions ? { getSessions: (ids: readonly SessionId[], maxEvents: number) => log.getSessions!(ids, maxEvents) } : {}),
    ...(log.createSessions ? { createSessions: (sessions: readonly NewSession[]) => log.createSessions!(sessions) } : {}),
    listSessions: (o) => log.listSessions(o),
    listIds: (o) => log.listIds(o),
    deleteSession: (id) => log.deleteSession(id),
    ...(log.feed ? { feed: log.feed } : {}),
    ...(log.replaceRecords ? { replaceRecords: (id: SessionId, r: Parameters<NonNullable<LogStore['replaceRecords']>>[1]) => log.replaceRecords!(id, r) } : {}),
    close: () => log.close(),
    getCheckpoint: rows.getCheckpoint,
    putCheckpoint: rows.putCheckpoint,
    deleteCheckpoint: rows.deleteCheckpoint,
    history: rows.history,
    getMeta: rows.getMeta,
    putMeta: rows.putMeta,
    kv: publicRecords(kv, options.checkValue),
    [RECORDS]: kv,
  }
}
