// Contract: §16 Durable Streams — the protocol's official conformance suite
// (@durable-streams/server-conformance-tests) against createStreamsHandler on a real node:http
// server on 127.0.0.1, over an fs store (its engine in a worker thread, as openStore's default)
// and over a PostgreSQL store (a throwaway cluster).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe } from 'vitest'
import { runConformanceTests } from '@durable-streams/server-conformance-tests'
import { openStore, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'

/** Serves the streams of the store `open` makes, for the suite at `config.baseUrl`. */
function suiteOver(open: () => Promise<Store>) {
  const config = { baseUrl: '' }
  let store: Store
  let server: Server
  beforeAll(async () => {
    store = await open()
    // A long-poll waits 500 ms at the tail (the reference server's own conformance run does the same).
    server = createServer(toNodeListener(createStreamsHandler({ store, authorize: () => true, longPollMs: 500 })))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    config.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }, 120_000)
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await store?.close()
  })
  runConformanceTests(config)
}

describe('Durable Streams conformance (fs store)', () => {
  let dir: string
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  })
  suiteOver(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sessionfold-streams-'))
    return openStore({ storage: 'fs', dir })
  })
})

describe.skipIf(!postgresBin())('Durable Streams conformance (PostgreSQL store)', () => {
  let cluster: PgCluster | undefined
  afterAll(async () => {
    await cluster?.stop()
  })
  suiteOver(async () => {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    const url = await cluster.createDatabase('streams')
    return openStore({ storage: 'postgres', url, schema: 'streams' })
  })
})
