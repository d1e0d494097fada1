// PostgreSQL across processes, through the public openStore only (each other process runs
// test/fixtures/store-client.ts): one writer per session among racing processes; a SIGKILLed
// holder's lease taken over once it expires; fencing end to end (a writer frozen past its lease
// whose session was taken over cannot append when it wakes); observers in another process follow
// appends within a bound (latency figures printed); a writer SIGKILLed mid-append loses nothing
// it was told was stored; the server stopped mid-run answers STORAGE_UNAVAILABLE in bounded time
// and the same store works again once it is back, its handles and subscribers intact.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createPostgresAdapter } from '../../src/backends/postgres'
import { openStore, type Session, type Store } from '../../src/index-node'
import { spawnFixture, type Child } from '../support/fixture-process'
import { expectCode, readAll } from '../support/helpers'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
let url: string
let schema: string
let n = 0
const children: Child[] = []
const stores: Store[] = []

beforeAll(async () => {
  // fsync on: the server is stopped with 'immediate' below, and acked events must survive it.
  cluster = await startCluster()
  url = await cluster.createDatabase('processes')
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})
beforeEach(() => {
  schema = `p${process.pid}_${n++}`
})
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.process.exitCode === null && c.process.signalCode === null) {
      c.process.kill('SIGCONT')
      c.process.kill('SIGKILL')
    }
    await c.exited
  }
  for (const s of stores.splice(0)) await s.close().catch(() => {})
})

/** Another process on this test's store, its leases living `ttlMs` without renewal. */
async function client(ttlMs: number, worker = false): Promise<Child> {
  const c = spawnFixture('store-client.ts', [JSON.stringify({ storage: 'postgres', url, schema, lease: { ttlMs }, worker })])
  children.push(c)
  expect(await c.line()).toBe('ready')
  return c
}

async function store(options: { ttlMs?: number; worker?: boolean; timeouts?: { connectMs?: number; queryMs?: number } } = {}): Promise<Store> {
  const s = await openStore({
    storage: 'postgres',
    url,
    schema,
    worker: options.worker ?? false,
    lease: { ttlMs: options.ttlMs ?? 10_000 },
    ...(options.timeouts ? { timeouts: options.timeouts } : {}),
  })
  stores.push(s)
  return s
}

/** The stored events of a session, read by an adapter of its own. */
async function stored(id: string) {
  const a = createPostgresAdapter({ url, schema })
  try {
    return await readAll(a, id)
  } finally {
    await a.close()
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const contiguous = (seqs: number[]) => seqs.every((s, i) => s === i)
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** `open id` in c until it wins, within `withinMs`; returns how long it took. */
async function openUntilWon(c: Child, id: string, withinMs: number): Promise<number> {
  const t0 = Date.now()
  for (;;) {
    c.send(`open ${id} 0`)
    const answer = await c.line()
    if (answer === `won ${id}`) return Date.now() - t0
    expect(answer).toBe(`locked ${id}`)
    if (Date.now() - t0 > withinMs) throw new Error(`${id} still locked after ${withinMs} ms`)
    await sleep(50)
  }
}

/** openSession(id) on `s` until it is no longer SESSION_LOCKED, within `withinMs` of `since`. */
async function openOnceFree(s: Store, id: string, since: number, withinMs: number): Promise<Session> {
  for (;;) {
    try {
      return await s.openSession(id)
    } catch (err) {
      expect((err as { code?: string }).code).toBe('SESSION_LOCKED')
      expect(Date.now() - since).toBeLessThan(withinMs)
      await sleep(50)
    }
  }
}

describe('postgres across processes (openStore)', () => {
  it('lease and timeouts are checked before anything connects: INVALID_ARGUMENT for bad values or another storage, and no schema is created', async () => {
    const base = { storage: 'postgres' as const, url, schema, worker: false }
    for (const lease of [{ ttlMs: 29 }, { ttlMs: 1.5 }, { ttlMs: '1000' }, { ttlMs: 86_400_001 }, { ttl: 1000 }, 5]) {
      await expectCode(openStore({ ...base, lease } as never), 'INVALID_ARGUMENT')
    }
    for (const timeouts of [{ connectMs: 0 }, { queryMs: 3_600_001 }, { queryMs: NaN }, { statementMs: 5 }]) {
      await expectCode(openStore({ ...base, timeouts } as never), 'INVALID_ARGUMENT')
    }
    await expectCode(openStore({ storage: 'memory', lease: { ttlMs: 1000 } }), 'INVALID_ARGUMENT')
    await expectCode(openStore({ storage: 'memory', timeouts: { queryMs: 1000 } }), 'INVALID_ARGUMENT')
    expect(await cluster.psql(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = '${schema}'`, 'processes')).toBe('0')
    // Good values open the store and reach the leases: a 300 ms lease row ends within 300 ms of
    // now (the default would be 10 s), and is released with its session.
    const st = await store({ ttlMs: 300, timeouts: { connectMs: 1_000, queryMs: 1_000 } })
    const v = await st.createSession({ id: 'v' })
    expect(await cluster.psql(`SELECT expires_at - now() <= interval '300 milliseconds' FROM "${schema}".leases`, 'processes')).toBe('t')
    await v.close()
    expect(await cluster.psql(`SELECT count(*) FROM "${schema}".leases`, 'processes')).toBe('0')
  })

  it('one writer per session: 4 processes race for 10 sessions over 3 rounds; one wins each, the others get SESSION_LOCKED; the winner appends at the right seq and, once it closes, another continues', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `race${i}`)
    const setup = await store()
    for (const id of ids) await (await setup.createSession({ id })).close()
    const racers = await Promise.all([0, 1, 2, 3].map(() => client(10_000)))
    const winners = new Map<number, number>()
    for (let round = 0; round < 3; round++) {
      for (const id of ids) {
        const startAt = Date.now() + 150
        for (const r of racers) r.send(`open ${id} ${startAt}`)
        const answers = await Promise.all(racers.map((r) => r.line()))
        const won = answers.flatMap((a, i) => (a === `won ${id}` ? [i] : []))
        expect(won, answers.join(', ')).toHaveLength(1)
        expect(answers.filter((a) => a === `locked ${id}`)).toHaveLength(3)
        const w = racers[won[0]!]!
        winners.set(won[0]!, (winners.get(won[0]!) ?? 0) + 1)
        // In the meantime, this process cannot write it either.
        await expectCode(setup.openSession(id), 'SESSION_LOCKED')
        w.send(`append ${JSON.stringify({ type: 'app/round', data: { round, by: won[0] } })}`)
        expect((await w.line()).split(' ').slice(0, 2)).toEqual(['ack', String(round)])
        w.send('release')
        expect(await w.line()).toBe('released')
      }
    }
    for (const id of ids) {
      const events = await stored(id)
      expect(events.map((e) => e.seq)).toEqual([0, 1, 2])
      expect(events.map((e) => (e.data as { round: number }).round)).toEqual([0, 1, 2])
    }
    console.log(`[processes] race winners by process: ${JSON.stringify(Object.fromEntries(winners))}`)
  }, 120_000)

  it('a SIGKILLed holder: its session stays locked until its lease expires, then another process takes it over and continues at the next seq', async () => {
    const ttlMs = 1_500
    const a = await client(ttlMs)
    a.send('open s 0')
    expect(await a.line()).toBe('won s')
    a.send(`append ${JSON.stringify({ type: 'app/a', data: {} })}`)
    expect((await a.line()).startsWith('ack 0 ')).toBe(true)
    a.process.kill('SIGKILL')
    const killedAt = Date.now()
    await a.exited
    const b = await store({ ttlMs })
    await expectCode(b.openSession('s'), 'SESSION_LOCKED')
    const s = await openOnceFree(b, 's', killedAt, ttlMs + 5_000)
    const tookOverMs = Date.now() - killedAt
    // Not before the lease could have expired (the holder's last renewal was at most ttl/3 before the kill).
    expect(tookOverMs).toBeGreaterThanOrEqual(Math.floor((2 * ttlMs) / 3) - 50)
    expect(await s.append({ type: 'app/b' })).toEqual({ firstSeq: 1, lastSeq: 1 })
    expect((await stored('s')).map((e) => [e.seq, e.type])).toEqual([
      [0, 'app/a'],
      [1, 'app/b'],
    ])
    console.log(`[processes] SIGKILLed holder (ttl ${ttlMs} ms) taken over ${tookOverMs} ms after the kill`)
  }, 60_000)

  it('fencing: a writer frozen (SIGSTOP) past its lease whose session was taken over wakes (SIGCONT) to SESSION_LOCKED and writes nothing', async () => {
    const ttlMs = 1_000
    const a = await client(ttlMs)
    a.send('open s 0')
    expect(await a.line()).toBe('won s')
    a.send(`append ${JSON.stringify({ type: 'app/a', data: { n: 0 } })}`)
    expect((await a.line()).startsWith('ack 0 ')).toBe(true)
    a.process.kill('SIGSTOP')
    const b = await store({ ttlMs })
    await expectCode(b.openSession('s'), 'SESSION_LOCKED')
    await sleep(ttlMs + 500)
    const s = await b.openSession('s')
    expect(
      await s.append([
        { type: 'app/b', data: { n: 1 } },
        { type: 'app/b', data: { n: 2 } },
      ]),
    ).toEqual({ firstSeq: 1, lastSeq: 2 })
    // A wakes still believing it holds s (and may try before its next renewal notices): refused.
    a.process.kill('SIGCONT')
    a.send(`append ${JSON.stringify({ type: 'app/a', data: { n: 'late' } })}`)
    expect(await a.line()).toBe('error SESSION_LOCKED')
    a.send(`append ${JSON.stringify({ type: 'app/a', data: { n: 'later' } })}`)
    expect(await a.line()).toBe('error SESSION_LOCKED')
    expect(await s.append({ type: 'app/b', data: { n: 3 } })).toEqual({ firstSeq: 3, lastSeq: 3 })
    const events = await stored('s')
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [0, 'app/a'],
      [1, 'app/b'],
      [2, 'app/b'],
      [3, 'app/b'],
    ])
  }, 60_000)

  it('an observer in another process follows appends within the bound: latency from the writer ack to the subscriber (p50/p99 printed)', async () => {
    const count = 200
    const setup = await store()
    await (await setup.createSession({ id: 'obs' })).close()
    const writer = await client(10_000)
    const watcher = await client(10_000, true)
    writer.send('open obs 0')
    expect(await writer.line()).toBe('won obs')
    watcher.send('observe obs')
    expect((await watcher.line()).startsWith('saw ')).toBe(true) // the current value, at once
    const seen = new Map<number, number>()
    let lastSeen = -1
    const watching = (async () => {
      while (lastSeen < count - 1) {
        const [word, seq, at] = (await watcher.line()).split(' ')
        expect(word).toBe('saw')
        // A change may cover several appends: each is seen when the first snapshot covering it is.
        for (let q = lastSeen + 1; q <= Number(seq); q++) seen.set(q, Number(at))
        lastSeen = Math.max(lastSeen, Number(seq))
      }
    })()
    writer.send(`stream ${count} 10`)
    const acked = new Map<number, number>()
    for (let i = 0; i < count; i++) {
      const [word, seq, at] = (await writer.line()).split(' ')
      expect(word).toBe('ack')
      acked.set(Number(seq), Number(at))
    }
    expect(await writer.line()).toBe('streamed')
    await Promise.race([
      watching,
      sleep(10_000).then(() => {
        throw new Error(`the observer saw up to ${lastSeen} only`)
      }),
    ])
    expect([...acked.keys()]).toEqual(Array.from({ length: count }, (_, i) => i))
    // Seen before the writer printed its ack counts as 0: the notice can beat the ack home.
    const latencies = [...acked].map(([seq, at]) => Math.max(0, seen.get(seq)! - at)).sort((x, y) => x - y)
    const p50 = pct(latencies, 50)
    const p99 = pct(latencies, 99)
    console.log(
      `[processes] observer latency over ${count} appends: p50 ${p50} ms, p99 ${p99} ms, max ${latencies.at(-1)} ms, within 100 ms: ${latencies.filter((l) => l <= 100).length}/${count}`,
    )
    expect(p99).toBeLessThan(1_000)
  }, 120_000)

  it('a writer SIGKILLed mid-append loses nothing acknowledged: 5 rounds of kills at random moments, seqs contiguous, the next process takes over and continues', async () => {
    const ttlMs = 1_000
    const acked: number[] = []
    const takeovers: number[] = []
    let killedAt: number | undefined
    for (let round = 0; round < 5; round++) {
      const w = await client(ttlMs)
      await openUntilWon(w, 'k', ttlMs + 10_000)
      if (killedAt !== undefined) takeovers.push(Date.now() - killedAt)
      w.send('stream 0 0')
      const first = await w.line()
      expect(first.split(' ')[0]).toBe('ack')
      // Its first append continues where the killed one stopped (at or after what it was told).
      const firstSeq = Number(first.split(' ')[1])
      expect(firstSeq).toBeGreaterThanOrEqual(acked.length)
      acked.push(firstSeq)
      const killAt = Date.now() + 100 + Math.floor(Math.random() * 600)
      while (Date.now() < killAt) {
        const line = await Promise.race([w.line(), sleep(killAt - Date.now()).then(() => undefined)])
        if (line === undefined) break
        expect(line.split(' ')[0]).toBe('ack')
        acked.push(Number(line.split(' ')[1]))
      }
      w.process.kill('SIGKILL')
      killedAt = Date.now()
      await w.exited
      // Acks printed before the kill and not yet read are still acks.
      for (;;) {
        const line = await Promise.race([w.line().catch(() => undefined), sleep(50).then(() => undefined)])
        if (line === undefined) break
        if (line.startsWith('ack ')) acked.push(Number(line.split(' ')[1]))
      }
      const events = await stored('k')
      const seqs = events.map((e) => e.seq)
      expect(contiguous(seqs)).toBe(true)
      for (const a of acked) expect(a).toBeLessThan(seqs.length)
    }
    const last = await store({ ttlMs })
    const t0 = Date.now()
    const s = await openOnceFree(last, 'k', t0, ttlMs + 10_000)
    const length = (await stored('k')).length
    expect(await s.append({ type: 'app/after' })).toEqual({ firstSeq: length, lastSeq: length })
    expect(contiguous((await stored('k')).map((e) => e.seq))).toBe(true)
    console.log(
      `[processes] SIGKILL mid-append: ${acked.length} acked over 5 rounds, ${length} stored; next writer holding it ${takeovers.join(', ')} ms after each kill (process start included)`,
    )
  }, 180_000)

  for (const mode of ['fast', 'immediate'] as const) {
    it(`the server stopped mid-run ('${mode}'): calls fail with STORAGE_UNAVAILABLE in bounded time; once it is back the same store works (append, read, openSession), its handle and subscriber intact`, async () => {
      const timeouts = { connectMs: 2_000, queryMs: 3_000 }
      const bound = timeouts.connectMs + 2 * timeouts.queryMs + 5_000
      const st = await store({ worker: true, timeouts })
      const other = await store({ timeouts })
      const s = await st.createSession({ id: 'a' })
      expect(await s.append({ type: 'app/x' })).toEqual({ firstSeq: 0, lastSeq: 0 })
      await (await other.createSession({ id: 'b' })).close()
      const b = await other.openSession('b')
      const view = await st.observe('b')
      const seenB: number[] = []
      view.projections.subscribe((snap) => seenB.push(snap.asOfSeq))
      await cluster.stopServer(mode)
      const failures: Record<string, number> = {}
      const timed = async (name: string, call: () => Promise<unknown>) => {
        const t0 = Date.now()
        await expectCode(call(), 'STORAGE_UNAVAILABLE')
        failures[name] = Date.now() - t0
        expect(failures[name]).toBeLessThan(bound)
      }
      await timed('append', () => s.append({ type: 'app/lost' }))
      await timed('read', async () => {
        for await (const e of s.events()) void e
      })
      await timed('openSession', () => st.createSession({ id: 'c' }))
      await cluster.startServer()
      // The same store, no reopening: the handle appends at the next seq (nothing of the failed
      // append was written), reads, and a new session opens.
      expect(await s.append({ type: 'app/y' })).toEqual({ firstSeq: 1, lastSeq: 1 })
      const types: string[] = []
      for await (const e of s.events()) types.push(e.type)
      expect(types).toEqual(['app/x', 'app/y'])
      const c = await st.createSession({ id: 'c' })
      expect(await c.append({ type: 'app/z' })).toEqual({ firstSeq: 0, lastSeq: 0 })
      // The other store's writer on b, and this store's subscriber on b, both live on.
      expect(await b.append({ type: 'app/b' })).toEqual({ firstSeq: 0, lastSeq: 0 })
      const t0 = Date.now()
      while (seenB.at(-1) !== 0) {
        expect(Date.now() - t0).toBeLessThan(5_000)
        await sleep(20)
      }
      console.log(
        `[processes] server stopped '${mode}': STORAGE_UNAVAILABLE after ${JSON.stringify(failures)} ms (bound ${bound} ms); subscriber saw b's append ${Date.now() - t0} ms after it`,
      )
    }, 120_000)
  }
})
