// openStore's options of a PostgreSQL store, checked before anything starts.
import { SessionfoldError } from '../../core/errors'
import { PG_SCHEMA_PATTERN } from '../../core/limits'
import { assertOptions, describe } from '../../core/validate'
import type { Durability } from '../platform'

/** PostgreSQL: the server and the schema the store's tables live in. */
export interface PostgresConfig {
  storage: 'postgres'
  url: string
  schema: string
  durability: 'strict' | 'relaxed'
  /** How long a write lease lives without renewal (ms). */
  leaseTtlMs?: number
  /** Bounds on opening a connection and on one statement (ms). */
  connectTimeoutMs?: number
  queryTimeoutMs?: number
}

export interface PostgresOptions {
  /**
   * storage 'postgres' (Node): the server, as `postgres://user:password@host:port/database`.
   * The `postgres` driver is an optional peer dependency: install it to use this storage.
   */
  url?: string
  /** storage 'postgres': the schema holding the store's tables (default 'sessionfold'). */
  schema?: string
  /**
   * storage 'postgres': the write leases. A session's writer holds a lease row renewed every
   * ttl/3; a holder that stops renewing (a crashed or frozen process, a lost network) loses it
   * once `ttlMs` has passed, and another process may then take the session over (its appends
   * are fenced off: they fail with SESSION_LOCKED and write nothing).
   */
  lease?: {
    /** How long a lease lives without renewal, an integer of ms in 30..86400000 (default 10000). */
    ttlMs?: number
  }
  /**
   * storage 'postgres': time bounds of the calls. A call that has had no answer within
   * `connectMs + 2 × queryMs + 5 s` rejects with STORAGE_UNAVAILABLE, whatever the network does.
   */
  timeouts?: {
    /** Bound on opening a connection, an integer of ms in 1..3600000 (default 10000). */
    connectMs?: number
    /** Bound on one statement, enforced by the server (`statement_timeout`), ms in 1..3600000 (default 30000). */
    queryMs?: number
  }
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/** A URL for messages: its password never shows. */
const redactUrl = (url: unknown): unknown => (typeof url === 'string' ? url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@') : url)

export function postgresConfig(options: PostgresOptions, durability: Durability): PostgresConfig {
  if (typeof options.url !== 'string' || !/^postgres(ql)?:\/\//.test(options.url))
    throw bad(`storage 'postgres' needs url: 'postgres://…', got ${describe(options.url === undefined ? undefined : redactUrl(options.url))}`)
  assertOptions(options.lease, 'lease', ['ttlMs'])
  const leaseTtlMs = options.lease?.ttlMs
  if (leaseTtlMs !== undefined && (typeof leaseTtlMs !== 'number' || !Number.isSafeInteger(leaseTtlMs) || leaseTtlMs < 30 || leaseTtlMs > 86_400_000)) {
    throw bad(`lease.ttlMs must be an integer of ms in 30..86400000, got ${describe(leaseTtlMs)}`)
  }
  assertOptions(options.timeouts, 'timeouts', ['connectMs', 'queryMs'])
  for (const [k, v] of Object.entries(options.timeouts ?? {})) {
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > 3_600_000))
      throw bad(`timeouts.${k} must be an integer of ms in 1..3600000, got ${describe(v)}`)
  }
  if (options.schema !== undefined && (typeof options.schema !== 'string' || !PG_SCHEMA_PATTERN.test(options.schema))) {
    throw bad(`schema must match ${PG_SCHEMA_PATTERN} (a plain PostgreSQL name), got ${describe(options.schema)}`)
  }
  return {
    storage: 'postgres',
    url: options.url,
    schema: options.schema ?? 'sessionfold',
    durability,
    ...(leaseTtlMs !== undefined ? { leaseTtlMs } : {}),
    ...(options.timeouts?.connectMs !== undefined ? { connectTimeoutMs: options.timeouts.connectMs } : {}),
    ...(options.timeouts?.queryMs !== undefined ? { queryTimeoutMs: options.timeouts.queryMs } : {}),
  }
}
