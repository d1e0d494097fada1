// Key-value records in IndexedDB (the public kv and the store's rows over it): the `kv` object
// store, keyed by a key's flat form (kv.ts), which IndexedDB orders by code unit as the parts
// sort. The store's rows (src/storage/records) stay where databases of 0.1 keep them: a
// session's checkpoint row (its JSON, as the object) in `checkpoints` under its id, its history
// rows there under [id, position], meta records in `meta` under their key. A session's records
// are deleted in the transaction that deletes the session (deleteRecordsOf, used by index.ts).
import { SessionfoldError } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { assertKey, assertWrites, flat, notFoundForKey, resolveKeyRange, sessionOfKey, sessionPrefix, takeRange, unflat } from '../../storage/kv'
import { CHECKPOINT_PART, HISTORY_PART, META_PART, positionOf, positionPart } from '../../storage/records/keys'
import { quiet, type Db, type StoreName, type Tx } from './schema'
import type { KeyValueStore, RecordKey } from '../../storage/types'

/** What the records need of the adapter: its call wrapper, its transactions and its durability. */
export interface RecordDb {
  run<T>(op: string, id: SessionId | undefined, body: (db: Db) => Promise<T>): Promise<T>
  inTx<M extends IDBTransactionMode, T>(db: Db, stores: StoreName[], mode: M, body: (tx: Tx<M>) => Promise<T>, durability?: 'strict' | 'relaxed'): Promise<T>
  durability: 'strict' | 'relaxed'
}

/** The flat keys of session `id`'s records. */
const rangeOf = (id: SessionId) => IDBKeyRange.bound(sessionPrefix(id), `${sessionPrefix(id)}\uffff`)
const META_NAME = /^[A-Za-z0-9_-]{1,128}$/

/** Deletes session `id`'s records in `tx` (which has the kv and checkpoints stores). */
export const deleteRecordsOf = (tx: Tx<'readwrite'>, id: SessionId): Promise<unknown> =>
  Promise.all([
    quiet(tx.objectStore('kv').delete(rangeOf(id))),
    quiet(tx.objectStore('checkpoints').delete(id)),
    quiet(tx.objectStore('checkpoints').delete(IDBKeyRange.bound([id, 0], [id, Infinity]))),
  ])

/** Where a key is stored: its object store and its key there. */
type Place = { store: 'kv'; key: string } | { store: 'checkpoints'; key: SessionId | [SessionId, number] } | { store: 'meta'; key: string }

function placeOf(key: RecordKey): Place {
  const owner = sessionOfKey(key)
  if (owner === undefined) return key.length === 2 && key[0] === META_PART ? { store: 'meta', key: key[1]! } : { store: 'kv', key: flat(key) }
  if (key.length === 3 && key[2] === CHECKPOINT_PART) return { store: 'checkpoints', key: owner }
  const at = key.length === 4 && key[2] === HISTORY_PART ? positionOf(key[3]) : undefined
  return at === undefined ? { store: 'kv', key: flat(key) } : { store: 'checkpoints', key: [owner, at] }
}

/** The flat key of a `checkpoints` store's key. */
const rowFlat = (k: IDBValidKey): string =>
  typeof k === 'string'
    ? flat(['session', k, CHECKPOINT_PART])
    : flat(['session', (k as [string, number])[0], HISTORY_PART, positionPart((k as [string, number])[1])])

/** The stores `places` are in. */
const storesOf = (places: readonly Place[]): StoreName[] => [...new Set(places.map((p) => p.store))]

/** A row's value as the `checkpoints` store keeps it (its JSON parsed); INVALID_ARGUMENT when it is not JSON. */
function rowOf(key: RecordKey, value: string): unknown {
  try {
    return JSON.parse(value)
  } catch {
    throw new SessionfoldError('INVALID_ARGUMENT', `record ${flat(key)} holds a row, and its value is not JSON`)
  }
}

export function createIdbRecords({ run, inTx, durability }: RecordDb): KeyValueStore {
  return {
    get: (key) =>
      run('read record of', undefined, async (db) => {
        assertKey(key)
        const p = placeOf(key)
        return inTx(db, [p.store], 'readonly', async (tx) => {
          if (p.store !== 'checkpoints') return tx.objectStore(p.store).get(p.key)
          const row = await tx.objectStore('checkpoints').get(p.key)
          return row === undefined ? undefined : JSON.stringify(row)
        })
      }),
    put: (key, value, options) =>
      run('write record of', undefined, async (db) => {
        assertKey(key)
        const owner = sessionOfKey(key)
        const p = placeOf(key)
        const row = p.store === 'checkpoints' ? rowOf(key, value) : undefined
        // A relaxed commit unless the put is 'durable' (rows and records are caches; a relaxed
        // transaction is still whole), checked against the session in the same transaction.
        await inTx(
          db,
          ['sessions', p.store],
          'readwrite',
          async (tx) => {
            if (owner !== undefined && (await tx.objectStore('sessions').getKey(owner)) === undefined) throw notFoundForKey(owner, key)
            if (p.store === 'checkpoints') await quiet(tx.objectStore('checkpoints').put(row as never, p.key))
            else await quiet(tx.objectStore(p.store).put(value, p.key))
          },
          options?.durability === 'durable' ? durability : 'relaxed',
        )
      }),
    getMany: (keys) =>
      run('read record of', undefined, async (db) => {
        for (const key of keys) assertKey(key)
        const places = keys.map(placeOf)
        return inTx(db, storesOf(places), 'readonly', (tx) =>
          Promise.all(
            places.map(async (p) => {
              const v = await tx.objectStore(p.store).get(p.key)
              return p.store === 'checkpoints' && v !== undefined ? JSON.stringify(v) : (v as string | undefined)
            }),
          ),
        )
      }),
    // One transaction: every session the puts need checked in it (one gone: nothing written).
    writeMany: (writes, options) =>
      run('write record of', undefined, async (db) => {
        assertWrites(writes)
        const places = writes.map(([key]) => placeOf(key))
        const values = writes.map(([key, value], i) => (value !== undefined && places[i]!.store === 'checkpoints' ? rowOf(key, value) : value))
        const owners = new Map<SessionId, RecordKey>()
        for (const [key, value] of writes) {
          const owner = sessionOfKey(key)
          if (owner !== undefined && value !== undefined) owners.set(owner, key)
        }
        await inTx(
          db,
          ['sessions', ...storesOf(places)],
          'readwrite',
          async (tx) => {
            const sessions = tx.objectStore('sessions')
            const there = await Promise.all([...owners.keys()].map((id) => sessions.getKey(id)))
            const gone = [...owners].find((_, i) => there[i] === undefined)
            if (gone) throw notFoundForKey(gone[0], gone[1])
            await Promise.all(
              places.map((p, i) => {
                const store = tx.objectStore(p.store)
                return values[i] === undefined ? quiet(store.delete(p.key)) : quiet(store.put(values[i] as never, p.key))
              }),
            )
          },
          options?.durability === 'durable' ? durability : 'relaxed',
        )
      }),
    delete: (key) =>
      run('delete record of', undefined, async (db) => {
        assertKey(key)
        const p = placeOf(key)
        await inTx(db, [p.store], 'readwrite', (tx) => tx.objectStore(p.store).delete(p.key), 'relaxed')
      }),
    list: (prefix, range) =>
      run('list records of', undefined, async (db) => {
        const r = resolveKeyRange(prefix, range)
        const owner = prefix.length >= 2 ? sessionOfKey([...prefix.slice(0, 2), 'x']) : undefined
        // Every key of the prefix is below its flat form and U+FFFF (parts hold [A-Za-z0-9_-]).
        const upper = `${r.prefix}\uffff`
        if (r.after !== undefined && r.after > upper) return [] // past them all (a bound from it up would throw)
        const lower = r.after !== undefined && r.after >= r.prefix ? IDBKeyRange.bound(r.after, upper, true) : IDBKeyRange.bound(r.prefix, upper)
        // Keys in `kv` only (the session index's, or a session's own records): its one read, a page long.
        const part = prefix[2]
        const kvOnly =
          owner !== undefined
            ? part !== undefined && part !== CHECKPOINT_PART && part !== HISTORY_PART
            : prefix.length > 0 && prefix[0] !== 'session' && prefix[0] !== META_PART
        if (kvOnly) return inTx(db, ['kv'], 'readonly', async (tx) => ((await tx.objectStore('kv').getAllKeys(lower, r.limit)) as string[]).map(unflat))
        return inTx(db, ['kv', 'checkpoints', 'meta'], 'readonly', async (tx) => {
          const keys = (await tx.objectStore('kv').getAllKeys(lower, r.limit)) as string[]
          // The store's rows: a session's, or every session's and the meta records.
          const rows =
            owner !== undefined
              ? [
                  ...(await tx.objectStore('checkpoints').getAllKeys(owner)),
                  ...(await tx.objectStore('checkpoints').getAllKeys(IDBKeyRange.bound([owner, 0], [owner, Infinity]))),
                ]
              : prefix.length === 0 || prefix[0] === 'session'
                ? await tx.objectStore('checkpoints').getAllKeys()
                : []
          keys.push(...rows.map(rowFlat))
          if (prefix.length === 0 || prefix[0] === META_PART) {
            for (const k of await tx.objectStore('meta').getAllKeys()) if (typeof k === 'string' && META_NAME.test(k)) keys.push(flat([META_PART, k]))
          }
          return takeRange(keys.sort(), r)
        })
      }),
  }
}
