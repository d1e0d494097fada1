// PostgreSQL adapter beyond the shared storage suite, on a real server: migrations (concurrent
// opens create the schema once; a newer schema is refused), group commit (appends arriving
// while a transaction is in flight share the next one, each refused alone), growth notices,
// fencing by the write lease's token, hostile values through parameters, bad input refused
// before any SQL, damage as CORRUPT_LOG, a full disk as STORAGE_QUOTA_EXCEEDED, and a stopped
// server as STORAGE_UNAVAILABLE within the bound, with the next call working once it is back.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createPostgresAdapter, SCHEMA_VERSION } from '../../src/backends/postgres'
import { growthChannelOf } from '../../src/backends/postgres/channel'
import type { RecordWrite, StorageAdapter } from '../../src/storage/types'
import { getMany, writeMany } from '../../src/storage/kv'
import { recordsOf } from '../../src/storage/records'
import { indexEntryKey, summaryKey } from '../../src/storage/records/keys'
import type { SessionHeader } from '../../src/core/model'
import { encodeEventInput } from '../../src/core/validate'
import { ev, evs, expectCode, readAll, rootHeader, snapshotStore } from '../support/helpers'
import { schemaV1 } from '../support/pg-schema'
import { startCluster, type PgCluster } from '../support/postgres'

vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 })

let cluster: PgCluster
let url: string
let schemas = 0
const open: StorageAdapter[] = []

beforeAll(async () => {
  // Every statement in the server's log: the relaxed test reads what was sent.
  cluster = await startCluster({ settings: { fsync: 'off', log_statement: 'all' } })
  url = await cluster.createDatabase('behaviour')
})
afterAll(async () => {
  await Promise.allSettled(open.map((a) => a.close()))
  await cluster?.stop()
})

const fresh = () => `b_${++schemas}`
const adapterOn = (schema: string, extra: Partial<Parameters<typeof createPostgresAdapter>[0]> = {}) => {
  const a = createPostgresAdapter({ url, schema, ...extra })
  open.push(a)
  return a
}
const psql = (sql: string) => cluster.psql(sql, 'behaviour')
const serverLog = () => readFileSync(join(dirname(cluster.dataDir), 'server.log'), 'utf8')
/** Transactions sent relaxed: creates (SET LOCAL) and append groups (append_batch's p_relaxed, $10). */
const relaxedCommits = () => {
  const log = serverLog()
  const creates = log.split('SET LOCAL synchronous_commit = off').length - 1
  const groups = log.split('\n').filter((l) => l.includes('DETAIL:  parameters:') && /\$10 = 't'$/.test(l)).length
  return creates + groups
}

describe('migrations', () => {
  it('creates the schema once when several adapters open it at once, and opens it again as it is', async () => {
    const schema = fresh()
    const adapters = Array.from({ length: 6 }, () => adapterOn(schema))
    await Promise.all(adapters.map((a, i) => a.createSession(rootHeader(`s${i}`))))
    expect(await psql(`SELECT count(*) FROM ${schema}.schema_version`)).toBe('1')
    expect(await psql(`SELECT version FROM ${schema}.schema_version`)).toBe(String(SCHEMA_VERSION))
    const tables = await psql(`SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = '${schema}'`)
    expect(tables).toBe('checkpoints,events,feed,history,leases,meta,records,schema_version,session_records,sessions')
    expect(await psql(`SELECT count(*) FROM pg_sequences WHERE schemaname = '${schema}' AND sequencename = 'lease_tokens'`)).toBe('1')
    const again = adapterOn(schema)
    expect((await again.listIds()).length).toBe(6)
    expect(await psql(`SELECT count(*) FROM ${schema}.schema_version`)).toBe('1')
  })

  it('migrates a store of version 1 (written by an older sessionfold) to the current version, its sessions kept, when several open it at once', async () => {
    const schema = fresh()
    const header = rootHeader('old')
    const body = (seq: number) => JSON.stringify({ seq, type: 'test/event', time: 1_700_000_000_000 + seq, data: { n: seq } })
    // Version 1's tables exactly as that version made them, with a session of 2 events.
    await psql(`${schemaV1(schema)}
      INSERT INTO ${schema}.sessions (id, header, length) VALUES ('old', to_jsonb('${JSON.stringify(header)}'::text), 2);
      INSERT INTO ${schema}.events (session_id, seq, body) VALUES ('old', 0, '${body(0)}'), ('old', 1, '${body(1)}');`)
    const adapters = Array.from({ length: 4 }, () => adapterOn(schema))
    const infos = await Promise.all(adapters.map((a) => a.getSession('old')))
    expect(infos.map((i) => i?.length)).toEqual([2, 2, 2, 2])
    expect(await psql(`SELECT version FROM ${schema}.schema_version`)).toBe(String(SCHEMA_VERSION))
    expect(
      await psql(`SELECT count(*) FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace WHERE s.nspname = '${schema}' AND p.proname = 'append_batch'`),
    ).toBe('1')
    await adapters[0]!.append('old', [ev('old', 2)])
    expect((await readAll(adapters[1]!, 'old')).map((e) => e.seq)).toEqual([0, 1, 2])
    expect(await psql(`SELECT length FROM ${schema}.sessions WHERE id = 'old'`)).toBe('3')
  })

  it('version 5: events have no key to their session; a delete takes them with it, and a create clears those an older process left', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    await a.createSession(rootHeader('kept'))
    await a.append('kept', evs('kept', 0, 3))
    expect(
      await psql(
        `SELECT count(*) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace s ON s.oid = t.relnamespace WHERE s.nspname = '${schema}' AND t.relname = 'events' AND c.contype = 'f'`,
      ),
    ).toBe('0')
    // Checkpoint and history rows keep their keys (written a row at a time).
    expect(
      await psql(
        `SELECT count(*) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace s ON s.oid = t.relnamespace WHERE s.nspname = '${schema}' AND t.relname IN ('checkpoints', 'history') AND c.contype = 'f'`,
      ),
    ).toBe('2')
    await a.createSession(rootHeader('gone'))
    await a.append('gone', evs('gone', 0, 5))
    await a.deleteSession('gone')
    expect(await psql(`SELECT count(*) FROM ${schema}.events WHERE session_id = 'gone'`)).toBe('0')
    expect(await psql(`SELECT count(*) FROM ${schema}.events WHERE session_id = 'kept'`)).toBe('3')
    // What a process of an older sessionfold leaves when it deletes by the cascade alone: the
    // row gone, its events not. A new session of that id starts empty, and appends from 0.
    await a.createSession(rootHeader('orphaned'))
    await a.append('orphaned', evs('orphaned', 0, 4))
    await psql(`DELETE FROM ${schema}.sessions WHERE id = 'orphaned'`)
    expect(await psql(`SELECT count(*) FROM ${schema}.events WHERE session_id = 'orphaned'`)).toBe('4')
    await a.createSession(rootHeader('orphaned'))
    expect((await a.getSession('orphaned'))?.length).toBe(0)
    await a.append('orphaned', evs('orphaned', 0, 2))
    expect((await readAll(a, 'orphaned')).map((e) => e.seq)).toEqual([0, 1])
    // A second create of a session that exists is refused, and clears nothing.
    await expectCode(a.createSession(rootHeader('kept')), 'SESSION_EXISTS')
    expect((await readAll(a, 'kept')).map((e) => e.seq)).toEqual([0, 1, 2])
    // createSessions alike: the old events of an id it makes go, those of an id taken stay.
    await psql(`DELETE FROM ${schema}.sessions WHERE id = 'orphaned'`)
    expect(
      await a.createSessions!([
        { header: rootHeader('orphaned'), events: evs('orphaned', 0, 1, () => 'new') },
        { header: rootHeader('kept'), events: [] },
      ]),
    ).toEqual([true, false])
    expect((await readAll(a, 'orphaned')).map((e) => [e.seq, e.data])).toEqual([[0, 'new']])
    expect((await readAll(a, 'kept')).map((e) => e.seq)).toEqual([0, 1, 2])
  })

  it('createSessions without locks: two adapters making overlapping groups in opposite orders beside single creates, each id made once, whole, no deadlock', async () => {
    const schema = fresh()
    const [a, b, c] = [adapterOn(schema), adapterOn(schema), adapterOn(schema)]
    await a.listIds()
    for (let round = 0; round < 10; round++) {
      const ids = Array.from({ length: 60 }, (_, i) => `r${round}_${i}`)
      const groupOf = (by: number, list: string[]) =>
        list.map((id) => ({ header: rootHeader(id, { createdAt: by }), events: evs(id, 0, by + 1, () => ({ by })) }))
      const singles = ids.filter((_, i) => i % 7 === 0)
      const [madeA, madeB, madeC] = await Promise.all([
        a.createSessions!(groupOf(1, ids)),
        b.createSessions!(groupOf(2, [...ids].reverse())),
        Promise.all(
          singles.map((id) =>
            c.createSession(rootHeader(id, { createdAt: 3 })).then(
              () => true,
              (err: { code?: string }) => {
                if (err.code !== 'SESSION_EXISTS') throw err
                return false
              },
            ),
          ),
        ),
      ])
      const byB = new Map([...ids].reverse().map((id, i) => [id, madeB[i]]))
      const byC = new Map(singles.map((id, i) => [id, madeC[i]]))
      for (const [i, id] of ids.entries()) {
        const by = [madeA[i] ? 1 : 0, byB.get(id) ? 2 : 0, byC.get(id) ? 3 : 0].filter((n) => n > 0)
        expect(by, id).toHaveLength(1)
        expect((await a.getSession(id))?.header.createdAt, id).toBe(by[0])
        expect(await readAll(b, id)).toEqual(by[0] === 3 ? [] : evs(id, 0, by[0]! + 1, () => ({ by: by[0]! })).map((e) => e.event))
      }
    }
  })

  it('refuses a schema at a newer version than it knows with STORAGE_UNAVAILABLE, touching nothing', async () => {
    const schema = fresh()
    await adapterOn(schema).createSession(rootHeader('old'))
    const newer = SCHEMA_VERSION + 1
    await psql(`UPDATE ${schema}.schema_version SET version = ${newer}`)
    const err = await expectCode(adapterOn(schema).getSession('old'), 'STORAGE_UNAVAILABLE')
    expect(err.message).toContain(`version ${newer}`)
    expect(await psql(`SELECT version FROM ${schema}.schema_version`)).toBe(String(newer))
  })

  it('refuses bad options before connecting: a schema name that is not an identifier, a URL that is not one', () => {
    for (const schema of ['', 'Public', 'a-b', '1x', 'x"; DROP SCHEMA public; --', 'a'.repeat(52)]) {
      expect(() => createPostgresAdapter({ url, schema }), schema).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
    expect(() => createPostgresAdapter({ url: 'mysql://x' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(() => createPostgresAdapter({ url, durability: 'fast' as never })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(() => createPostgresAdapter({ url, queryTimeoutMs: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(() => createPostgresAdapter({ url, appendSql: {} as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('appendSql') }),
    )
  })
})

describe("the records' getMany and writeMany", () => {
  // Found in review: two engines writing one group of the session index in other orders deadlocked (40P01).
  it('two adapters writing the same 128 rows and entries in opposite orders, puts and deletes, 20 rounds: no deadlock, every write made', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    const b = adapterOn(schema)
    const ids = Array.from({ length: 128 }, (_, i) => `s-${String(i).padStart(3, '0')}`)
    for (const id of ids) await a.createSession(rootHeader(id))
    const [ra, rb] = [recordsOf(a)!, recordsOf(b)!]
    await Promise.all([ra.get(['x']), rb.get(['x'])]) // both connected: their writes overlap from the first round
    const deadlocks = () => serverLog().split('deadlock detected').length - 1
    const before = deadlocks()
    const rounds = 20
    for (let round = 0; round < rounds; round++) {
      const rows = ids.map((id): RecordWrite => [summaryKey(id), JSON.stringify({ v: 1, round })])
      const entries = ids.map((id): RecordWrite => [indexEntryKey('ax', round, id), ''])
      const gone = round === 0 ? [] : ids.map((id): RecordWrite => [indexEntryKey('ax', round - 1, id), undefined])
      await Promise.all([writeMany(ra, rows), writeMany(rb, [...rows].reverse()), writeMany(ra, entries), writeMany(rb, [...entries].reverse())])
      await Promise.all([writeMany(ra, gone), writeMany(rb, [...gone].reverse())])
      // Two tables in one call, named in other orders: the tables too are locked in one order.
      const both = [...rows, ...entries].map(([k, v]): RecordWrite => [k, v === '' ? '' : JSON.stringify({ v: 1, round, both: true })])
      await Promise.all([writeMany(ra, both), writeMany(rb, [...both].reverse())])
    }
    expect(new Set(await getMany(ra, ids.map(summaryKey)))).toEqual(new Set([JSON.stringify({ v: 1, round: rounds - 1, both: true })]))
    expect(await ra.list(['_index', 'ax'], { limit: 1000 })).toHaveLength(128)
    expect(deadlocks() - before).toBe(0) // none met and tried again either (the server logs each)
  })

  it("names the session a delete under way took (the database's foreign key), and writes nothing", async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    for (const id of ['alive', 'doomed']) await a.createSession(rootHeader(id))
    const records = recordsOf(a)!
    const other = postgres(url, { max: 1, onnotice: () => {} })
    let done!: () => void
    const hold = new Promise<void>((r) => (done = r))
    let started!: () => void
    const deleting = new Promise<void>((r) => (started = r))
    const deleter = other.begin(async (tx) => {
      await tx.unsafe(`DELETE FROM ${schema}.sessions WHERE id = 'doomed'`)
      started()
      await hold
    })
    await deleting
    const write = writeMany(records, [
      [summaryKey('alive'), '{"v":1}'],
      [summaryKey('doomed'), '{"v":1}'],
    ]).then(
      () => undefined,
      (err: unknown) => err,
    )
    await new Promise((r) => setTimeout(r, 300)) // the insert waits on the delete's lock
    done()
    await deleter
    const err = await write
    expect(err).toMatchObject({ code: 'SESSION_NOT_FOUND', sessionId: 'doomed' })
    expect(await getMany(records, [summaryKey('alive'), summaryKey('doomed')])).toEqual([undefined, undefined])
    await other.end()
  })
})

describe('group commit', () => {
  it('puts appends that arrive during a transaction into the next one; a conflicting one fails alone', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    const ids = Array.from({ length: 10 }, (_, i) => `g${i}`)
    for (const id of ids) await a.createSession(rootHeader(id))
    await a.append('g0', [ev('g0', 0)])
    // The first goes at once; the others arrive while its transaction is in flight.
    const first = a.append('g1', [ev('g1', 0)])
    const rest = ids.flatMap((id) => [a.append(id, [ev(id, id === 'g0' ? 1 : id === 'g1' ? 1 : 0)])])
    const conflict = a.append('g0', [ev('g0', 5)])
    const results = await Promise.allSettled([first, ...rest])
    expect(results.map((r) => r.status)).toEqual(Array(11).fill('fulfilled'))
    await expectCode(conflict, 'SEQ_CONFLICT')
    // Rows written by one transaction carry its id (xmin).
    const xmins = (await psql(`SELECT session_id || ':' || seq || '=' || xmin FROM ${schema}.events ORDER BY session_id, seq`)).split('\n')
    const byKey = new Map(xmins.map((line) => line.split('=') as [string, string]))
    const later = ids.map((id) => `${id}:${id === 'g0' || id === 'g1' ? 1 : 0}`)
    expect(new Set(later.map((k) => byKey.get(k))).size).toBe(1)
    expect(byKey.get('g1:0')).not.toBe(byKey.get('g2:0'))
    expect((await readAll(a, 'g0')).map((e) => e.seq)).toEqual([0, 1])
  })

  it("announces growth once per session per transaction on the session's channel, at commit, with the new events when they are small", async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    await a.createSession(rootHeader('n1'))
    await a.createSession(rootHeader('n2'))
    await a.createSession(rootHeader('n3'))
    const listener = postgres(url, { max: 1, onnotice: () => {} })
    const heard: string[] = []
    try {
      for (const id of ['n1', 'n2']) await listener.listen(growthChannelOf(schema, id), (payload) => heard.push(payload))
      await a.append('n1', [ev('n1', 0)])
      // The first goes at once; the other three arrive while it is in flight and share the next
      // transaction: one notice for n1 (its length after both), one for n2; none for n3 here,
      // where nobody listens on its channel.
      await Promise.all([
        a.append('n1', [ev('n1', 1)]),
        a.append('n1', evs('n1', 2, 3)),
        a.append('n1', [ev('n1', 5)]),
        a.append('n2', [ev('n2', 0)]),
        a.append('n3', [ev('n3', 0)]),
      ])
      await vi.waitFor(() => expect(heard.some((p) => p.startsWith('n2:1:'))).toBe(true), { timeout: 30_000 })
      await vi.waitFor(() => expect(heard.some((p) => p.startsWith('n1:6:'))).toBe(true), { timeout: 30_000 })
      const parse = (p: string) => {
        const [id, length, from, ...rest] = p.split(':')
        return {
          id,
          length: Number(length),
          from: from === undefined ? undefined : Number(from),
          events: rest.length ? (JSON.parse(rest.join(':')) as { seq: number }[]) : undefined,
        }
      }
      const n1 = heard.map(parse).filter((p) => p.id === 'n1')
      expect(n1.map((p) => p.length)).toEqual([1, 2, 6])
      expect(n1.map((p) => p.from)).toEqual([0, 1, 2])
      expect(n1.map((p) => p.events!.map((e) => e.seq))).toEqual([[0], [1], [2, 3, 4, 5]])
      expect(n1[2]!.events).toEqual(await readAll(a, 'n1', { from: 2 }))
      expect(heard.filter((p) => p.startsWith('n3:'))).toEqual([])
      // Events too large for a notice: the length only, and the follower reads them.
      await a.append('n2', [ev('n2', 1, { text: 'x'.repeat(8000) })])
      await vi.waitFor(() => expect(heard).toContain('n2:2'), { timeout: 30_000 })
    } finally {
      await listener.end({ timeout: 5 })
    }
  })

  it('prepares no statement on a pool, or an append connection, the caller made with prepare: false (PgBouncer in transaction mode)', async () => {
    const schema = fresh()
    const pool = postgres(url, { max: 2, prepare: false, onnotice: () => {} })
    const appendSql = postgres(url, { max: 1, prepare: false, onnotice: () => {} })
    try {
      const a = adapterOn(schema, { sql: pool })
      await a.createSession(rootHeader('u'))
      await a.append('u', [ev('u', 0)])
      await a.putCheckpoint('u', {
        witness: { version: 1, id: 'u', createdAt: 1_700_000_000_000, seedLength: 0, delegationDepth: 0, origin: 'root' } as never,
        rows: {},
      })
      expect((await readAll(a, 'u', { from: 0, to: 1 })).map((e) => e.seq)).toEqual([0])
      await a.getSession('u')
      const mine = serverLog()
        .split('\n')
        .filter((l) => l.includes(`"${schema}"`) && /LOG: {2}execute /.test(l))
      expect(mine.length).toBeGreaterThanOrEqual(4)
      expect(mine.filter((l) => !l.includes('execute <unnamed>'))).toEqual([])
      // Appends on a connection of the caller's made with prepare: false, beside a pool of the adapter's
      // own (which prepares): they go through that connection, and nothing of them is prepared.
      const own = fresh()
      const b = adapterOn(own, { appendSql })
      await b.createSession(rootHeader('v'))
      for (let i = 0; i < 3; i++) await b.append('v', [ev('v', i)])
      const appends = serverLog()
        .split('\n')
        .filter((l) => l.includes(`"${own}".append_group`) && /LOG: {2}execute /.test(l))
      expect(appends).toHaveLength(3)
      expect(appends.filter((l) => !l.includes('execute <unnamed>'))).toEqual([])
    } finally {
      await pool.end({ timeout: 5 })
      await appendSql.end({ timeout: 5 })
    }
  })

  it('commits strict appends synchronously, relaxed ones with synchronous_commit off', async () => {
    const strict = adapterOn(fresh())
    await strict.createSession(rootHeader('s'))
    await strict.append('s', [ev('s', 0)])
    expect(relaxedCommits()).toBe(0)
    const relaxedSchema = fresh()
    const a = adapterOn(relaxedSchema, { durability: 'relaxed' })
    await a.createSession(rootHeader('r'), [])
    await Promise.all([a.append('r', [ev('r', 0)]), a.append('r', [ev('r', 1)])])
    expect((await readAll(a, 'r')).map((e) => e.seq)).toEqual([0, 1])
    // The create, and the two groups (a lone append, then the one that arrived meanwhile).
    await vi.waitFor(() => expect(relaxedCommits()).toBe(3), { timeout: 30_000 })
    // And append_batch turns synchronous_commit off for its own transaction only.
    const shown = await psql(
      `BEGIN; SELECT codes FROM ${relaxedSchema}.append_batch('{r}', '{NULL}', '{sf_x}', '{1}', '{2}', '{0}', '{}', '{}', '{}', true); SHOW synchronous_commit; COMMIT; SHOW synchronous_commit`,
    )
    expect(shown.split('\n')).toEqual(['BEGIN', '{0}', 'off', 'COMMIT', 'on'])
  })
})

describe('fencing', () => {
  it('appends only while the lease carries the fence token; a lost lease refuses that append alone, writing nothing', async () => {
    const schema = fresh()
    const tokens = new Map<string, bigint>()
    const a = adapterOn(schema, { fence: (id) => tokens.get(id) })
    await a.createSession(rootHeader('held'))
    await a.createSession(rootHeader('free'))
    await psql(`INSERT INTO ${schema}.leases VALUES ('held', 41, 'me', now() + interval '1 hour')`)
    tokens.set('held', 41n)
    await a.append('held', [ev('held', 0)])
    // Another writer took the lease over: a new token.
    await psql(`UPDATE ${schema}.leases SET token = 42 WHERE session_id = 'held'`)
    const before = await snapshotStore(a)
    const [lost, other] = await Promise.allSettled([a.append('held', [ev('held', 1)]), a.append('free', [ev('free', 0)])])
    expect(lost.status).toBe('rejected')
    expect((lost as PromiseRejectedResult).reason).toMatchObject({ code: 'SESSION_LOCKED', sessionId: 'held' })
    expect((lost as PromiseRejectedResult).reason.message).toContain('lost its write lease')
    expect(other.status).toBe('fulfilled')
    expect((await readAll(a, 'held')).length).toBe(1)
    expect((before as Record<string, unknown>).held).toEqual(((await snapshotStore(a)) as Record<string, unknown>).held)
    // No lease row at all: refused too.
    await psql(`DELETE FROM ${schema}.leases`)
    await expectCode(a.append('held', [ev('held', 1)]), 'SESSION_LOCKED')
    tokens.set('held', 42n)
    await psql(`INSERT INTO ${schema}.leases VALUES ('held', 42, 'me', now() + interval '1 hour')`)
    await a.append('held', [ev('held', 1)])
    expect((await a.getSession('held'))?.length).toBe(2)
  })
})

describe('values and input', () => {
  it('keeps hostile ids, types, data and headers to parameters: values round-trip exactly, the tables stay', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    const nasty = [
      `'; DROP TABLE ${schema}.events; --`,
      `"); DELETE FROM ${schema}.sessions; --`,
      'a\0b\0',
      '\\x00\\',
      '$1 $2 ?',
      '🧪\u2028\u2029\uFEFF',
      '\ud800 lone',
      'ｘ'.repeat(1000),
    ]
    const header: SessionHeader = rootHeader('Robert_-drop', { cwd: nasty.join('|') })
    await a.createSession(header)
    const events = nasty.map((s, i) =>
      encodeEventInput({ type: s.slice(0, 256) || 't', time: i, data: { [s]: s, list: [s, null, -0.5, 1e300] } }, i, header.id),
    )
    await a.append(header.id, events)
    const big = encodeEventInput({ type: 'big', time: 9, data: 'é\0'.repeat(100_000) }, events.length, header.id)
    await a.append(header.id, [big])
    expect(await a.getSession(header.id)).toEqual({ header, length: events.length + 1 })
    expect((await a.getSession(header.id))!.header.cwd).toBe(header.cwd)
    const back = await readAll(a, header.id)
    expect(back.map((e) => JSON.stringify(e))).toEqual([...events, big].map((e) => e.json))
    await a.putCheckpoint(header.id, {
      witness: { version: 1, id: header.id, createdAt: header.createdAt, cwd: header.cwd, seedLength: 0, delegationDepth: 0, origin: 'root' } as never,
      rows: { [nasty[0]!]: { ver: 1, seq: 0, val: nasty } },
    })
    expect(JSON.stringify(await a.getCheckpoint(header.id))).toContain(JSON.stringify(nasty).slice(1, -1))
    expect(await psql(`SELECT count(*) FROM pg_tables WHERE schemaname = '${schema}'`)).toBe('10')
    expect(await psql(`SELECT count(*) FROM ${schema}.events`)).toBe(String(events.length + 1))
  })

  it('refuses bad input before any SQL runs: INVALID_ARGUMENT even with no server to reach', async () => {
    // Nothing listens on port 1: any SQL would be STORAGE_UNAVAILABLE.
    const a = createPostgresAdapter({ url: 'postgres://u:pw@127.0.0.1:1/none', connectTimeoutMs: 2_000 })
    try {
      for (const bad of ['', '../x', "x'; DROP TABLE y; --", 'a\0b', 'é', 42, null]) {
        const id = bad as string
        await expectCode(a.append(id, [ev('x', 0)]), 'INVALID_ARGUMENT')
        await expectCode(a.getSession(id), 'INVALID_ARGUMENT')
        await expectCode(readAll(a, id), 'INVALID_ARGUMENT')
        await expectCode(a.deleteSession(id), 'INVALID_ARGUMENT')
        await expectCode(a.getCheckpoint(id), 'INVALID_ARGUMENT')
        await expectCode(a.createSession({ ...rootHeader('x'), id }), 'INVALID_ARGUMENT')
      }
      await expectCode(a.createSession(rootHeader('x', { seedLength: 2 })), 'INVALID_ARGUMENT')
      await expectCode(a.listSessions({ limit: -1 }), 'INVALID_ARGUMENT')
      // And the store really is out of reach: a good call fails for that reason.
      const err = await expectCode(a.getSession('fine'), 'STORAGE_UNAVAILABLE')
      expect(err.message).not.toContain('pw@')
    } finally {
      await a.close()
    }
  })

  it('reads damage as CORRUPT_LOG: a body that is not JSON, an event out of place, a missing row', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    await a.createSession(rootHeader('d'))
    await a.append('d', evs('d', 0, 700))
    await psql(`UPDATE ${schema}.events SET body = '{"seq": 600, "ty' WHERE session_id = 'd' AND seq = 600`)
    expect((await readAll(a, 'd', { to: 512 })).length).toBe(512)
    await expectCode(readAll(a, 'd'), 'CORRUPT_LOG')
    await psql(`UPDATE ${schema}.events SET body = (SELECT body FROM ${schema}.events WHERE session_id = 'd' AND seq = 5) WHERE session_id = 'd' AND seq = 600`)
    const err = await expectCode(readAll(a, 'd', { from: 550 }), 'CORRUPT_LOG')
    expect(err.message).toContain('600')
    await psql(`DELETE FROM ${schema}.events WHERE session_id = 'd' AND seq = 600`)
    await expectCode(readAll(a, 'd', { from: 599 }), 'CORRUPT_LOG')
    await psql(`UPDATE ${schema}.checkpoints SET row = 'x'`)
    await a.putCheckpoint('d', { witness: {} as never, rows: {} })
    await psql(`UPDATE ${schema}.checkpoints SET row = '{not json'`)
    await expectCode(a.getCheckpoint('d'), 'CORRUPT_LOG')
  })

  it('getSessions gives a damaged log without its events (its own read reports it), and rejects a damaged header as CORRUPT_LOG', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    for (const id of ['g1', 'g2', 'g3']) {
      await a.createSession(rootHeader(id))
      await a.append(id, evs(id, 0, 3))
    }
    await a.createSession(rootHeader('big'))
    await a.append('big', evs('big', 0, 100))
    await psql(`UPDATE ${schema}.events SET body = '{"seq": 1, "ty' WHERE session_id = 'g1' AND seq = 1`)
    await psql(`DELETE FROM ${schema}.events WHERE session_id = 'g2' AND seq = 2`)
    const reads = await a.getSessions!(['g1', 'big', 'g2', 'g3'], 8)
    expect(reads.map((r) => [r?.length, r?.events?.length])).toEqual([
      [3, undefined],
      [100, undefined], // more than asked: its events are not read
      [3, undefined],
      [3, 3],
    ])
    reads.splice(1, 1)
    expect(reads[2]!.events).toEqual(await readAll(a, 'g3'))
    await expectCode(readAll(a, 'g1'), 'CORRUPT_LOG')
    await psql(`UPDATE ${schema}.sessions SET header = to_jsonb('{"id": "g3", '::text) WHERE id = 'g3'`)
    await expectCode(a.getSessions!(['g2', 'g3'], 8), 'CORRUPT_LOG')
    await expectCode(a.getSession('g3'), 'CORRUPT_LOG')
  })
})

describe('server failures', () => {
  it('reports a full disk (SQLSTATE 53100) as STORAGE_QUOTA_EXCEEDED, writing nothing', async () => {
    const schema = fresh()
    const a = adapterOn(schema)
    await a.createSession(rootHeader('q'))
    await a.append('q', [ev('q', 0)])
    // The server's own error, as a full disk raises it, from a trigger on the events table.
    await psql(`CREATE FUNCTION ${schema}.disk_full_now() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
      CREATE TRIGGER disk_full_now BEFORE INSERT ON ${schema}.events FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.disk_full_now()`)
    const before = await snapshotStore(a)
    const err = await expectCode(a.append('q', [ev('q', 1)]), 'STORAGE_QUOTA_EXCEEDED')
    expect(err.message).toContain('"q"')
    await expectCode(
      a.createSession(rootHeader('q2'), []).then(() => a.createSession(rootHeader('q3', { origin: 'fork', forkedFrom: 'q', seedLength: 1 }), [ev('q3', 0)])),
      'STORAGE_QUOTA_EXCEEDED',
    )
    await psql(`DROP TRIGGER disk_full_now ON ${schema}.events`)
    expect(await a.getSession('q3')).toBeUndefined()
    expect(((await snapshotStore(a)) as Record<string, unknown>).q).toEqual((before as Record<string, unknown>).q)
    await a.append('q', [ev('q', 1)])
  })

  it('answers STORAGE_UNAVAILABLE within the bound while the server is down, never the password; works again once it is back', async () => {
    const schema = fresh()
    const secretUrl = url.replace('postgres@', 'postgres:Sup3r%23Secret@')
    const a = adapterOn(schema, { url: secretUrl, connectTimeoutMs: 3_000, queryTimeoutMs: 5_000 })
    await a.createSession(rootHeader('u'))
    await a.append('u', [ev('u', 0)])
    await cluster.stopServer('fast')
    try {
      for (const call of [() => a.append('u', [ev('u', 1)]), () => a.getSession('u'), () => a.listSessions(), () => readAll(a, 'u')]) {
        const started = Date.now()
        const err = await expectCode(call(), 'STORAGE_UNAVAILABLE')
        // Bound: connect + 2 queries + 5 s (settings); generous so a loaded machine passes.
        expect(Date.now() - started).toBeLessThan(3_000 + 10_000 + 5_000 + 1_000)
        expect(err.message).not.toContain('Sup3r')
        expect(String((err as { cause?: { message?: string } }).cause?.message ?? '')).not.toContain('Sup3r')
        expect(err.message).toMatch(/PostgreSQL store/)
      }
    } finally {
      await cluster.startServer()
    }
    // The same adapter, no reopen: the driver connects again.
    await a.append('u', [ev('u', 1)])
    expect((await readAll(a, 'u')).map((e) => e.seq)).toEqual([0, 1])
  })

  it('never hangs on a server that stopped answering: STORAGE_UNAVAILABLE by the deadline, then works once it answers', async () => {
    const schema = fresh()
    // Deadline: connect 1 s + 2 x statement 1 s + 5 s = 8 s.
    const a = adapterOn(schema, { connectTimeoutMs: 1_000, queryTimeoutMs: 1_000 })
    await a.createSession(rootHeader('h'))
    await a.append('h', [ev('h', 0)])
    // Freeze the postmaster and every server process (as a hung host would): sockets stay open, nothing answers.
    const postmaster = Number(readFileSync(join(cluster.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
      .split('\n')
      .map(Number)
      .filter((p) => p > 0)
    const frozen = [postmaster, ...children]
    for (const pid of frozen) process.kill(pid, 'SIGSTOP')
    try {
      const started = Date.now()
      const [read, write] = await Promise.allSettled([a.getSession('h'), a.append('h', [ev('h', 1)])])
      for (const r of [read, write]) expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
      // Whichever bound fired first (connect_timeout on a new connection, or the call's deadline
      // on one whose statement got no answer), the message names the operation and session.
      expect((write as PromiseRejectedResult).reason.message).toMatch(/^append of session "h" in the PostgreSQL store/)
      expect(Date.now() - started).toBeLessThan(60_000)
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT')
    }
    // The append that timed out may have committed since: either way the log is whole.
    await vi.waitFor(async () => expect((await a.getSession('h'))?.length).toBeGreaterThanOrEqual(1), { timeout: 60_000, interval: 500 })
    const length = (await a.getSession('h'))!.length
    await a.append('h', [ev('h', length)])
    expect((await readAll(a, 'h')).map((e) => e.seq)).toEqual(Array.from({ length: length + 1 }, (_, i) => i))
  })

  it('shares a pool it is given and leaves it open at close', async () => {
    const sql = postgres(url, { max: 2, onnotice: () => {} })
    try {
      const a = createPostgresAdapter({ sql, schema: fresh() })
      await a.createSession(rootHeader('p'))
      await a.append('p', [ev('p', 0)])
      await a.close()
      await expectCode(a.getSession('p'), 'CLOSED')
      expect((await sql`SELECT 1 AS one`)[0]).toEqual({ one: 1 })
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
})
