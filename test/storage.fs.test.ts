import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFsAdapter } from '../adapters/fs'
import type { StorageAdapter } from '../adapters/types'
import { storageConformance } from './conformance/storage'

storageConformance('fs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-'))
  let adapter: StorageAdapter = createFsAdapter({ dir })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createFsAdapter({ dir })
      return adapter
    },
    teardown: async () => {
      await adapter.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})
