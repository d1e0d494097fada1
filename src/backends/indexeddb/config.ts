// openStore's options of a store in IndexedDB, and its config.
import { storeName, type Durability } from '../platform'

/** IndexedDB: the database `name`. */
export interface IndexedDbConfig {
  storage: 'indexeddb'
  name: string
  durability: Durability
}

export interface IndexedDbOptions {
  /** The store's name (default 'sessionfold'): the IndexedDB database, or for storage 'opfs' the folder in the origin's private file system (memory takes it too); another storage rejects it. */
  name?: string
}

export function indexedDbConfig(options: IndexedDbOptions, durability: Durability): IndexedDbConfig {
  return { storage: 'indexeddb', name: storeName(options.name, 'name') ?? 'sessionfold', durability }
}
