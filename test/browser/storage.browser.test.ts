// Contract: §2 data model, §4 checkpoints, §7 durability — the storage suite on real IndexedDB in Chromium (docs/CONTRACT.md)
// The storage conformance suite on real IndexedDB in Chromium (on disk: a persistent context).
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import type { StorageAdapter } from '../../src/storage/types'
import { storageConformance } from 'sessionfold/testing'

let n = 0
storageConformance('indexeddb (Chromium)', async () => {
  const name = `conformance-${Date.now()}-${n++}`
  let adapter: StorageAdapter = createIndexedDbAdapter({ name })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createIndexedDbAdapter({ name })
      return adapter
    },
    teardown: async () => {
      await adapter.close()
      await new Promise<void>((resolve) => {
        const r = indexedDB.deleteDatabase(name)
        r.onsuccess = r.onerror = r.onblocked = () => resolve()
      })
    },
  }
})
