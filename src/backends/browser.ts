import { createIndexedDbAdapter } from './indexeddb'
import { createMemoryAdapter } from './memory'
import { SessionfoldError } from '../core/errors'
import { isSessionId } from '../core/limits'
import { createLocalLocks } from '../storage/locks'
import { createWebLocks } from './web-locks'
import type { GrowthChannel, Platform } from './platform'
import type { Compressor } from '../storage/codec'

/** Browsers: IndexedDB or memory; no files. */
export const browserPlatform: Platform = {
  openStorage(o) {
    switch (o.storage) {
      case 'indexeddb':
        return createIndexedDbAdapter({ name: o.name, durability: o.durability })
      case 'memory':
        return createMemoryAdapter()
      default:
        throw new SessionfoldError('INVALID_ARGUMENT', `storage '${String(o.storage)}' is not available in a browser`)
    }
  },
  compressor: streamCompressor(),
  // Web Locks where there are any (all current browsers): one writer per session across tabs.
  openChannel: (o) => (typeof BroadcastChannel === 'function' ? broadcastGrowth(o.name) : undefined),
  openLocks: (o) => ('locks' in (globalThis.navigator ?? {}) ? createWebLocks(o.name) : createLocalLocks()),
}

/**
 * Growth notices over a BroadcastChannel: a tab that appends says so, and tabs following the
 * session read the new events from IndexedDB (the notice carries no data; storage stays the
 * only source of truth, so a lost or forged notice costs at most a read).
 */
function broadcastGrowth(store: string): GrowthChannel {
  const channel = new BroadcastChannel(`sessionfold:${store}`)
  return {
    announce: (sessionId, length) => channel.postMessage({ sessionId, length }),
    listen(onGrow) {
      channel.onmessage = (event: MessageEvent) => {
        const { sessionId: id, length } = (event.data ?? {}) as { sessionId?: unknown; length?: unknown }
        if (isSessionId(id)) onGrow(id, Number.isSafeInteger(length) && (length as number) >= 0 ? length as number : undefined)
      }
    },
    close: () => channel.close(),
  }
}

/**
 * Deflate (raw) through the browser's CompressionStream, fed and read through its own writer
 * and reader (a Blob and a Response around it cost 1-2 ms a call, measured in Chromium).
 */
export function streamCompressor(): Compressor {
  const through = async (bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> => {
    const writer = stream.writable.getWriter()
    // A failure (bytes that do not inflate) shows on the reading side, which rejects.
    writer.write(bytes as Uint8Array<ArrayBuffer>).then(() => writer.close()).catch(() => {})
    const reader = stream.readable.getReader()
    const chunks: Uint8Array[] = []
    let size = 0
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.length
    }
    if (chunks.length === 1) return chunks[0]!
    const out = new Uint8Array(size)
    let at = 0
    for (const c of chunks) {
      out.set(c, at)
      at += c.length
    }
    return out
  }
  return {
    deflate: (bytes) => through(bytes, new CompressionStream('deflate-raw')),
    inflate: (bytes) => through(bytes, new DecompressionStream('deflate-raw')),
  }
}
