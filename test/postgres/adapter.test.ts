// Contract: §2 data model, §4 checkpoints, §7 durability — the storage suite on PostgreSQL (docs/CONTRACT.md):
// every storage contract holds on the PostgreSQL adapter as on fs and IndexedDB, on a real
// server (the throwaway cluster of test/support/postgres.ts), a fresh schema per test.
import { afterAll, beforeAll, vi } from 'vitest'
import { createPostgresAdapter } from '../../src/backends/postgres'
import type { StorageAdapter } from '../../src/storage/types'
import { storageConformance } from 'sessionfold/testing'
import { startCluster, type PgCluster } from '../support/postgres'

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

let cluster: PgCluster
let url: string
let schemas = 0

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('conformance')
})
afterAll(async () => {
  await cluster?.stop()
})

storageConformance('postgres', async () => {
  const schema = `conf_${++schemas}`
  let adapter: StorageAdapter = createPostgresAdapter({ url, schema })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createPostgresAdapter({ url, schema })
      return adapter
    },
    teardown: async () => {
      await adapter.close()
    },
  }
})
