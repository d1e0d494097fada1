// An fs adapter as the store reads it: under the record codec (src/storage/codec), so a test that
// opens storage beside a store sees its events, not the frames that hold them. Node only.
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { openSealed, type SealedStorage } from '../../src/storage/codec'
import { createFsAdapter, type FsAdapterOptions } from '../../src/backends/fs'

export const nodeCompressor = { deflate: (b: Uint8Array) => deflateRawSync(b), inflate: (b: Uint8Array) => inflateRawSync(b) }

export function sealedFs(options: FsAdapterOptions, key?: Uint8Array): Promise<SealedStorage> {
  return openSealed(createFsAdapter(options), { compressor: nodeCompressor, key })
}
