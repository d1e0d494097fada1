// openStore's store options, parsed into the host's StoreConfig by the backend they name (its
// row in the platform's list: node.ts, browser.ts). Pure code, no backend's storage: the client
// runs it in every bundle.
import { SessionfoldError } from '../core/errors'
import { describe } from '../core/validate'
import type { BROWSER_BACKENDS } from './browser'
import type { FsOptions } from './fs/config'
import type { IndexedDbOptions } from './indexeddb/config'
import type { NODE_BACKENDS } from './node'
import { entryOf, type AnyBackendEntry, type BackendEntry } from './platform'
import type { PostgresOptions } from './postgres/config'

/**
 * Which store, as the host receives it: one shape per backend, tagged by `storage`, each parsed
 * from openStore's options by its backend (src/backends/<name>/config.ts), defaults resolved.
 * The union of the platforms' lists: a backend added to a list is in it.
 */
export type StoreConfig = ConfigOf<(typeof NODE_BACKENDS)[number] | (typeof BROWSER_BACKENDS)[number]>
type ConfigOf<E> = E extends BackendEntry<infer C, infer _O> ? C : never

/** Where a store keeps its sessions: IndexedDB or the origin's private file system (browsers), files or PostgreSQL (Node), or memory (nothing kept). */
export type StorageKind = 'indexeddb' | 'opfs' | 'fs' | 'memory' | 'postgres'

// The public names (StorageKind, StoreOptions) are spelled out for the API reference; these
// fail to compile when a platform's list and they disagree.
const KINDS_AGREE: [StorageKind, StoreConfig['storage']] extends [StoreConfig['storage'], StorageKind]
  ? true
  : 'StorageKind must name the storage of every row of NODE_BACKENDS and BROWSER_BACKENDS, and no other' = true
void KINDS_AGREE
type OptionsOf<E> = E extends BackendEntry<infer _C, infer O> ? O : never
type KeysOf<U> = U extends unknown ? keyof U : never
type RowOptionKeys = KeysOf<OptionsOf<(typeof NODE_BACKENDS)[number] | (typeof BROWSER_BACKENDS)[number]>>
const OPTIONS_AGREE: [Exclude<RowOptionKeys, keyof StoreOptions>] extends [never]
  ? true
  : `StoreOptions must extend the options of every row; missing: ${Exclude<RowOptionKeys, keyof StoreOptions> & string}` = true
void OPTIONS_AGREE

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

/** The keys of {@link StoreOptions} that `backends` read: `storage`, `durability` and each one's own. */
export function storeOptionKeys(backends: readonly AnyBackendEntry[]): string[] {
  return ['storage', 'durability', ...new Set(backends.flatMap((b) => b.options))]
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/**
 * The store `options` name, as its backend in `backends` parses it; INVALID_ARGUMENT for anything
 * else (`here` says where: 'in Node', 'in browsers'). An option of another backend (`dir`, `name`,
 * `url`…) says where that backend keeps its data: given for this one, the data would be somewhere
 * the app does not expect, so it is refused.
 */
export function storeConfig(options: StoreOptions, backends: readonly AnyBackendEntry[], defaultStorage: StorageKind, here: string): StoreConfig {
  const storage = options.storage ?? defaultStorage
  const entry = entryOf(backends, storage, here)
  for (const key of Object.keys(options)) {
    if (entry.options.includes(key) || (options as Record<string, unknown>)[key] === undefined) continue
    const owners = backends.filter((b) => b.options.includes(key)).map((b) => `'${b.storage}'`)
    if (owners.length > 0) throw bad(`${key} is an option of storage ${owners.join(' and ')}, not of '${storage}': ${entry.is}`)
  }
  const durability = options.durability ?? 'strict'
  if (durability !== 'strict' && durability !== 'relaxed') throw bad(`durability must be 'strict' or 'relaxed', got ${describe(durability)}`)
  return entry.config(options, durability)
}
