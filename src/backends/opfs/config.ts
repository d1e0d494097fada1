// openStore's options of a store in the Origin Private File System, and its config.
import { storeName, type Durability } from '../platform'

/** The origin's private file system: the folder `name` in it. */
export interface OpfsConfig {
  storage: 'opfs'
  name: string
  durability: Durability
}

export interface OpfsOptions {
  /** The store's name (default 'sessionfold'): for 'opfs', the folder in the origin's private file system. */
  name?: string
}

export function opfsConfig(options: OpfsOptions, durability: Durability): OpfsConfig {
  const name = storeName(options.name, 'name') ?? 'sessionfold'
  return { storage: 'opfs', name, durability }
}
