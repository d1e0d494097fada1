// openStore's options of a store in files, and its config.
import { storeName, type Durability } from '../platform'

/** Files: the store's root folder `dir`. */
export interface FsConfig {
  storage: 'fs'
  dir: string
  durability: Durability
}

export interface FsOptions {
  /** fs root folder (default '.sessionfold'). For storage 'fs' (memory takes it too); another storage rejects it. */
  dir?: string
}

export function fsConfig(options: FsOptions, durability: Durability): FsConfig {
  return { storage: 'fs', dir: storeName(options.dir, 'dir') ?? '.sessionfold', durability }
}
