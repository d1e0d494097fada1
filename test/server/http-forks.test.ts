// Contract: §15 conflicts resolved without loss — connect's onConflict 'fork' (docs/CONTRACT.md)
// Devices are fs stores in this process (their engines in worker threads, as openStore makes
// them); the server is a real node:http server on 127.0.0.1 over a real store, fs and
// PostgreSQL. The scenarios are in test/support/forks.ts (Chromium devices run them too).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'
import { connect, serve, type Cleanups } from '../support/sync-server'
import { expectConflictForked, expectForkWaitsForWriter, expectReportOnly, type ForkDevices } from '../support/forks'

let dir: string
const cleanups: Cleanups = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-http-forks-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function open(name: string): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name) })
  cleanups.push(() => store.close())
  return store
}

async function devices(serverStore: () => Promise<Store>): Promise<ForkDevices> {
  const server = await serverStore()
  const http = await serve(server, cleanups)
  return { server, a: await open('a'), b: await open('b'), connect: (store, options = {}) => connect(store, http.url, 'user1', cleanups, options) }
}

function forksOver(serverStore: () => Promise<Store>) {
  it("two devices wrote at one seq while apart: the server's history keeps the id, the other's events move to a fork that every store gets; an open view hears meta.reset", async () => {
    await expectConflictForked(await devices(serverStore))
  })
  it('the move waits while the session is open for writing here, and takes what was written meanwhile', async () => {
    await expectForkWaitsForWriter(await devices(serverStore))
  })
  it("onConflict 'report' moves nothing", async () => {
    await expectReportOnly(await devices(serverStore))
  })
}

describe('conflicts resolved by forks, server over fs', () => {
  forksOver(() => open('server'))
})

describe.skipIf(!postgresBin())('conflicts resolved by forks, server over PostgreSQL', () => {
  let cluster: PgCluster
  let url: string
  let n = 0
  beforeAll(async () => {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    url = await cluster.createDatabase('forks')
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })
  forksOver(async () => {
    const store = await openStore({ storage: 'postgres', url, schema: `forks${process.pid}x${n++}` })
    cleanups.push(() => store.close())
    return store
  })
})
