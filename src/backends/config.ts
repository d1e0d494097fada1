// openStore's store options, parsed into the host's StoreConfig by the backend they name
// (each backend's config.ts). Pure code, no backend's storage: the client imports it in every
// bundle. Adding a backend: its config.ts, and one row in CONFIGS.
import { SessionfoldError } from '../core/errors'
import { describe } from '../core/validate'
import { fsConfig, type FsConfig, type FsOptions } from './fs/config'
import { indexedDbConfig, type IndexedDbConfig, type IndexedDbOptions } from './indexeddb/config'
import { memoryConfig, type MemoryConfig } from './memory/config'
import { POSTGRES_OPTIONS, postgresConfig, type PostgresConfig, type PostgresOptions } from './postgres/config'

/**
 * Which store, as the host receives it: one shape per backend, tagged by `storage`, each parsed
 * from openStore's options by its backend (src/backends/<name>/config.ts), defaults resolved.
 */
export type StoreConfig = MemoryConfig | IndexedDbConfig | FsConfig | PostgresConfig

/** Where a store keeps its sessions: IndexedDB (browsers), files (Node), PostgreSQL (Node) or memory (nothing kept). */
export type StorageKind = 'indexeddb' | 'fs' | 'memory' | 'postgres'

/** Fails to compile when StorageKind and the backends' configs name different storages. */
const KINDS_AGREE: [StorageKind, StoreConfig['storage']] extends [StoreConfig['storage'], StorageKind] ? true : never = true
void KINDS_AGREE

/** The options of openStore that say which store: `storage`, and the options of each backend. */
export interface StoreOptions extends IndexedDbOptions, FsOptions, PostgresOptions {
  /** Where events are kept. Default: `'indexeddb'` in browsers, `'fs'` in Node; `'memory'` keeps nothing after close. */
  storage?: StorageKind
  /**
   * `'strict'` (default): an append resolves once durable (fs: after `fdatasync`; IndexedDB:
   * a `strict` transaction's `complete`). `'relaxed'`: once written; a crash of the machine
   * may lose the last appends, never leave a torn batch.
   */
  durability?: 'strict' | 'relaxed'
}

/** The keys of {@link StoreOptions}. */
export const STORE_OPTIONS = ['storage', 'name', 'dir', ...POSTGRES_OPTIONS, 'durability']

type Parse = (options: StoreOptions, durability: 'strict' | 'relaxed') => StoreConfig

/** Each backend: its parser, and whether it needs Node (files, a PostgreSQL driver). */
const CONFIGS: Record<StorageKind, { parse: Parse; node: boolean }> = {
  indexeddb: { parse: indexedDbConfig, node: false },
  fs: { parse: fsConfig, node: true },
  memory: { parse: memoryConfig, node: false },
  postgres: { parse: postgresConfig, node: true },
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/**
 * The store `options` name, as its backend parses it; INVALID_ARGUMENT for anything else.
 * `name` and `dir` say where one storage keeps its data: given for another one, the data would
 * be somewhere the app does not expect, so it is refused (memory keeps nothing anywhere, and
 * takes either).
 */
export function storeConfig(options: StoreOptions, defaultStorage: StorageKind, node: boolean): StoreConfig {
  const storage = options.storage ?? defaultStorage
  const backend = Object.hasOwn(CONFIGS, storage) ? CONFIGS[storage] : undefined
  if (!backend) throw bad(`storage must be 'indexeddb', 'fs', 'memory' or 'postgres', got ${describe(storage)}`)
  if (backend.node && !node) throw bad(`storage '${storage}' needs Node`)
  if (storage !== 'postgres') {
    for (const key of POSTGRES_OPTIONS) if (options[key] !== undefined) throw bad(`${key} is for storage 'postgres', not '${storage}'`)
  }
  const durability = options.durability ?? 'strict'
  if (durability !== 'strict' && durability !== 'relaxed') throw bad(`durability must be 'strict' or 'relaxed', got ${describe(durability)}`)
  for (const [k, v] of [
    ['name', options.name],
    ['dir', options.dir],
  ] as const) {
    if (v !== undefined && (typeof v !== 'string' || v.length === 0 || v.includes('\0')))
      throw bad(`${k} must be a non-empty string without NUL, got ${describe(v)}`)
  }
  if (options.name !== undefined && storage !== 'indexeddb' && storage !== 'memory') {
    throw bad(
      `name (the IndexedDB database's name) cannot apply to storage '${storage}': ${storage === 'fs' ? 'an fs store is the folder dir' : 'a PostgreSQL store is its url and schema'}`,
    )
  }
  if (options.dir !== undefined && storage !== 'fs' && storage !== 'memory') {
    throw bad(
      `dir (the folder of an fs store) cannot apply to storage '${storage}': ${storage === 'indexeddb' ? 'an IndexedDB store is the database name' : 'a PostgreSQL store is its url and schema'}`,
    )
  }
  return backend.parse(options, durability)
}
