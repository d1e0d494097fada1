// PostgreSQL: the client conformance suite (test/contract/client.ts) through openStore({ storage:
// 'postgres' }), the engine in a worker and in this thread, on a real throwaway cluster: the
// same contract as fs and IndexedDB (§2-§8), a fresh schema per test.
import { afterAll, beforeAll, beforeEach } from 'vitest'
import { createPostgresAdapter } from '../../src/backends/postgres'
import { clientConformance } from '../contract/client'
import { readAll } from '../support/helpers'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
let url: string
let schema: string
let n = 0

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('client')
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})
beforeEach(() => {
  schema = `c${process.pid}_${n++}`
})

const storedData = async (id: string) => {
  const a = createPostgresAdapter({ url, schema })
  try {
    return (await readAll(a, id)).map((e) => e.data)
  } finally {
    await a.close()
  }
}

for (const worker of [false, true]) {
  clientConformance(`postgres, ${worker ? 'worker_threads' : 'in this thread'}`, () => ({ storage: 'postgres', url, schema, worker }), storedData)
}
// Through the record codec (§12), encrypted: every contract holds the same.
clientConformance('postgres, encrypted, worker_threads', () => ({
  storage: 'postgres',
  url,
  schema,
  worker: true,
  encryption: { key: new Uint8Array(32).fill(6) },
}))
