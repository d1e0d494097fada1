// Key-value records in IndexedDB (StorageAdapter.kv): the `kv` object store, keyed by a key's
// flat form (kv.ts), which IndexedDB orders by code unit as the parts sort. A session's records
// are deleted in the transaction that deletes the session (deleteRecordsOf, used by indexeddb.ts).
import type { SessionId } from '../../core/model'
import { assertKey, assertValue, flat, notFoundForKey, resolveKeyRange, sessionOfKey, sessionPrefix, unflat } from '../../storage/kv'
import { quiet, type Db, type StoreName, type Tx } from './schema'
import type { KeyValueStore } from '../../storage/types'

/** What the records need of the adapter: its call wrapper and its transactions. */
export interface RecordDb {
  run<T>(op: string, id: SessionId | undefined, body: (db: Db) => Promise<T>): Promise<T>
  inTx<M extends IDBTransactionMode, T>(db: Db, stores: StoreName[], mode: M, body: (tx: Tx<M>) => Promise<T>, durability?: 'strict' | 'relaxed'): Promise<T>
}

/** The flat keys of session `id`'s records. */
const rangeOf = (id: SessionId) => IDBKeyRange.bound(sessionPrefix(id), `${sessionPrefix(id)}\uffff`)

/** Deletes session `id`'s records in `tx` (which has the kv store). */
export const deleteRecordsOf = (tx: Tx<'readwrite'>, id: SessionId): Promise<void> => quiet(tx.objectStore('kv').delete(rangeOf(id)))

export function createIdbRecords({ run, inTx }: RecordDb): KeyValueStore {
  return {
    get: (key) => run('read record of', undefined, async (db) => {
      assertKey(key)
      return inTx(db, ['kv'], 'readonly', (tx) => tx.objectStore('kv').get(flat(key)))
    }),
    put: (key, value) => run('write record of', undefined, async (db) => {
      assertKey(key)
      assertValue(key, value)
      const owner = sessionOfKey(key)
      // Records are caches (see KeyValueStore): a relaxed commit, checked against the session in the same transaction.
      await inTx(db, ['sessions', 'kv'], 'readwrite', async (tx) => {
        if (owner !== undefined && (await tx.objectStore('sessions').getKey(owner)) === undefined) throw notFoundForKey(owner, key)
        await quiet(tx.objectStore('kv').put(value, flat(key)))
      }, 'relaxed')
    }),
    delete: (key) => run('delete record of', undefined, async (db) => {
      assertKey(key)
      await inTx(db, ['kv'], 'readwrite', (tx) => tx.objectStore('kv').delete(flat(key)), 'relaxed')
    }),
    list: (prefix, range) => run('list records of', undefined, async (db) => {
      const r = resolveKeyRange(prefix, range)
      const lower = r.after !== undefined && r.after >= r.prefix ? IDBKeyRange.bound(r.after, `${r.prefix}\uffff`, true) : IDBKeyRange.bound(r.prefix, `${r.prefix}\uffff`)
      const keys = await inTx(db, ['kv'], 'readonly', (tx) => tx.objectStore('kv').getAllKeys(lower, r.limit))
      return keys.map((k) => unflat(k as string))
    }),
  }
}
