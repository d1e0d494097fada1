// Browsers' backends, one line each: IndexedDB, the origin's private file system and memory, with the locks and growth notices
// shared by an origin's tabs; no files. Each row is its folder's registration.ts: the client reads the
// rows to check openStore's options; the engine loads a backend's code from its row.
import { indexedDbStorage } from './indexeddb/registration'
import { memoryStorage } from './memory/registration'
import { opfsStorage } from './opfs/registration'
import type { Platform } from './platform'
import type { Compressor } from '../storage/codec'

export const BROWSER_BACKENDS = [indexedDbStorage, opfsStorage, memoryStorage] as const

// What only an engine uses (the tabs' locks, the deflate) is loaded when an engine first needs
// it: the client reads the rows, and its entry stays small.
let codec: Promise<Compressor> | undefined
const deflater = () => (codec ??= import('../storage/codec/browser').then((m) => m.streamCompressor()))

export const browserPlatform: Platform = {
  backends: BROWSER_BACKENDS,
  compressor: {
    deflate: async (bytes) => (await deflater()).deflate(bytes),
    inflate: async (bytes) => (await deflater()).inflate(bytes),
  },
  neighbours: async (name) => (await import('./tabs')).tabsOf(name),
}
