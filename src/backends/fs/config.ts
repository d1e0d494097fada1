// openStore's options of a store in files.
/** Files: the store's root folder `dir`. */
export interface FsConfig {
  storage: 'fs'
  dir: string
  durability: 'strict' | 'relaxed'
}

export interface FsOptions {
  /** fs root folder (default '.sessionfold'). For storage 'fs' (memory takes it too); another storage rejects it. */
  dir?: string
}

export function fsConfig(options: FsOptions, durability: 'strict' | 'relaxed'): FsConfig {
  return { storage: 'fs', dir: options.dir ?? '.sessionfold', durability }
}
