// Contract: §2 data model, §4 checkpoints, §7 durability — the storage suite on fs, also with one cached log (docs/CONTRACT.md)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFsAdapter } from '../../src/backends/fs'
import type { StorageAdapter } from '../../src/storage/types'
import { storageConformance } from 'sessionfold/testing'

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

// The same contract with the idle-log cache at its smallest: every other session's state is
// dropped and read again from disk (index and tail) on next use.
storageConformance('fs, one cached log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs1-'))
  let adapter: StorageAdapter = createFsAdapter({ dir, maxCachedLogs: 1, maxOpenFiles: 1 })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createFsAdapter({ dir, maxCachedLogs: 1, maxOpenFiles: 1 })
      return adapter
    },
    teardown: async () => {
      await adapter.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})
