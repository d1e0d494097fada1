// Node's backends, one line each: files (lock files shared by processes), PostgreSQL (the driver
// is an optional peer, loaded only when a store asks for it), memory, and IndexedDB on a
// polyfill. Each row is its folder's registration.ts: the client reads the rows to check openStore's
// options; the engine loads a backend's code from its row when a store of it opens.
import { createLocalLocks } from '../storage/locks'
import { nodeCipher, nodeCompressor } from '../storage/codec/node'
import { fsStorage } from './fs/registration'
import { indexedDbStorage } from './indexeddb/registration'
import { memoryStorage } from './memory/registration'
import { postgresStorage } from './postgres/registration'
import { entryOf, type Platform, type StoreConfigBase } from './platform'

export const NODE_BACKENDS = [fsStorage, postgresStorage, memoryStorage, indexedDbStorage] as const

export const nodePlatform: Platform = {
  backends: NODE_BACKENDS,
  compressor: nodeCompressor,
  cipher: nodeCipher,
  // One process: its engines share a memory or IndexedDB store only within it.
  neighbours: async () => ({ locks: createLocalLocks() }),
}

/** Node: what a worker thread that died held in the store `config` (its lock files), let go. */
export async function releaseThread(config: StoreConfigBase, threadId: number): Promise<void> {
  await (await entryOf(NODE_BACKENDS, config.storage, 'in Node').load()).releaseThread?.(config, threadId)
}

/** `text` as it may be shown: without the secrets of the store `config` (a PostgreSQL URL's password). */
export function redacted(config: StoreConfigBase, text: string): string {
  return entryOf(NODE_BACKENDS, config.storage, 'in Node').redact?.(config, text) ?? text
}
