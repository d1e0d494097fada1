// openStore's options of an IndexedDB store.
/** IndexedDB: the database `name`. */
export interface IndexedDbConfig {
  storage: 'indexeddb'
  name: string
  durability: 'strict' | 'relaxed'
}

export interface IndexedDbOptions {
  /** IndexedDB database name (default 'sessionfold'). For storage 'indexeddb' (memory takes it too); another storage rejects it. */
  name?: string
}

export function indexedDbConfig(options: IndexedDbOptions, durability: 'strict' | 'relaxed'): IndexedDbConfig {
  return { storage: 'indexeddb', name: options.name ?? 'sessionfold', durability }
}
