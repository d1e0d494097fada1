// What an engine in a browser has besides its backends: the deflate, and the locks and growth
// notices shared by an origin's tabs. Each is loaded when an engine first needs it: the client
// reads the rows (browser.ts), and its entry stays small.
import type { Compressor } from '../storage/codec'
import type { Platform } from './platform'

let codec: Promise<Compressor> | undefined
const deflater = () => (codec ??= import('../storage/codec/browser').then((m) => m.streamCompressor()))

/** The browsers' platform with the backends `backends` (the default worker's: browser.ts's defaultWorkerPlatform). */
export function browserPlatformOf(backends: Platform['backends']): Platform {
  return {
    backends,
    compressor: {
      deflate: async (bytes) => (await deflater()).deflate(bytes),
      inflate: async (bytes) => (await deflater()).inflate(bytes),
    },
    neighbours: async (name) => (await import('./tabs')).tabsOf(name),
  }
}
