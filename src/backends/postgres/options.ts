// The PostgreSQL adapter's options, checked before anything connects, and the settings its
// parts work from once defaults are applied.
import { SessionfoldError } from '../../core/errors'
import { PG_SCHEMA_PATTERN } from '../../core/limits'
import { describe } from '../../core/validate'

/**
 * What the adapter needs of a `postgres()` instance (the `postgres` package, 3.4): a caller
 * may pass one to share its pool. Declared here so that the published types do not need the
 * driver installed.
 */
export interface PostgresClient {
  /** Runs a statement with `$n` parameters (`sql.unsafe`); `prepare` keeps it as a prepared statement on the connection. */
  // biome-ignore lint/suspicious/noExplicitAny: the driver's own signature, which a caller's instance must match
  unsafe(query: string, parameters?: any[], options?: { prepare?: boolean }): PromiseLike<any>
  /** Runs a callback in a transaction (`sql.begin`). */
  // biome-ignore lint/suspicious/noExplicitAny: the driver's own signature, which a caller's instance must match
  begin(...args: any[]): Promise<any>
  /** Ends the pool (`sql.end`); the adapter calls it only on a pool of its own. */
  end(options?: { timeout?: number }): Promise<void>
}

/** Options of `createPostgresAdapter`. */
export interface PostgresAdapterOptions {
  /** `postgres://user:password@host:port/database`. Required unless `sql` is given. */
  url?: string
  /**
   * The schema holding the tables (default `sessionfold`): `[a-z_][a-z0-9_]*`, at most 51
   * characters.
   */
  schema?: string
  /** `strict` (default): an append resolves once committed synchronously. `relaxed`: `synchronous_commit = off`. */
  durability?: 'strict' | 'relaxed'
  /**
   * The token of this process's write lease on a session, when it holds one: each append to
   * that session then checks, in its transaction, that the lease still carries this token, and
   * fails with SESSION_LOCKED (writing nothing) when it does not.
   */
  fence?: (id: string) => bigint | string | undefined
  /**
   * An existing `postgres()` instance to share its pool (then `url` is not used, and close()
   * leaves it open). Make it with {@link DRIVER_OPTIONS}: with the driver's default type fetch, a
   * connection lost as it opens is an unhandled rejection in your process.
   */
  sql?: PostgresClient
  /**
   * A `postgres()` instance of one connection (`max: 1`, {@link DRIVER_OPTIONS}) for appends, which close() leaves open.
   * Group commit sends one statement at a time, and a pool hands its idle connections out in
   * turn; one connection keeps a writer's appends on one server process. Default: a connection
   * the adapter opens beside its own pool, or `sql` itself when `sql` is given.
   */
  appendSql?: PostgresClient
  /** Bound on opening a connection (default 10 000 ms). */
  connectTimeoutMs?: number
  /** Bound on one statement, enforced by the server (`statement_timeout`, default 30 000 ms). */
  queryTimeoutMs?: number
}

/** The options with their defaults applied. */
export interface PgSettings {
  url: string | undefined
  schema: string
  strict: boolean
  fence: PostgresAdapterOptions['fence']
  sql: PostgresClient | undefined
  appendSql: PostgresClient | undefined
  connectTimeoutMs: number
  queryTimeoutMs: number
  /** A call that has had no answer by then rejects with STORAGE_UNAVAILABLE (client side). */
  callDeadlineMs: number
  /** The password in `url` (never shown in a message). */
  secret: string | undefined
  /**
   * Hot statements are prepared on their connection, unless the caller's own `postgres()`
   * instance was made with `prepare: false` (PgBouncer in transaction mode before 1.21).
   */
  prepare: boolean
}

const invalid = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

function checkMs(name: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > 3_600_000) {
    throw invalid(`postgres adapter: ${name} must be an integer of milliseconds in 1..3600000, got ${describe(v)}`)
  }
  return v
}

/** The password in a connection URL, if any (undefined for a URL that does not parse). */
export function passwordOf(url: string): string | undefined {
  try {
    const p = new URL(url).password
    return p === '' ? undefined : decodeURIComponent(p)
  } catch {
    return undefined
  }
}

export function settingsOf(options: PostgresAdapterOptions): PgSettings {
  if (typeof options !== 'object' || options === null) throw invalid(`postgres adapter: options must be an object, got ${describe(options)}`)
  const { url, sql, appendSql, fence } = options
  const schema = options.schema ?? 'sessionfold'
  if (typeof schema !== 'string' || !PG_SCHEMA_PATTERN.test(schema)) {
    throw invalid(`postgres adapter: schema must be 1-51 characters of [a-z0-9_], not starting with a digit, got ${describe(schema)}`)
  }
  if (sql === undefined && (typeof url !== 'string' || !/^postgres(ql)?:\/\//.test(url))) {
    // Never echo the URL: it may hold a password.
    throw invalid('postgres adapter: url must be a postgres:// or postgresql:// URL (or pass sql, a postgres() instance)')
  }
  for (const [name, client] of [
    ['sql', sql],
    ['appendSql', appendSql],
  ] as const) {
    if (client !== undefined && ((typeof client !== 'function' && typeof client !== 'object') || typeof (client as PostgresClient).begin !== 'function')) {
      throw invalid(`postgres adapter: ${name} must be a postgres() instance`)
    }
  }
  const durability = options.durability ?? 'strict'
  if (durability !== 'strict' && durability !== 'relaxed')
    throw invalid(`postgres adapter: durability must be 'strict' or 'relaxed', got ${describe(durability)}`)
  if (fence !== undefined && typeof fence !== 'function') throw invalid(`postgres adapter: fence must be a function, got ${describe(fence)}`)
  const connectTimeoutMs = checkMs('connectTimeoutMs', options.connectTimeoutMs, 10_000)
  const queryTimeoutMs = checkMs('queryTimeoutMs', options.queryTimeoutMs, 30_000)
  return {
    url: sql === undefined ? url : undefined,
    schema,
    strict: durability === 'strict',
    fence,
    sql,
    appendSql,
    connectTimeoutMs,
    queryTimeoutMs,
    // Connecting, waiting behind a transaction in flight, then the statement itself.
    callDeadlineMs: connectTimeoutMs + 2 * queryTimeoutMs + 5_000,
    secret: typeof url === 'string' ? passwordOf(url) : undefined,
    prepare: (sql as { options?: { prepare?: unknown } } | undefined)?.options?.prepare !== false,
  }
}
