// Contract: §2-§7 through the record codec (§12) — the storage suite on sealed adapters, and
// the client suite on encrypted stores (fs in Node; IndexedDB in Chromium, in
// test/browser/client.browser.test.ts; PostgreSQL in test/postgres/client.test.ts).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { openSealed } from '../../src/storage/codec'
import { nodeCipher } from '../../src/storage/codec/node'
import { createFsAdapter } from '../../src/backends/fs'
import { createMemoryAdapter } from '../../src/backends/memory'
import { clientConformance } from '../contract/client'
import { storageConformance } from 'sessionfold/testing'

const compressor = { deflate: (b: Uint8Array) => deflateRawSync(b), inflate: (b: Uint8Array) => inflateRawSync(b) }
const key = new Uint8Array(32).fill(3)

// A sealed store re-encrypts through its inner adapter's replaceRecords (rotateKey), and has none
// of its own: that test is reported skipped here.
const sealed = { without: ['replaceRecords'] } as const
storageConformance(
  'memory, encrypted and compressed',
  async () => ({ adapter: await openSealed(createMemoryAdapter(), { key, compressor }), teardown: async () => {} }),
  sealed,
)
storageConformance('memory, compressed', async () => ({ adapter: await openSealed(createMemoryAdapter(), { compressor }), teardown: async () => {} }), sealed)

storageConformance(
  'fs, encrypted and compressed',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-sealed-'))
    // Sealed with node:crypto's AES-GCM (Node's platform), reopened with WebCrypto's: the same bytes.
    let adapter = await openSealed(createFsAdapter({ dir }), { key, compressor, cipher: nodeCipher })
    return {
      adapter,
      reopen: async () => {
        await adapter.close()
        adapter = await openSealed(createFsAdapter({ dir }), { key, compressor })
        return adapter
      },
      teardown: async () => {
        await adapter.close().catch(() => {})
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
  sealed,
)

let n = 0
const base = join(tmpdir(), `sessionfold-sealed-client-${process.pid}`)
for (const worker of [false, true]) {
  clientConformance(`fs, encrypted, ${worker ? 'worker_threads' : 'in this thread'}`, () => ({
    storage: 'fs',
    dir: join(base, String(n++)),
    worker,
    encryption: { key },
  }))
}
