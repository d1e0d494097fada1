// The Durable Streams conformance suite (@durable-streams/server-conformance-tests) against one
// server, for bench/streams.ts, which runs this file once a server through vitest
// (bench/streams-conformance.vitest.config.ts, the JSON reporter) and counts what passed, failed
// and was skipped. BENCH_STREAMS_TARGET picks the server, started here on 127.0.0.1:
//   reference             @durable-streams/server's DurableStreamTestServer, file-backed (dataDir in a temp folder)
//   sessionfold           createStreamsHandler over openStore({ storage: 'fs', dir }) (its defaults)
//   sessionfold-postgres  createStreamsHandler over a PostgreSQL store on a throwaway cluster (fsync off)
// A long-poll waits 500 ms at the tail on each, as in the reference server's own conformance run
// and in test/streams/conformance.test.ts.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe } from 'vitest'
import { DurableStreamTestServer } from '@durable-streams/server'
import { runConformanceTests } from '@durable-streams/server-conformance-tests'
import { openStore, type Store } from '../src/index-node'
import { createStreamsHandler, toNodeListener } from '../src/sync/server/index'
import { startCluster, type PgCluster } from '../test/support/postgres'

const TARGET = process.env.BENCH_STREAMS_TARGET ?? 'sessionfold'
const LONG_POLL_MS = 500

describe(`Durable Streams conformance: ${TARGET}`, () => {
  const config = { baseUrl: '' }
  let dir: string | undefined
  let cluster: PgCluster | undefined
  let store: Store | undefined
  let server: Server | undefined
  let reference: DurableStreamTestServer | undefined
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sessionfold-streams-conformance-'))
    if (TARGET === 'reference') {
      reference = new DurableStreamTestServer({ port: 0, host: '127.0.0.1', dataDir: dir, longPollTimeout: LONG_POLL_MS })
      await reference.start()
      config.baseUrl = reference.url
      return
    }
    if (TARGET === 'sessionfold-postgres') {
      cluster = await startCluster({ settings: { fsync: 'off' } })
      store = await openStore({ storage: 'postgres', url: await cluster.createDatabase('streams'), schema: 'streams' })
    } else if (TARGET === 'sessionfold') store = await openStore({ storage: 'fs', dir })
    else throw new Error(`BENCH_STREAMS_TARGET: no server ${TARGET}`)
    const s = createServer(toNodeListener(createStreamsHandler({ store, authorize: () => true, longPollMs: LONG_POLL_MS })))
    server = s
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
    config.baseUrl = `http://127.0.0.1:${(s.address() as AddressInfo).port}`
  }, 120_000)
  afterAll(async () => {
    if (server) {
      const s = server
      s.closeAllConnections()
      await new Promise((resolve) => s.close(resolve))
    }
    await store?.close()
    await reference?.stop()
    await cluster?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  }, 60_000)
  runConformanceTests(config)
})
