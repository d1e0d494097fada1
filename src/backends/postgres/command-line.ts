// A PostgreSQL store opened for the command line (--url, --schema): one connection pool for
// the adapter and the write leases, opened the way each command needs it.
//
// Read-only commands (ls, show, tree, events, verify, export) never write, and the server
// enforces it: their connections run with default_transaction_read_only, and their adapter
// refuses writes before any SQL. A database with no sessionfold tables in the schema is not
// migrated by them (that would create tables): it is STORAGE_UNAVAILABLE "there is no sessionfold
// store in schema … at …", as a folder without a store is for --dir. `import` creates the
// tables where there are none; `delete` needs a store, and takes the write lease of each session
// it deletes, as an app's writer does, so a session open for writing anywhere is refused.
//
// The URL's password is never shown: messages name the URL without it, and every error
// message is masked before it is printed.
import type { Sql } from 'postgres'
import { createPostgresAdapter } from './index'
import { DRIVER_OPTIONS } from './driver-types'
import { redact, storageError } from './errors'
import { passwordOf } from './options'
import type { KeyValueStore, LogStore, RecordKey, StorageAdapter } from '../../storage/types'
import { composeStorage, recordsOf, rowKind } from '../../storage/records'
import { sessionOfKey } from '../../storage/kv'
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import type { PostgresConfig } from './config'
import type { WriterLocks } from '../../storage/locks'
import type { BackendParts } from '../platform'
import { createPostgresLocks } from './locks'

type PgTarget = Pick<PostgresConfig, 'url' | 'schema'>

/** Bound on connecting, for a command run by hand: a server that does not answer fails soon. */
const CONNECT_TIMEOUT_S = 10

/** `url` as it may be shown: without its password (and without a query, which may hold one). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url)
    u.password = ''
    u.search = ''
    return u.toString()
  } catch {
    return 'the --url given'
  }
}

/**
 * Opens the store for one command. `mode` 'read': read-only, the store must exist; 'delete':
 * the store must exist; 'import': its tables are created when missing.
 */
export async function openForCommandLine(target: PgTarget, mode: 'read' | 'write' | 'create'): Promise<BackendParts> {
  const { url, schema } = target
  const secret = passwordOf(url)
  let postgres: (url: string, options: object) => Sql
  try {
    postgres = ((await import('postgres')) as unknown as { default: typeof postgres }).default
  } catch (err) {
    throw new SessionfoldError('STORAGE_UNAVAILABLE', 'a PostgreSQL store (--url) needs the `postgres` package: npm install postgres', { cause: err })
  }
  let sql: Sql
  try {
    sql = postgres(url, {
      ...DRIVER_OPTIONS, // no type fetch of the driver's own (driver-types.ts)
      max: 4,
      connect_timeout: CONNECT_TIMEOUT_S,
      onnotice: () => {},
      connection: { application_name: 'sessionfold-cli', ...(mode === 'read' ? { default_transaction_read_only: 'on' } : {}) },
    })
  } catch (err) {
    throw new SessionfoldError(
      'STORAGE_UNAVAILABLE',
      `the PostgreSQL store cannot use --url ${shownUrl(url)}: ${redact((err as Error)?.message ?? String(err), secret)}`,
    )
  }
  const locks = createPostgresLocks({ sql, schema, owner: `sessionfold-cli:${process.pid}` })
  // url with sql: the adapter uses the pool given, and masks the URL's password in its errors.
  const adapter = createPostgresAdapter({ sql, url, schema, fence: (id) => locks.tokenOf(id) })
  const end = async () => {
    await locks.close().catch(() => {})
    await adapter.close().catch(() => {})
    await sql.end({ timeout: 5 }).catch(() => {})
  }
  try {
    if (mode !== 'create') {
      let present: boolean
      try {
        const [row] = await sql.unsafe<{ present: boolean }[]>(`SELECT to_regclass($1) IS NOT NULL AS present`, [`"${schema}".schema_version`])
        present = row?.present === true
      } catch (err) {
        throw storageError(err, 'open', undefined, secret)
      }
      if (!present)
        throw new SessionfoldError('STORAGE_UNAVAILABLE', `there is no sessionfold store in schema "${schema}" at ${shownUrl(url)} (use --url and --schema)`)
    }
    // At once: an unreachable server, a refused password or a schema of a newer version fail
    // here; for import, the tables exist before the first lease is taken.
    await adapter.listIds({ limit: 1 })
  } catch (err) {
    await end()
    throw err
  }
  return { storage: mode === 'read' ? readOnly(adapter, target) : adapter, locks: mode === 'read' ? readOnlyPgLocks(locks) : locks, end }
}

/**
 * The adapter with its writes refused before any SQL (the server would refuse them too): its
 * log's and its key-value records' (the store's rows among them: read, never written).
 */
function readOnly(adapter: StorageAdapter, target: PgTarget): StorageAdapter {
  const refuse = (op: string, id: unknown) => {
    const sessionId = typeof id === 'string' ? (id as SessionId) : undefined
    return Promise.reject(
      new SessionfoldError(
        'STORAGE_UNAVAILABLE',
        `${op} of ${sessionId === undefined ? 'the store' : where(sessionId)} refused: the store in schema "${target.schema}" at ${shownUrl(target.url)} is open read-only`,
        { sessionId },
      ),
    )
  }
  const records = recordsOf(adapter)!
  const log: LogStore = {
    kind: adapter.kind,
    createSession: (header) => refuse('create', header?.id),
    append: (id) => refuse('append', id),
    readEvents: (id, range) => adapter.readEvents(id, range),
    getSession: (id) => adapter.getSession(id),
    listSessions: (o) => adapter.listSessions(o),
    listIds: (o) => adapter.listIds(o),
    deleteSession: (id) => refuse('delete', id),
    close: () => adapter.close(),
  }
  const write = (what: string, key: RecordKey | undefined) => refuse(`${rowKind(key ?? []) ?? 'record'} ${what}`, key && sessionOfKey(key))
  const kv: KeyValueStore = {
    get: (key) => records.get(key),
    list: (prefix, range) => records.list(prefix, range),
    put: (key) => write('write', key),
    delete: (key) => write('delete', key),
  }
  // As before the seam: no history rows (a read refolds) and no feed.
  const { history: _history, ...storage } = composeStorage(log, kv)
  return storage
}

/** Locks for a read-only command: asks who holds a lease, takes none. */
function readOnlyPgLocks(locks: WriterLocks): WriterLocks {
  return {
    acquire: async (id: SessionId): Promise<never> => {
      throw new SessionfoldError('STORAGE_UNAVAILABLE', `session "${id}" cannot be opened for writing by a read-only command`, { sessionId: id })
    },
    isHeld: (id: SessionId) => locks.isHeld(id),
  }
}
