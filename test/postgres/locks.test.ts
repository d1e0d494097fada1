// PostgreSQL write leases (src/backends/postgres/locks.ts) on a real throwaway cluster: one holder per
// session, enforced by the database across processes; a lease renewed stays past many ttl
// periods; a SIGKILLed holder's lease is taken over once it expires, with a new token, so the
// old holder's fence finds no row; a lease lost is reported (onLost) and its dead token keeps
// fencing; several processes racing for the same sessions get exactly one holder each, by the
// rows and by their own reports; a server that cannot be reached is STORAGE_UNAVAILABLE.
import { createServer } from 'node:net'
import postgres, { type Sql } from 'postgres'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DRIVER_OPTIONS } from '../../src/backends/postgres/driver-types'
import { createPostgresLocks, type PostgresLocks } from '../../src/backends/postgres/locks'
import { expectCode, until } from '../support/helpers'
import { spawnFixture, type Child } from '../support/fixture-process'
import { createSchemaV1 } from '../support/pg-schema'
import { startPgProxy } from '../support/pg-proxy'
import { startCluster, type PgCluster } from '../support/postgres'

const TTL = 1500
let cluster: PgCluster
let sql: Sql
let schema: string
const children: Child[] = []
const opened: PostgresLocks[] = []

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const locksFor = (o: { owner?: string; onLost?: (id: string) => void; ttlMs?: number } = {}) => {
  const l = createPostgresLocks({ sql, schema, ttlMs: TTL, ...o })
  opened.push(l)
  return l
}
const rows = () =>
  sql.unsafe<{ session_id: string; token: string; owner: string }[]>(`SELECT session_id, token::text, owner FROM "${schema}".leases ORDER BY session_id`)
/** The adapter's fence: does a transaction guarded by this token find the lease? */
const fenceFinds = (id: string, token: string) =>
  sql.begin(async (tx) => (await tx.unsafe(`SELECT 1 FROM "${schema}".leases WHERE session_id = $1 AND token = $2 FOR SHARE`, [id, token])).length === 1)

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  sql = postgres(cluster.url, { ...DRIVER_OPTIONS, max: 10, onnotice: () => {} }) // as openStore makes its pools
})
afterAll(async () => {
  await sql?.end({ timeout: 1 })
  await cluster?.stop()
})
beforeEach(async () => {
  schema = await createSchemaV1(sql, 'locks')
})
afterEach(async () => {
  for (const c of children.splice(0)) c.process.kill('SIGKILL')
  for (const l of opened.splice(0)) await l.close()
})

describe('one engine', () => {
  it('acquires, refuses a second writer with SESSION_LOCKED naming the session, releases', async () => {
    const a = locksFor({ owner: 'engine-a' })
    const b = locksFor({ owner: 'engine-b' })
    expect(await a.isHeld('s1')).toBe(false)
    const release = await a.acquire('s1')
    const token = a.tokenOf('s1')!
    expect(token).toMatch(/^\d+$/)
    expect(await rows()).toEqual([{ session_id: 's1', token, owner: 'engine-a' }])
    expect(await a.isHeld('s1')).toBe(true)
    expect(await b.isHeld('s1')).toBe(true)

    // Another engine, and this one again: refused, and the lease row is untouched.
    const err = await expectCode(b.acquire('s1'), 'SESSION_LOCKED')
    expect(err.message).toContain('s1')
    await expectCode(a.acquire('s1'), 'SESSION_LOCKED')
    expect(b.tokenOf('s1')).toBeUndefined()
    expect(await rows()).toEqual([{ session_id: 's1', token, owner: 'engine-a' }])

    await release()
    await release() // twice is once
    expect(a.tokenOf('s1')).toBeUndefined()
    expect(await rows()).toEqual([])
    expect(await b.isHeld('s1')).toBe(false)

    const releaseB = await b.acquire('s1')
    const tokenB = b.tokenOf('s1')!
    expect(BigInt(tokenB)).toBeGreaterThan(BigInt(token))
    expect(await rows()).toEqual([{ session_id: 's1', token: tokenB, owner: 'engine-b' }])
    expect(await fenceFinds('s1', token)).toBe(false)
    expect(await fenceFinds('s1', tokenB)).toBe(true)
    await releaseB()
    expect(await rows()).toEqual([])
  })

  it('two acquires of one session at once in one engine: one wins', async () => {
    const a = locksFor()
    const results = await Promise.allSettled([a.acquire('s'), a.acquire('s'), a.acquire('s')])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    for (const r of results) if (r.status === 'rejected') expect((r.reason as { code: string }).code).toBe('SESSION_LOCKED')
    expect(await rows()).toHaveLength(1)
  })

  it('renewals keep a lease alive past several ttl periods', async () => {
    const a = locksFor({ owner: 'a' })
    const b = locksFor({ owner: 'b' })
    await a.acquire('s')
    const token = a.tokenOf('s')!
    for (let i = 0; i < 4; i++) {
      await sleep(TTL)
      await expectCode(b.acquire('s'), 'SESSION_LOCKED')
    }
    expect(await rows()).toEqual([{ session_id: 's', token, owner: 'a' }])
    const [row] = await sql.unsafe<{ left: number }[]>(`SELECT extract(epoch FROM expires_at - now()) * 1000 AS left FROM "${schema}".leases`)
    expect(Number(row!.left)).toBeGreaterThan(TTL / 3) // renewed within the last beat or two
  })

  it('a lease lost (deleted, or expired and taken over) fires onLost; its dead token fences appends off', async () => {
    const lost: string[] = []
    const a = locksFor({ owner: 'a', onLost: (id) => lost.push(id) })
    const b = locksFor({ owner: 'b' })
    await a.acquire('gone')
    await a.acquire('stolen')
    await a.acquire('kept')
    const tGone = a.tokenOf('gone')!
    const tStolen = a.tokenOf('stolen')!

    await sql.unsafe(`DELETE FROM "${schema}".leases WHERE session_id = 'gone'`)
    // Expired (as if renewals had stopped), then taken over by b before a's next beat.
    await sql.unsafe(`UPDATE "${schema}".leases SET expires_at = now() - interval '1 ms' WHERE session_id = 'stolen'`)
    const releaseB = await b.acquire('stolen')
    const tB = b.tokenOf('stolen')!
    expect(tB).not.toBe(tStolen)

    const t0 = Date.now()
    while (lost.length < 2 && Date.now() - t0 < TTL * 2) await sleep(20)
    expect(lost.sort()).toEqual(['gone', 'stolen'])
    // The dead tokens stay, so the adapter's fence refuses appends; they match no row.
    expect(a.tokenOf('gone')).toBe(tGone)
    expect(a.tokenOf('stolen')).toBe(tStolen)
    expect(await fenceFinds('gone', tGone)).toBe(false)
    expect(await fenceFinds('stolen', tStolen)).toBe(false)
    expect(await fenceFinds('stolen', tB)).toBe(true)
    expect(await fenceFinds('kept', a.tokenOf('kept')!)).toBe(true)

    // a cannot take it back while b holds it; a's isHeld does not count its lost lease.
    await expectCode(a.acquire('stolen'), 'SESSION_LOCKED')
    expect(a.tokenOf('stolen')).toBe(tStolen)
    expect(await a.isHeld('gone')).toBe(false)
    // Releasing a lost lease does not touch b's.
    await a.close()
    expect((await rows()).map((r) => [r.session_id, r.token])).toEqual([['stolen', tB]])
    await releaseB()
    expect(lost).toHaveLength(2) // kept was never lost
  })

  it('bad options are INVALID_ARGUMENT before any SQL runs', async () => {
    expect(() => createPostgresLocks({ sql, schema: 'Bad"; DROP TABLE x; --' })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(() => createPostgresLocks({ sql, schema, ttlMs: 0 })).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(await rows()).toEqual([])
  })
})

describe('across processes', () => {
  it('a SIGKILLed holder keeps its lease until the ttl, then it is taken over with a new token; the old token fences nothing', async () => {
    const holder = spawnFixture('pg-lease-holder.ts', [cluster.url, schema, String(TTL), 'k1', 'k2'])
    children.push(holder)
    const { pid, tokens } = JSON.parse(await holder.line()) as { pid: number; tokens: Record<string, string> }
    expect((await rows()).map((r) => [r.session_id, r.token, r.owner])).toEqual([
      ['k1', tokens.k1, `holder:${pid}`],
      ['k2', tokens.k2, `holder:${pid}`],
    ])

    const me = locksFor({ owner: 'me' })
    // Alive and renewing: refused for longer than one ttl.
    for (let i = 0; i < 3; i++) {
      await expectCode(me.acquire('k1'), 'SESSION_LOCKED')
      await sleep(TTL / 2)
    }
    holder.process.kill('SIGKILL')
    await holder.exited
    const killedAt = Date.now()
    await expectCode(me.acquire('k1'), 'SESSION_LOCKED') // not the process's death: the lease decides
    let waited = 0
    for (;;) {
      try {
        await me.acquire('k1')
        waited = Date.now() - killedAt
        break
      } catch (err) {
        expect((err as { code: string }).code).toBe('SESSION_LOCKED')
        if (Date.now() - killedAt > TTL * 3) throw new Error('never taken over')
        await sleep(25)
      }
    }
    console.log(`lease of a SIGKILLed holder taken over ${waited} ms after the kill (ttl ${TTL} ms)`)
    expect(waited).toBeLessThan(TTL + 500)
    const mine = me.tokenOf('k1')!
    expect(BigInt(mine)).toBeGreaterThan(BigInt(tokens.k2!))
    expect(await fenceFinds('k1', tokens.k1!)).toBe(false)
    const stale = await sql.unsafe(`UPDATE "${schema}".leases SET owner = owner WHERE session_id = 'k1' AND token = $1`, [tokens.k1!])
    expect(stale.count).toBe(0)
    expect(await fenceFinds('k1', mine)).toBe(true)
    expect((await rows()).find((r) => r.session_id === 'k1')).toEqual({ session_id: 'k1', token: mine, owner: 'me' })
    await me.acquire('k2') // expired too
  })

  it('4 processes racing for the same 20 sessions, round after round: exactly one holder per session', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `race-${i}`)
    const racers = Array.from({ length: 4 }, () => spawnFixture('pg-lease-racer.ts', [cluster.url, schema, String(TTL)]))
    children.push(...racers)
    for (const r of racers) expect(JSON.parse(await r.line())).toEqual({ ready: true })
    const seenTokens = new Set<string>()
    const wins: number[] = [0, 0, 0, 0]
    for (let round = 0; round < 8; round++) {
      // Each racer's own order, so that no one always goes first.
      for (const r of racers) r.send(`go ${round} ${[...ids].sort(() => Math.random() - 0.5).join(',')}`)
      const reports = (await Promise.all(racers.map((r) => r.line()))).map(
        (l) =>
          JSON.parse(l) as {
            round: number
            owner: string
            won: Record<string, string>
            lockedCount: number
            errors: string[]
          },
      )
      const holderOf = new Map<string, { owner: string; token: string }>()
      reports.forEach((rep, i) => {
        expect(rep.round).toBe(round)
        expect(rep.errors).toEqual([])
        expect(Object.keys(rep.won).length + rep.lockedCount).toBe(ids.length)
        wins[i]! += Object.keys(rep.won).length
        for (const [id, token] of Object.entries(rep.won)) {
          expect(holderOf.has(id), `${id} won twice in round ${round}`).toBe(false)
          holderOf.set(id, { owner: rep.owner, token })
        }
      })
      expect([...holderOf.keys()].sort()).toEqual([...ids].sort())
      // The rows say the same: one per session, the winner's token and owner.
      const now = await rows()
      expect(now).toHaveLength(ids.length)
      for (const row of now) {
        expect({ owner: row.owner, token: row.token }).toEqual(holderOf.get(row.session_id))
        expect(seenTokens.has(row.token)).toBe(false)
        seenTokens.add(row.token)
      }
      if (round % 2 === 0) {
        for (const r of racers) r.send('release')
        for (const r of racers) expect(JSON.parse(await r.line())).toEqual({ done: true })
        expect(await rows()).toEqual([])
      } else {
        // As if every holder crashed: their leases stay, unrenewed; expire them for the next
        // round, which then takes them over (the ON CONFLICT … WHERE expired path) in a race.
        for (const r of racers) r.send('abandon')
        for (const r of racers) expect(JSON.parse(await r.line())).toEqual({ done: true })
        expect(await rows()).toHaveLength(ids.length)
        await sql.unsafe(`UPDATE "${schema}".leases SET expires_at = now() - interval '1 ms'`)
      }
    }
    console.log(`race: sessions won per process over 8 rounds × 20 sessions: ${wins.join(', ')}`)
    expect(wins.reduce((a, b) => a + b)).toBe(8 * ids.length)
  })
})

describe('an unreachable server', () => {
  it('is STORAGE_UNAVAILABLE naming the session, for acquire and isHeld', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number }
        s.close(() => resolve(port))
      })
    })
    const nowhere = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { ...DRIVER_OPTIONS, connect_timeout: 2, onnotice: () => {} })
    try {
      const l = createPostgresLocks({ sql: nowhere, schema })
      const err = await expectCode(l.acquire('far'), 'STORAGE_UNAVAILABLE')
      expect(err.message).toContain('far')
      await expectCode(l.isHeld('far'), 'STORAGE_UNAVAILABLE')
      expect(l.tokenOf('far')).toBeUndefined()
      await expectCode(l.acquire('far'), 'STORAGE_UNAVAILABLE') // not SESSION_LOCKED: nothing is held here
    } finally {
      await nowhere.end({ timeout: 0 })
    }
  })

  it('a server that lets us in and then never answers: acquire, isHeld and a release fail by the deadline, and close returns', async () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '10' as unknown as number]) {
      expect(() => createPostgresLocks({ sql, schema, deadlineMs: bad }), String(bad)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
    const proxy = await startPgProxy(cluster.port)
    let closed = 0
    // biome-ignore lint/complexity/noBannedTypes: `{}` is the driver's own default for its custom types
    const far = postgres(proxy.url(), { ...DRIVER_OPTIONS, max: 1, onnotice: () => {}, onclose: () => closed++ } as postgres.Options<{}>)
    try {
      const l = createPostgresLocks({ sql: far, schema, ttlMs: TTL, deadlineMs: 500 })
      const release = await l.acquire('held')
      proxy.mode = 'hold-first-statement'
      proxy.cut()
      await until(() => closed > 0) // the driver saw its connection go: the next statement makes a new one
      const err = await expectCode(l.acquire('hung'), 'STORAGE_UNAVAILABLE')
      expect(err.message).toMatch(/no answer within 500 ms.*"hung"/)
      expect(l.tokenOf('hung')).toBeUndefined()
      await expectCode(l.isHeld('hung'), 'STORAGE_UNAVAILABLE')
      await release() // its DELETE gets no answer: the lease is left to expire
      await l.close()
      expect(proxy.stats.held).toBeGreaterThan(0)
    } finally {
      await far.end({ timeout: 0 })
      await proxy.close()
    }
  })

  it('a stopped server: STORAGE_UNAVAILABLE, and the same locks work again once it is back; a held lease survives', async () => {
    const a = locksFor({ owner: 'a' })
    await a.acquire('before')
    const token = a.tokenOf('before')!
    await cluster.stopServer('fast')
    try {
      await expectCode(a.acquire('during'), 'STORAGE_UNAVAILABLE')
      await expectCode(a.isHeld('during'), 'STORAGE_UNAVAILABLE')
    } finally {
      await cluster.startServer()
    }
    const release = await a.acquire('during')
    expect(await a.isHeld('during')).toBe(true)
    // The lease held through the outage is still ours (renewed by token) once renewals resume.
    await sleep(TTL)
    expect(await fenceFinds('before', token)).toBe(true)
    await release()
  })
})
