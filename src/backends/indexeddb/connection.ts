// The adapter's one connection to its database, opened on first use and again after the browser
// closed it (data cleared, the database deleted) or another tab asked to upgrade it. idb's
// openDB only knows the global factory, so this is openDB over a given one: the same upgrade,
// `terminated` ('close') and `blocking` ('versionchange') hooks.
import { wrap } from 'idb'
import { SessionfoldError } from '../../core/errors'
import { newFeedId } from '../../storage/guard'
import type { Db } from './schema'

export class IdbConnection {
  #connection: Promise<Db> | undefined

  constructor(
    private readonly name: string,
    private readonly version: number,
    private readonly feedIdKey: string,
    private readonly factory: IDBFactory | undefined,
  ) {}

  /** Whether `p` is still the connection in use (not forgotten since). */
  isCurrent(p: Promise<Db>): boolean {
    return this.#connection === p
  }

  /** `p` is not to be used again: the next call opens anew. */
  forget(p: Promise<Db>): void {
    if (this.#connection === p) this.#connection = undefined
  }

  connect(): Promise<Db> {
    if (this.#connection) return this.#connection
    const p: Promise<Db> = (async () => {
      const factory = this.factory ?? globalThis.indexedDB
      if (!factory) throw new SessionfoldError('STORAGE_UNAVAILABLE', 'IndexedDB is not available in this environment')
      const request = factory.open(this.name, this.version)
      request.addEventListener('upgradeneeded', () => {
        const raw = request.result
        for (const store of ['sessions', 'events', 'checkpoints', 'meta', 'kv']) {
          if (!raw.objectStoreNames.contains(store)) raw.createObjectStore(store)
        }
        if (!raw.objectStoreNames.contains('feed')) {
          raw.createObjectStore('feed', { autoIncrement: true })
          request.transaction!.objectStore('meta').put(newFeedId(), this.feedIdKey)
        }
      })
      const db = (await wrap(request)) as unknown as Db
      // The browser closed us (data cleared, database deleted): reopen on the next call.
      db.addEventListener('close', () => this.forget(p))
      // Another tab wants to upgrade or delete the database: step aside, reopen lazily.
      db.addEventListener('versionchange', () => {
        db.close()
        this.forget(p)
      })
      return db
    })()
    p.catch(() => this.forget(p)) // a failed open is tried again by the next call
    this.#connection = p
    return p
  }

  async close(): Promise<void> {
    const p = this.#connection
    this.#connection = undefined
    if (p) (await p.catch(() => undefined))?.close()
  }
}
