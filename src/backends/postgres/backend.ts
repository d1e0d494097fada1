// A PostgreSQL store in a Node engine: one connection pool shared by the adapter (events,
// sessions, checkpoints), the writer leases and the growth channel (LISTEN/NOTIFY with
// polling), and one connection for the adapter's appends, each fenced by this engine's write
// lease. The `postgres` driver is an optional peer dependency, loaded here only when a store
// asks for PostgreSQL.
import type { Sql } from 'postgres'
import { createPostgresAdapter } from './'
import { DRIVER_OPTIONS } from './driver-types'
import type { StorageAdapter } from '../../storage/types'
import { SessionfoldError } from '../../core/errors'
import type { PostgresConfig } from './config'
import { createPostgresLocks, type PostgresLocks } from './locks'
import { pgGrowth } from './growth'
import type { Backend, GrowthChannel } from '../platform'
import { openForCommandLine } from './command-line'

export interface PostgresStore {
  storage: StorageAdapter
  locks: PostgresLocks
  channel: GrowthChannel
  /** Ends the leases, then the pool: after the engine closed (its last checkpoints written). */
  end(): Promise<void>
}

/** Defaults of the time bounds (ms), the adapter's own: openStore's `timeouts` may change them. */
const CONNECT_TIMEOUT_MS = 10_000
const QUERY_TIMEOUT_MS = 30_000

export const postgresBackend: Backend<PostgresConfig> = {
  async open(config, purpose) {
    if (purpose !== 'app') return openForCommandLine(config, purpose)
    const { storage, locks, channel, end } = await openPostgresStore(config)
    return { storage, locks, channel, end }
  },
}

async function openPostgresStore(o: PostgresConfig): Promise<PostgresStore> {
  const { url, schema } = o
  let postgres: (url: string, options: object) => Sql
  try {
    postgres = ((await import('postgres')) as unknown as { default: typeof postgres }).default
  } catch (err) {
    throw new SessionfoldError(
      'STORAGE_UNAVAILABLE',
      "storage 'postgres' needs the PostgreSQL driver, an optional peer dependency of sessionfold: npm install postgres",
      { cause: err },
    )
  }
  // No notices printed; numbers of int8 columns as strings (lengths and tokens are parsed where used).
  const connectTimeoutMs = o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS
  const queryTimeoutMs = o.queryTimeoutMs ?? QUERY_TIMEOUT_MS
  // The server bounds each statement (and a transaction left idle by a frozen process), as the
  // adapter's own pool would; the adapter's client-side deadline is derived from the same bounds.
  const client = (max: number, name: string): Sql =>
    postgres(url, {
      ...DRIVER_OPTIONS, // no type fetch of the driver's own (driver-types.ts)
      max,
      connect_timeout: connectTimeoutMs / 1000,
      onnotice: () => {},
      connection: {
        application_name: name,
        statement_timeout: queryTimeoutMs,
        idle_in_transaction_session_timeout: 2 * queryTimeoutMs,
      },
    })
  const sql = client(10, 'sessionfold')
  // Appends on a connection of their own (the adapter's appendSql).
  const appendSql = client(1, 'sessionfold appends')
  // Lease statements bounded as the adapter's calls are (a server that stopped answering).
  const locks = createPostgresLocks({ sql, schema, ttlMs: o.leaseTtlMs, deadlineMs: connectTimeoutMs + 2 * queryTimeoutMs + 5_000 })
  const storage = createPostgresAdapter({
    sql,
    appendSql,
    schema,
    durability: o.durability,
    fence: (id) => locks.tokenOf(id),
    connectTimeoutMs,
    queryTimeoutMs,
  })
  try {
    // At once: an unreachable server or a schema of a newer version fails openStore itself, and
    // the tables exist before the first lease is taken.
    await storage.listIds({ limit: 1 })
  } catch (err) {
    await storage.close().catch(() => {})
    await Promise.all([sql, appendSql].map((c) => c.end({ timeout: 1 }).catch(() => {})))
    throw err
  }
  // Notices come on a connection of their own (LISTEN holds it), made on first follow.
  const channel = pgGrowth({
    sql,
    schema,
    connect: ({ onnotify, onclose }) =>
      postgres(url, {
        ...DRIVER_OPTIONS,
        max: 1,
        idle_timeout: 0, // never
        max_lifetime: null, // never recycled: each reconnect means LISTEN again and a poll of all
        connect_timeout: connectTimeoutMs / 1000,
        onnotice: () => {},
        onnotify,
        onclose,
        connection: { application_name: 'sessionfold listen' },
      }),
  })
  return {
    storage,
    locks,
    channel,
    async end() {
      await locks.close().catch(() => {})
      await Promise.all([sql, appendSql].map((c) => c.end({ timeout: 5 }).catch(() => {})))
    },
  }
}
