// Support: an IndexedDB database recreated from a raw dump (test/fixtures/stores/v0.1/indexeddb.json,
// made by scripts/make-v01-fixtures.ts): the same version, object stores, keys and values, in any
// IDBFactory (fake-indexeddb in Node, the browser's own in Chromium), so that today's adapter
// opens it as it would open a user's database written by that version, and must upgrade it.
// Plain DOM code, no Node module: the browser test uses it as it is.

/** One object store of the dump: its options and every row, in key order, as IndexedDB held them. */
export interface IdbStoreDump {
  keyPath: string | string[] | null
  autoIncrement: boolean
  /** The dump keeps no index (sessionfold's databases have none); the loader refuses any. */
  indexes: string[]
  rows: [key: IDBValidKey, value: unknown][]
}

/** A database as scripts/make-v01-fixtures.ts dumps it. */
export interface IdbDump {
  format: 1
  madeBy: string
  version: number
  stores: Record<string, IdbStoreDump>
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'))
  })
}

/**
 * Creates database `name` in `factory` exactly as the dump holds it: at the dump's version, with
 * its object stores (key paths, key generators) and every row put under its own key. An
 * autoIncrement store's key generator then continues after the largest key put, as it did.
 * Rejects when `name` already exists (a test must start from the dump alone).
 */
export async function loadIdbDump(factory: IDBFactory, name: string, dump: IdbDump): Promise<void> {
  if (dump.format !== 1) throw new Error(`unknown dump format ${String(dump.format)}`)
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = factory.open(name, dump.version)
    open.onupgradeneeded = (event) => {
      if (event.oldVersion !== 0) {
        open.transaction!.abort()
        return
      }
      for (const [storeName, s] of Object.entries(dump.stores)) {
        if (s.indexes.length > 0) throw new Error(`${storeName}: the loader does not make indexes`)
        open.result.createObjectStore(storeName, { keyPath: s.keyPath, autoIncrement: s.autoIncrement })
      }
    }
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error ?? new Error(`IndexedDB database ${name} exists already`))
    open.onblocked = () => reject(new Error(`opening IndexedDB database ${name} is blocked`))
  })
  try {
    const tx = db.transaction(Object.keys(dump.stores), 'readwrite')
    const written = done(tx)
    for (const [storeName, s] of Object.entries(dump.stores)) {
      const os = tx.objectStore(storeName)
      for (const [key, value] of s.rows) {
        if (s.keyPath === null) os.put(value, key)
        else os.put(value)
      }
    }
    await written
  } finally {
    db.close()
  }
}

/** The version and object store names of database `name` as it is now (opened without a version, closed again). */
export async function idbLayout(factory: IDBFactory, name: string): Promise<{ version: number; stores: string[] }> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = factory.open(name)
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  })
  const layout = { version: db.version, stores: [...db.objectStoreNames].sort() }
  db.close()
  return layout
}
