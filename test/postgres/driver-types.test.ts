// PostgreSQL: the array types sessionfold gives the driver in place of its own type fetch
// (src/backends/postgres/driver-types.ts). A pool made with them starts no connection with a
// statement of the driver's own (whose failure the driver drops, an unhandled rejection), and
// sends and reads int2[], int4[], int8[] and text[] exactly as a pool that fetched the types.
import postgres, { type Sql } from 'postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createPostgresAdapter, DRIVER_OPTIONS } from '../../src/backends/postgres'
import { parseArray } from '../../src/backends/postgres/driver-types'
import { evs, readAll, rootHeader } from '../support/helpers'
import { startPgProxy } from '../support/pg-proxy'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
const pools: Sql[] = []
const pool = (url: string, options: object = {}) => {
  const sql = postgres(url, { max: 1, onnotice: () => {}, ...options })
  pools.push(sql)
  return sql
}

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
}, 120_000)
afterAll(async () => {
  for (const sql of pools) await sql.end({ timeout: 5 })
  await cluster?.stop()
})

it('a connection of a pool made with them starts with our statement, not a read of pg_type', async () => {
  const proxy = await startPgProxy(cluster.port)
  try {
    await pool(proxy.url(), DRIVER_OPTIONS)`SELECT 1 AS ours`
    await pool(proxy.url())`SELECT 2 AS ours` // the driver's default, for contrast
    expect(proxy.stats.statements).toHaveLength(2)
    expect(proxy.stats.statements[0]).toBe('SELECT 1 AS ours')
    expect(proxy.stats.statements[1]).toMatch(/pg_catalog\.pg_type/)
  } finally {
    await proxy.close()
  }
})

it('sends and reads arrays as a pool that fetched the types does (every awkward text, numbers, int8 as strings), and NULL elements as null', async () => {
  const texts = ['', 'NULL', 'null', 'a,b', '{x}', '"q"', 'back\\slash', 'tab\tand\nline', ' lead', 'trail ', 'é 日本 😀', '\\"', '}{']
  const cases: [string, unknown[]][] = [
    ['text[]', [...texts, null]],
    ['int8[]', ['0', '-9223372036854775808', '9223372036854775807', null]],
    ['int4[]', [0, -2147483648, 2147483647, null]],
    ['int2[]', [0, -32768, 32767, null]],
  ]
  const ours = pool(cluster.url, DRIVER_OPTIONS)
  const fetched = pool(cluster.url)
  for (const [type, values] of cases) {
    const query = `SELECT $1::${type} AS v, cardinality($1::${type}) AS n, array_position($1::${type}, NULL) AS null_at`
    const [a] = (await ours.unsafe(query, [values as never])) as { v: unknown[]; n: number; null_at: number }[]
    expect(a!.v, type).toEqual(values)
    expect(a!.n, type).toBe(values.length) // each element its own, none split or merged
    expect(a!.null_at, type).toBe(values.length) // NULL only where it was sent
    // The driver's own reading, but of NULL: it reads a NULL element as the text 'NULL' (NaN for numbers).
    const [b] = (await fetched.unsafe(query, [values.slice(0, -1) as never])) as { v: unknown[] }[]
    const [c] = (await ours.unsafe(query, [values.slice(0, -1) as never])) as { v: unknown[] }[]
    expect(c!.v, type).toEqual(b!.v)
  }
  // The string 'NULL' went as a string, NULL as NULL; an empty array either way.
  const [row] = (await ours.unsafe(`SELECT $1::text[] AS v, $2::int4[] AS e`, [['NULL', null], []])) as { v: unknown[]; e: unknown[] }[]
  expect(row).toEqual({ v: ['NULL', null], e: [] })
  // Tagged templates (the leases and the growth channel's polls) take the same path.
  const ids = ['x"y', 'z\\w']
  expect(await ours`SELECT unnest(${ids}::text[]) AS id`).toEqual(ids.map((id) => ({ id })))
})

it('reads what the server writes: bounds other than 1, nested arrays, quoted and unquoted elements; refuses what is not an array', () => {
  expect(parseArray('[0:2]={1,2,3}', Number)).toEqual([1, 2, 3])
  expect(parseArray('{{1,2},{3,NULL}}', Number)).toEqual([
    [1, 2],
    [3, null],
  ])
  expect(parseArray('{"a\\"b","c\\\\d",NULL,"NULL",plain}', String)).toEqual(['a"b', 'c\\d', null, 'NULL', 'plain'])
  expect(parseArray('{}', String)).toEqual([])
  for (const bad of ['', '1,2', '{1,2', '{"open}', '{1}x', '{1},{2}']) expect(() => parseArray(bad, String), bad).toThrow(/not an array literal/)
})

it("a pool of the caller's own made with them (exported by sessionfold/adapters/postgres) serves the adapter, and they stay as they were", async () => {
  const before = JSON.stringify(DRIVER_OPTIONS)
  const sql = pool(cluster.url, { ...DRIVER_OPTIONS, max: 2 })
  const adapter = createPostgresAdapter({ sql, schema: 'shared_pool' })
  try {
    await adapter.createSession(rootHeader('s', { origin: 'fork', forkedFrom: 'x', seedLength: 2 }), evs('s', 0, 2)) // a seed: unnest of arrays
    await Promise.all([adapter.append('s', evs('s', 2, 3)), adapter.append('s', evs('s', 5, 1))]) // one group: arrays both ways
    expect((await readAll(adapter, 's')).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5])
  } finally {
    await adapter.close()
  }
  expect(JSON.stringify(DRIVER_OPTIONS)).toBe(before)
  expect(Object.isFrozen(DRIVER_OPTIONS) && Object.isFrozen(DRIVER_OPTIONS.types)).toBe(true)
})
