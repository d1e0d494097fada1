// Node's backends: files (with lock files shared by processes), PostgreSQL (loaded only when
// a store asks for it: the driver is an optional peer), memory, or an IndexedDB polyfill. A
// backend is one row here (and its folder).
import type { StoreConfig } from './config'
import { createLocalLocks } from '../storage/locks'
import { nodeCipher, nodeCompressor } from '../storage/codec/node'
import { fsBackend } from './fs/backend'
import { createIndexedDbAdapter } from './indexeddb'
import { createMemoryAdapter } from './memory'
import { backendOf, type Platform } from './platform'
import { masked } from './postgres/errors'

export const nodePlatform: Platform = {
  backends: {
    fs: fsBackend,
    // Every engine on the store, on any machine, hears appends by LISTEN/NOTIFY.
    postgres: {
      open: async (config, purpose) => (await import('./postgres/backend')).postgresBackend.open(config, purpose),
      redact: (config, text) => masked(text, config.url),
    },
    memory: { open: async () => ({ storage: createMemoryAdapter(), locks: createLocalLocks() }) },
    indexeddb: { open: async (c) => ({ storage: createIndexedDbAdapter({ name: c.name, durability: c.durability }), locks: createLocalLocks() }) },
  },
  compressor: nodeCompressor,
  cipher: nodeCipher,
}

/** Node: what a worker thread that died held in the store `config` (its lock files), let go. */
export async function releaseThread(config: StoreConfig, threadId: number): Promise<void> {
  await backendOf(nodePlatform, config).releaseThread?.(config, threadId)
}

/** `text` as it may be shown: without the secrets of the store `config` (a PostgreSQL URL's password). */
export function redacted(config: StoreConfig, text: string): string {
  return backendOf(nodePlatform, config).redact?.(config, text) ?? text
}
