// Deflate in Node (node:zlib), for the record codec: the worker's platform and the command line
// use this one, so a store reads and writes the same way from both. Never imported in browsers
// (they use CompressionStream, worker/platform/browser.ts).
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import type { Compressor } from './seal'

/**
 * zlib's fastest level: on a durable append it runs before the write, and level 1 deflates
 * agent text (source files, docs, logs) 1.7 times as fast as the default level 6 for about a
 * sixth more bytes (24.7 % of the JSON against 21.4 %, measured on node_modules' text).
 */
export const DEFLATE_LEVEL = 1

/** node:zlib's raw deflate, on the calling thread: a unit is at most a few hundred KiB. */
export const nodeCompressor = {
  deflate: (bytes: Uint8Array): Uint8Array => deflateRawSync(bytes, { level: DEFLATE_LEVEL }),
  inflate: (bytes: Uint8Array): Uint8Array => inflateRawSync(bytes),
} satisfies Compressor
