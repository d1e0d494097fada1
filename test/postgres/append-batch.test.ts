// The append's statement (src/backends/postgres/schema.ts) has two paths since schema version 6: a
// group of one append goes through scalars, a group of several through arrays; and two
// functions: append_group (the events' JSON as one text of lines), which this version calls,
// and append_batch (a text[]), which older processes still open call. Each case here is sent
// alone and in a group behind an append to a third session, through each function, on sessions
// in the same state. All must answer the same codes and lengths, write the same rows, lengths
// and feed rows, and announce the same growth notice, on a real server.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createPostgresAdapter } from '../../src/backends/postgres'
import { openStore } from '../../src/index-node'
import { growthChannelOf } from '../../src/backends/postgres/channel'
import type { StorageAdapter } from '../../src/storage/types'
import { evs, rootHeader } from '../support/helpers'
import { startCluster, type PgCluster } from '../support/postgres'

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

const SCHEMA = 'ab'
let cluster: PgCluster
let sql: postgres.Sql
let adapter: StorageAdapter
let dbUrl: string
const heard: string[] = []

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off', log_min_duration_statement: '0' } })
  const url = (dbUrl = await cluster.createDatabase('append_batch'))
  adapter = createPostgresAdapter({ url, schema: SCHEMA })
  await adapter.listIds() // migrates
  sql = postgres(url, { max: 1, onnotice: () => {} })
})
afterAll(async () => {
  await sql?.end({ timeout: 5 })
  await adapter?.close?.()
  await cluster?.stop()
})

interface Call {
  id: string
  token: string | null
  from: number
  bodies: string[]
}

type Fn = 'append_batch' | 'append_group'
const FNS: Fn[] = ['append_batch', 'append_group']

/** `fn` called as the appender calls it (append.ts), its answer. */
async function appendBatch(fn: Fn, calls: Call[]): Promise<{ codes: number[]; seen: (string | null)[] }> {
  const ids = [...new Set(calls.map((c) => c.id))].sort()
  const at = (id: string) => ids.indexOf(id) + 1
  const tokenOf = (id: string) => calls.find((c) => c.id === id)!.token
  const [row] = (await sql.unsafe(
    `SELECT codes, seen FROM ${SCHEMA}.${fn}($1::text[], $2::int8[], $3::text[], $4::int4[], $5::int8[], $6::int4[], $7::int4[], $8::int8[], $9::${fn === 'append_group' ? 'text' : 'text[]'}, false)`,
    [
      ids,
      ids.map(tokenOf),
      ids.map((id) => growthChannelOf(SCHEMA, id)),
      calls.map((c) => at(c.id)),
      calls.map((c) => c.from),
      calls.map((c) => c.bodies.length),
      calls.flatMap((c, i) => c.bodies.map(() => i + 1)),
      calls.flatMap((c) => c.bodies.map((_, k) => c.from + k)),
      fn === 'append_group' ? calls.flatMap((c) => c.bodies).join('\n') : calls.flatMap((c) => c.bodies),
    ],
  )) as { codes: number[]; seen: (string | null)[] }[]
  return row!
}

/** What the store holds of session `id`, with `id` written as `<id>`. */
async function stateOf(id: string): Promise<string> {
  const [row] = (await sql.unsafe(
    `SELECT (SELECT length FROM ${SCHEMA}.sessions WHERE id = $1) AS length,
       (SELECT coalesce(string_agg(seq || '=' || body, ' ' ORDER BY seq), '') FROM ${SCHEMA}.events WHERE session_id = $1) AS events,
       (SELECT coalesce(string_agg(from_seq || '-' || to_seq, ' ' ORDER BY xid, pos), '') FROM ${SCHEMA}.feed WHERE session_id = $1) AS feed`,
    [id],
  )) as Record<string, unknown>[]
  return JSON.stringify(row).replaceAll(id, '<id>')
}

const bodiesOf = (id: string, from: number, count: number, text = 'x') => evs(id, from, count, (seq) => ({ seq, text })).map((e) => e.json)
let made = 0

/** Two sessions in the same state (`length` events, a lease with token 7 when `leased`), and a third to group with. */
async function pair(length: number, leased: boolean): Promise<[string, string, string]> {
  const n = ++made
  const ids: [string, string, string] = [`alone-${n}`, `grouped-${n}`, `other-${n}`]
  for (const id of ids) {
    await adapter.createSession(rootHeader(id))
    if (length > 0) await adapter.append(id, evs(id, 0, length))
    if (leased) await sql.unsafe(`INSERT INTO ${SCHEMA}.leases VALUES ($1, 7, 'me', now() + interval '1 hour')`, [id])
  }
  for (const id of ids) await sql.listen(growthChannelOf(SCHEMA, id), (payload) => heard.push(payload))
  return ids
}

/** The notices heard for `id` since `mark`, with `id` written as `<id>`. */
const noticesOf = (id: string, mark: number) =>
  heard
    .slice(mark)
    .filter((p) => p.startsWith(`${id}:`))
    .map((p) => p.replaceAll(id, '<id>'))

describe('append_group and append_batch: one append alone answers and writes as it does in a group', () => {
  const cases: { name: string; length: number; leased: boolean; call: (id: string) => Omit<Call, 'id'>; code: number }[] = [
    { name: 'written, its events in the notice', length: 2, leased: false, call: (id) => ({ token: null, from: 2, bodies: bodiesOf(id, 2, 3) }), code: 0 },
    {
      name: 'written, too large for the notice',
      length: 1,
      leased: false,
      call: (id) => ({ token: null, from: 1, bodies: bodiesOf(id, 1, 2, 'y'.repeat(4000)) }),
      code: 0,
    },
    { name: 'written under its lease', length: 0, leased: true, call: (id) => ({ token: '7', from: 0, bodies: bodiesOf(id, 0, 1) }), code: 0 },
    { name: 'no events: nothing written, nothing announced', length: 2, leased: false, call: () => ({ token: null, from: 0, bodies: [] }), code: 0 },
    { name: 'a lease held with another token', length: 1, leased: true, call: (id) => ({ token: '8', from: 1, bodies: bodiesOf(id, 1, 1) }), code: 2 },
    { name: 'a lease asked for where there is none', length: 1, leased: false, call: (id) => ({ token: '7', from: 1, bodies: bodiesOf(id, 1, 1) }), code: 2 },
    {
      name: 'a first seq that does not continue the log',
      length: 3,
      leased: false,
      call: (id) => ({ token: null, from: 2, bodies: bodiesOf(id, 2, 2) }),
      code: 3,
    },
  ]
  for (const c of cases) {
    it(c.name, async () => {
      const seen: { state: string; notices: string[] }[] = []
      for (const fn of FNS) {
        const [alone, grouped, other] = await pair(c.length, c.leased)
        const mark = heard.length
        const one = await appendBatch(fn, [{ id: alone, ...c.call(alone) }])
        const group = await appendBatch(fn, [
          { id: other, token: c.leased ? '7' : null, from: c.length, bodies: bodiesOf(other, c.length, 1) },
          { id: grouped, ...c.call(grouped) },
        ])
        expect(one.codes.map(Number)).toEqual([c.code])
        expect(group.codes.map(Number)).toEqual([0, c.code])
        expect(one.seen.map(Number)).toEqual([c.length])
        expect(group.seen.map(Number)).toEqual([c.length, c.length])
        const state = await stateOf(alone)
        expect(state).toBe(await stateOf(grouped))
        const written = c.code === 0 && c.call(alone).bodies.length > 0
        await vi.waitFor(() => expect(noticesOf(other, mark)).toHaveLength(1))
        if (written) await vi.waitFor(() => expect(noticesOf(alone, mark)).toHaveLength(1))
        expect(noticesOf(alone, mark)).toEqual(noticesOf(grouped, mark))
        expect(noticesOf(alone, mark)).toHaveLength(written ? 1 : 0)
        seen.push({ state, notices: noticesOf(alone, mark) })
      }
      // And the two functions agree.
      expect(seen[1]).toEqual(seen[0])
    })
  }

  it.each(FNS)('no such session (%s)', async (fn) => {
    const [, , other] = await pair(0, false)
    const one = await appendBatch(fn, [{ id: `missing-1-${fn}`, token: null, from: 0, bodies: bodiesOf('missing-1', 0, 1) }])
    const group = await appendBatch(fn, [
      { id: `missing-2-${fn}`, token: null, from: 0, bodies: bodiesOf('missing-2', 0, 1) },
      { id: other, token: null, from: 0, bodies: bodiesOf(other, 0, 1) },
    ])
    expect(one.codes.map(Number)).toEqual([1])
    // Both answer the same "no length" (the appender reads seen only for code 3).
    expect(one.seen).toEqual([group.seen[0]])
    expect(group.codes.map(Number)).toEqual([1, 0])
    for (const id of [`missing-1-${fn}`, `missing-2-${fn}`]) expect(await stateOf(id)).toBe(JSON.stringify({ length: null, events: '', feed: '' }))
  })

  it('append_group keeps every event of a group whole: lines of JSON with escaped line breaks, quotes, backslashes and text of every width', async () => {
    const [a, b] = await pair(0, false)
    const tricky = ['a\nb', 'a\\nb', '"quoted"', 'back\\slash', '\r\n', '日本語 🙂', '', '{"seq":1}']
    const bodies = (id: string) => tricky.map((text, i) => evs(id, i, 1, () => ({ text }))[0]!.json.replace(`"seq":0`, `"seq":${i}`))
    const answer = await appendBatch('append_group', [
      { id: a, token: null, from: 0, bodies: bodies(a).slice(0, 3) },
      { id: b, token: null, from: 0, bodies: bodies(b) },
      { id: a, token: null, from: 3, bodies: bodies(a).slice(3) },
    ])
    expect(answer.codes.map(Number)).toEqual([0, 0, 0])
    for (const id of [a, b]) {
      const rows = (await sql.unsafe(`SELECT seq, body FROM ${SCHEMA}.events WHERE session_id = $1 ORDER BY seq`, [id])) as { seq: string; body: string }[]
      expect(rows.map((r) => [Number(r.seq), r.body])).toEqual(bodies(id).map((body, i) => [i, body]))
      expect(rows.map((r) => (JSON.parse(r.body) as { data: { text: string } }).data.text)).toEqual(tricky)
    }
  })
})

describe('the adapter', () => {
  it('refuses an event whose JSON is not one line with INVALID_ARGUMENT, before any SQL: nothing written', async () => {
    const [id] = await pair(2, false)
    const before = await stateOf(id)
    const [good] = evs(id, 2, 1)
    const broken = { event: good!.event, json: good!.json.replace(',', ',\n') }
    const err = await adapter.append(id, [good!, { ...broken, event: { ...broken.event, seq: 3 }, json: broken.json.replace('"seq":2', '"seq":3') }]).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', sessionId: id, seq: 3 })
    expect(await stateOf(id)).toBe(before)
    await adapter.append(id, [good!])
    expect(await stateOf(id)).not.toBe(before)
  })
})

describe('connections', () => {
  it("a writer's appends go through one connection of their own, named in pg_stat_activity; checkpoints through the pool beside it", async () => {
    const [id] = await pair(0, false)
    const row = { witness: rootHeader(id), rows: {} } as never
    for (let i = 0; i < 12; i++) await Promise.all([adapter.append(id, evs(id, i, 1)), adapter.putCheckpoint(id, row), adapter.getSession(id)])
    const log = readFileSync(join(dirname(cluster.dataDir), 'server.log'), 'utf8')
    const pidsOf = (what: RegExp) =>
      new Set([...log.matchAll(/\[(\d+)\] LOG: {2}duration: [\d.]+ ms {2}execute [^\n]*/g)].filter((m) => what.test(m[0])).map((m) => m[1]))
    // The adapter's statements name the schema quoted ("ab"); this file's own calls do not.
    const appends = pidsOf(/"ab"\.append_group/)
    expect(appends.size).toBe(1)
    const others = pidsOf(/INSERT INTO "ab"\.checkpoints|FROM "ab"\.sessions/)
    expect(others.size).toBeGreaterThan(0)
    expect([...others].filter((p) => appends.has(p))).toEqual([])
    const names = (await sql.unsafe(
      `SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'sessionfold%' GROUP BY 1 ORDER BY 1`,
    )) as { name: string; n: number }[]
    expect(names.find((r) => r.name === 'sessionfold appends')?.n).toBe(1)
    expect(names.find((r) => r.name === 'sessionfold')?.n).toBeGreaterThan(0)
  })
})

describe('connections of a store', () => {
  it("openStore's appends go through its 'sessionfold appends' connection, through the worker and in the thread", async () => {
    for (const worker of [true, false]) {
      const schema = worker ? 'ab_worker' : 'ab_thread'
      const store = await openStore({ storage: 'postgres', url: dbUrl, schema, worker })
      try {
        const session = await store.createSession()
        for (let i = 0; i < 8; i++) await session.append(Array.from({ length: 50 }, () => ({ type: 'app/e', data: { i } })))
        await session.close()
        const names = (await sql.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'sessionfold appends'`)) as { n: number }[]
        expect(names[0]!.n).toBeGreaterThanOrEqual(1)
      } finally {
        await store.close()
      }
      const log = readFileSync(join(dirname(cluster.dataDir), 'server.log'), 'utf8')
      const pids = new Set(
        [...log.matchAll(/\[(\d+)\] LOG: {2}duration: [\d.]+ ms {2}execute [^\n]*/g)].filter((m) => m[0].includes(`"${schema}".append_group`)).map((m) => m[1]),
      )
      expect(pids.size, schema).toBe(1)
    }
  })
})

it('a fence that throws fails the appends of its group with STORAGE_UNAVAILABLE, writes nothing, and the next group goes', async () => {
  let broken = true
  const fenced = createPostgresAdapter({
    url: dbUrl,
    schema: SCHEMA,
    fence: () => {
      if (broken) throw new Error('the fence broke')
      return undefined
    },
  })
  try {
    await fenced.createSession(rootHeader('fenced'))
    const [a, b] = await Promise.allSettled([fenced.append('fenced', evs('fenced', 0, 2)), fenced.append('fenced', evs('fenced', 2, 1))])
    for (const r of [a, b])
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'STORAGE_UNAVAILABLE', message: expect.stringContaining('the fence broke') })
    expect((await fenced.getSession('fenced'))?.length).toBe(0)
    broken = false
    await fenced.append('fenced', evs('fenced', 0, 2))
    expect((await fenced.getSession('fenced'))?.length).toBe(2)
  } finally {
    await fenced.close()
  }
})
