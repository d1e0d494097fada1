// Contract: §11 errors and §13 last bullet — a PostgreSQL server that is down, starting, going
// away or hanging never crashes the app: openStore and every call answer STORAGE_UNAVAILABLE
// (a SessionfoldError), the same store works again once the server is back, and no promise is
// left unhandled anywhere (the driver's included), in this thread or in the engine's worker.
// test/support/rejections.ts fails any test here that leaves one, or whose engine thread fails.
// A real throwaway cluster (stopped and started for "down"), and in front of it a proxy
// (test/support/pg-proxy.ts) that plays, at chosen moments, a server starting up (FATAL 57P03),
// one that resets each connection at its first statement, and ones that never answer.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../src/index-node'
import { expectCode, until } from '../support/helpers'
import { startPgProxy, type PgProxy } from '../support/pg-proxy'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
let proxy: PgProxy
let schema: string
let n = 0
const stores: Store[] = []
const timeouts = { connectMs: 1_000, queryMs: 2_000 }

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  await cluster.createDatabase('down')
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})
beforeEach(async () => {
  schema = `u${process.pid}_${n++}`
  proxy = await startPgProxy(cluster.port)
})
afterEach(async () => {
  proxy.mode = 'pass'
  for (const s of stores.splice(0)) await s.close().catch(() => {})
  await proxy.close()
})

const direct = () => `postgres://postgres@127.0.0.1:${cluster.port}/down`
const open = async (url: string, worker: boolean): Promise<Store> => {
  const s = await openStore({ storage: 'postgres', url, schema, worker, timeouts })
  stores.push(s)
  return s
}
/** A store that opens and writes: the server is back for it. */
const works = async (url: string, worker: boolean, id: string) => {
  const s = await open(url, worker)
  const session = await s.createSession({ id })
  expect(await session.append({ type: 'app/back' })).toEqual({ firstSeq: 0, lastSeq: 0 })
  await s.close()
}
const modes = [false, true] as const
const name = (worker: boolean) => (worker ? 'engine in a worker' : 'engine in this thread')

describe('openStore', () => {
  it('while the server is down: STORAGE_UNAVAILABLE, in either thread; once it is up the same options open', async () => {
    await cluster.stopServer('fast')
    try {
      for (const worker of modes) {
        const err = await expectCode(openStore({ storage: 'postgres', url: direct(), schema, worker, timeouts }), 'STORAGE_UNAVAILABLE')
        expect(err.message, name(worker)).toMatch(/ECONNREFUSED|connect/)
      }
    } finally {
      await cluster.startServer()
    }
    for (const worker of modes) await works(direct(), worker, `back-${worker}`)
  })

  it('while the server is starting (FATAL 57P03): STORAGE_UNAVAILABLE saying so; opens once it has started', async () => {
    proxy.mode = 'starting'
    for (const worker of modes) {
      const err = await expectCode(open(proxy.url('down'), worker), 'STORAGE_UNAVAILABLE')
      expect(err.message, name(worker)).toContain('the database system is starting up')
    }
    proxy.mode = 'pass'
    for (const worker of modes) await works(proxy.url('down'), worker, `started-${worker}`)
  })

  it('when each connection is reset as its first statement goes (a server restarting as it lets clients in): STORAGE_UNAVAILABLE, and it opens after', async () => {
    proxy.mode = 'reset-first-statement'
    for (const worker of modes) {
      const before = proxy.stats.resets
      await expectCode(open(proxy.url('down'), worker), 'STORAGE_UNAVAILABLE')
      expect(proxy.stats.resets, name(worker)).toBeGreaterThan(before)
    }
    proxy.mode = 'pass'
    for (const worker of modes) await works(proxy.url('down'), worker, `reset-${worker}`)
  })
})

describe('an open store', () => {
  for (const worker of modes) {
    it(`whose connections are cut, then reset as they come up again: calls fail with STORAGE_UNAVAILABLE and work once the server lets them in (${name(worker)})`, async () => {
      const s = await open(proxy.url('down'), worker)
      const a = await s.createSession({ id: 'a' })
      await a.append({ type: 'app/before' })
      proxy.mode = 'reset-first-statement'
      proxy.cut()
      await expectCode(a.append({ type: 'app/lost' }), 'STORAGE_UNAVAILABLE')
      await expectCode(s.createSession({ id: 'b' }), 'STORAGE_UNAVAILABLE')
      await expectCode(s.listSessions(), 'STORAGE_UNAVAILABLE')
      expect(proxy.stats.resets).toBeGreaterThan(0)
      proxy.mode = 'pass'
      expect(await a.append({ type: 'app/after' })).toEqual({ firstSeq: 1, lastSeq: 1 })
      const b = await s.createSession({ id: 'b' })
      await b.close()
      expect((await s.listSessions()).map((h) => h.id)).toEqual(['a', 'b'])
    })
  }

  for (const state of ['silent', 'hold-first-statement'] as const) {
    it(`closes while its connections are being made to a server that ${state === 'silent' ? 'accepts and never answers' : 'lets them in and then never answers'}: the call under way rejects, close resolves within one deadline, not one a session (both threads)`, async () => {
      const open2 = await Promise.all(
        modes.map(async (worker) => {
          const s = await open(proxy.url('down'), worker)
          const [a, ...others] = await Promise.all([0, 1, 2, 3].map((i) => s.createSession({ id: `c${i}-${worker}` })))
          for (const session of [a!, ...others]) await session.append({ type: 'app/before' })
          return { s, a: a! }
        }),
      )
      proxy.mode = state
      proxy.cut()
      const started = Date.now()
      await Promise.all(
        open2.map(async ({ s, a }) => {
          const refused = expectCode(a.append({ type: 'app/pending' }), 'STORAGE_UNAVAILABLE')
          await s.close()
          await refused
        }),
      )
      // A call's deadline here is connect 1 s + 2 x statement 2 s + 5 s = 10 s. A writer's close
      // meets at most two (its checkpoint, its lease), then the pools end (5 s): about 25 s, however
      // many sessions are open. Writer after writer, as before, four of them took 95 s.
      expect(Date.now() - started).toBeLessThan(2 * 10_000 + 5_000 + 20_000) // slack for a loaded machine: 45 s, against 95 s before
      expect(state === 'silent' ? proxy.stats.connections : proxy.stats.held).toBeGreaterThan(0)
    }, 120_000)
  }

  it('closes while the server is down: its writer, its follower and their leases and listening let go; the server is left clean', async () => {
    const w = await open(direct(), false)
    const o = await open(direct(), true)
    const session = await w.createSession({ id: 'd' })
    await session.append({ type: 'app/x' })
    const view = await o.observe('d')
    let seen = -1
    view.projections.subscribe((snap) => (seen = snap.asOfSeq))
    await until(() => seen === 0, 10_000)
    await cluster.stopServer('fast')
    try {
      await Promise.all([w.close(), o.close()])
      await expectCode(session.append({ type: 'app/closed' }), 'CLOSED')
    } finally {
      await cluster.startServer()
    }
    // Nothing of ours connected again after it closed.
    expect(await cluster.psql(`SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'sessionfold%'`, 'down')).toBe('0')
  }, 60_000)
})

describe('a follower', () => {
  const follow = async (observer: Store, writer: Store, id: string) => {
    const session = await writer.createSession({ id })
    await session.append({ type: 'app/0' })
    const view = await observer.observe(id)
    const seen: number[] = []
    view.projections.subscribe((snap) => seen.push(snap.asOfSeq))
    await until(() => seen.at(-1) === 0, 10_000)
    return { session, seen }
  }

  it('across a server stopped and started: it catches up with what was written once the server is back (engine in a worker)', async () => {
    const writer = await open(direct(), false)
    const observer = await open(direct(), true)
    const { session, seen } = await follow(observer, writer, 'f')
    await cluster.stopServer('fast')
    try {
      await expectCode(session.append({ type: 'app/down' }), 'STORAGE_UNAVAILABLE')
      await new Promise((r) => setTimeout(r, 1_500)) // its polls and LISTEN fail meanwhile
    } finally {
      await cluster.startServer()
    }
    expect(await session.append({ type: 'app/1' })).toEqual({ firstSeq: 1, lastSeq: 1 })
    await until(() => seen.at(-1) === 1, 20_000)
  }, 60_000)

  for (const worker of modes) {
    it(`whose connections are reset as they come up again: the growth channel and its polls keep trying, and it catches up once let in (${name(worker)})`, async () => {
      const writer = await open(direct(), false)
      const observer = await open(proxy.url('down'), worker)
      const { session, seen } = await follow(observer, writer, 'g')
      const from = proxy.stats.statements.length
      proxy.mode = 'reset-first-statement'
      proxy.cut()
      // The LISTEN connection and a poll's (every second), each reset at its first statement.
      const reset = () => proxy.stats.statements.slice(from)
      await until(() => reset().some((q) => q.startsWith('LISTEN')) && reset().some((q) => !q.startsWith('LISTEN')), 15_000)
      expect(await session.append({ type: 'app/1' })).toEqual({ firstSeq: 1, lastSeq: 1 })
      await new Promise((r) => setTimeout(r, 300))
      expect(seen.at(-1)).toBe(0) // its notice went to nobody, and no poll got through
      proxy.mode = 'pass'
      await until(() => seen.at(-1) === 1, 20_000)
    }, 60_000)
  }
})
