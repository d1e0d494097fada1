// Which PostgreSQL driver the adapter uses: `postgres` (porsager) against `pg` (node-postgres),
// inserting batches of 100 event rows, one transaction each, into a table shaped like the
// adapter's events table, through the same statement (arrays through unnest). `postgres` sends
// BEGIN, the insert and COMMIT pipelined; `pg` waits for each. Not part of the tests.
//
//   npm install --no-save -E pg@8.23.1 && npx tsx bench/postgres-driver.ts [transactions] [fsync on|off]
//
// A throwaway cluster (test/support/postgres.ts) on 127.0.0.1; fsync off by default, so the
// figures are the drivers' and the protocol's cost, not the disk's.
import postgres from 'postgres'
import { startCluster } from '../test/support/postgres'

const TX = Number(process.argv[2] ?? 300)
const FSYNC = process.argv[3] === 'on' ? 'on' : 'off'
const ROWS = 100
const ROUNDS = 3

interface Driver {
  name: string
  /** One transaction inserting the batch. */
  insert(ids: string[], seqs: number[], bodies: string[]): Promise<void>
  close(): Promise<void>
}

const INSERT = 'INSERT INTO events (session_id, seq, body) SELECT * FROM unnest($1::text[], $2::int8[], $3::text[])'

async function postgresJs(url: string): Promise<Driver> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  return {
    name: 'postgres 3.4.9',
    insert: async (ids, seqs, bodies) => {
      await sql.begin((tx) => [tx.unsafe(INSERT, [ids, seqs, bodies])])
    },
    close: () => sql.end({ timeout: 5 }),
  }
}

/** The little of `pg` used here (it is not a dependency: typed by hand, loaded when installed). */
interface PgModule {
  Client: new (options: {
    connectionString: string
  }) => {
    connect(): Promise<void>
    query(text: string, values?: unknown[]): Promise<unknown>
    end(): Promise<void>
  }
}

async function nodePostgres(url: string): Promise<Driver | undefined> {
  let pg: PgModule
  try {
    const name = 'pg' // through a variable: tsc must not need pg's types
    pg = ((await import(name)) as { default: PgModule }).default
  } catch {
    return undefined
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return {
    name: 'pg 8.23.1',
    insert: async (ids, seqs, bodies) => {
      await client.query('BEGIN')
      try {
        await client.query(INSERT, [ids, seqs, bodies])
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK')
        throw err
      }
    },
    close: () => client.end(),
  }
}

const body = (id: string, seq: number) =>
  JSON.stringify({
    seq,
    type: 'tool/call',
    time: 1_700_000_000_000 + seq,
    data: { session: id, tool: 'read_file', args: { path: `/work/src/file-${seq}.ts` }, note: 'x'.repeat(120) },
  })

async function run(driver: Driver, session: string): Promise<number[]> {
  const ms: number[] = []
  for (let t = 0; t < TX; t++) {
    const seqs = Array.from({ length: ROWS }, (_, i) => t * ROWS + i)
    const started = performance.now()
    await driver.insert(
      seqs.map(() => session),
      seqs,
      seqs.map((s) => body(session, s)),
    )
    ms.push(performance.now() - started)
  }
  return ms
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)]!

const cluster = await startCluster({ settings: { fsync: FSYNC, synchronous_commit: 'on' } })
try {
  const url = await cluster.createDatabase('bench')
  await cluster.psql('CREATE TABLE events (session_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))', 'bench')
  const drivers = [await postgresJs(url), await nodePostgres(url)].filter((d): d is Driver => d !== undefined)
  if (drivers.length < 2) console.log('pg is not installed: npm install --no-save -E pg@8.23.1 to compare')
  const results = new Map<string, number[]>(drivers.map((d) => [d.name, []]))
  // Warm-up (prepared statements, connections), then rounds alternating the drivers.
  for (const d of drivers) await run(d, `warm-${d.name}`)
  for (let round = 0; round < ROUNDS; round++) {
    for (const d of drivers) results.get(d.name)!.push(...(await run(d, `r${round}-${d.name}`)))
  }
  console.log(`${TX * ROUNDS} transactions of ${ROWS} rows (~${body('s', 0).length} B each) per driver, fsync ${FSYNC}, one connection, 127.0.0.1`)
  for (const [name, ms] of results) {
    const total = ms.reduce((a, b) => a + b, 0)
    console.log(
      `${name.padEnd(16)} median ${median(ms).toFixed(2)} ms/tx, p95 ${p95(ms).toFixed(2)} ms, ${Math.round((ms.length * ROWS) / (total / 1000))} rows/s`,
    )
  }
  await Promise.all(drivers.map((d) => d.close()))
} finally {
  await cluster.stop()
}
