// The PostgreSQL adapter: tables in one schema (schema.ts, migrated on first use), appends by
// group commit (append.ts), reads in key-range pages (read.ts), driver and server errors as the
// storage contract's codes (errors.ts). This file wires the parts together behind the guard,
// with a bound on every call so that a server that stopped answering never hangs one.
/**
 * Storage on PostgreSQL (Node only), behind the `StorageAdapter` interface, for sessions shared
 * by several processes or machines. Needs the `postgres` package (an optional peer dependency):
 * `npm install postgres`.
 *
 * @module sessionfold/adapters/postgres
 */
import { SessionfoldError, where } from '../../core/errors'
import type { SessionEvent, SessionId } from '../../core/model'
import type { EncodedEvent } from '../../core/validate'
import {
  alreadyExists,
  assertGetSessions,
  assertHeader,
  assertNewSessions,
  assertSeed,
  assertSessionId,
  cancelled,
  createGuard,
  notFound,
  resolveList,
  resolveRange,
} from '../../storage/guard'
import { isCount } from '../../core/limits'
import { composeStorage } from '../../storage/records'
import { READ_PAGE, type KeyValueStore, type LogStore, type ReadRange, type SessionInfo, type StorageAdapter } from '../../storage/types'
import { createAppender } from './append'
import { createMany } from './create'
import { growthChannelOf } from './channel'
import { DRIVER_OPTIONS } from './driver-types'
import { codeOf, corrupt, redact, storageError } from './errors'
import { settingsOf, type PgSettings, type PostgresAdapterOptions, type PostgresClient } from './options'
import { readHeaders, readIds, readInfo, readPage, readSessions } from './read'
import { createPgRecords } from './records'
import { replaceRecords } from './replace'
import { migrate, namesOf, settleFeed } from './schema'

export type { PostgresAdapterOptions, PostgresClient } from './options'
export { SCHEMA_VERSION } from './schema'
export { DRIVER_OPTIONS, type DriverOptions, type DriverType } from './driver-types'
// The storage contract, for code that uses an adapter directly.
export * from '../../storage/public-types'

/** A pool of our own: the driver loaded on first use, so that importing this module needs no driver. */
async function openPool(settings: PgSettings, max = 10, name = 'sessionfold'): Promise<PostgresClient> {
  let postgres: (url: string, options: object) => PostgresClient
  try {
    postgres = ((await import('postgres')) as unknown as { default: typeof postgres }).default
  } catch (err) {
    throw new SessionfoldError('STORAGE_UNAVAILABLE', 'the PostgreSQL store needs the `postgres` package: npm install postgres', { cause: err })
  }
  try {
    return postgres(settings.url!, {
      ...DRIVER_OPTIONS, // no type fetch of the driver's own: its failure was an unhandled rejection
      max,
      connect_timeout: settings.connectTimeoutMs / 1000,
      idle_timeout: 60,
      // CREATE ... IF NOT EXISTS and the like talk; the adapter has nothing to tell its app of it.
      onnotice: () => {},
      connection: {
        application_name: name,
        statement_timeout: settings.queryTimeoutMs,
        // A transaction left open by a process that stopped (a debugger, a hung host) does not
        // keep session rows locked past this.
        idle_in_transaction_session_timeout: 2 * settings.queryTimeoutMs,
      },
    })
  } catch (err) {
    throw new SessionfoldError(
      'STORAGE_UNAVAILABLE',
      `the PostgreSQL store cannot use its URL: ${redact((err as Error)?.message ?? String(err), settings.secret)}`,
    )
  }
}

/**
 * A storage adapter on PostgreSQL: the tables of schema `schema` (created on first use, with a
 * schema version), each event a row keyed (session_id, seq) holding the event's JSON, appends
 * that arrive together (to any sessions) committed in one transaction, each refused on its own
 * (SEQ_CONFLICT, SESSION_NOT_FOUND, SESSION_LOCKED when `fence` says its lease is lost). A
 * refused or lost connection, or a server that does not answer within the bounds, is
 * STORAGE_UNAVAILABLE, and the next call connects again; a full disk is STORAGE_QUOTA_EXCEEDED.
 */
export function createPostgresAdapter(options: PostgresAdapterOptions): StorageAdapter {
  const settings = settingsOf(options)
  const n = namesOf(settings.schema)
  const guard = createGuard('postgres')
  let pool: Promise<PostgresClient> | undefined
  let ready: Promise<PostgresClient> | undefined

  /** The pool, once the schema is at our version. A failed attempt is tried again by the next call. */
  const db = (): Promise<PostgresClient> => {
    if (ready) return ready
    pool ??= settings.sql ? Promise.resolve(settings.sql) : openPool(settings)
    const p = pool.then(async (sql) => {
      await migrate(sql, settings.schema)
      await settleFeed(sql, settings.schema)
      return sql
    })
    p.catch(() => {
      if (ready === p) ready = undefined
    })
    ready = p
    return p
  }

  /** `call` bounded in time: past the deadline the caller is told, whatever the driver still waits for. */
  const bounded = <T>(op: string, id: SessionId | undefined, call: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        const subject = id === undefined ? 'the PostgreSQL store' : `${where(id)} in the PostgreSQL store`
        const outcome = op === 'append' ? ': it may still commit (getSession tells)' : ''
        reject(
          new SessionfoldError('STORAGE_UNAVAILABLE', `${op} of ${subject} had no answer within ${settings.callDeadlineMs} ms${outcome}`, { sessionId: id }),
        )
      }, settings.callDeadlineMs)
      call.then(
        (v) => {
          clearTimeout(timer)
          resolve(v)
        },
        (err: unknown) => {
          clearTimeout(timer)
          reject(err)
        },
      )
    })

  /** A public operation: through the guard, bounded, its errors in the contract's words. */
  const run = <T>(op: string, id: SessionId | undefined, body: () => Promise<T>): Promise<T> =>
    guard.run(
      () => bounded(op, id, body()),
      (err) => storageError(err, op, id, settings.secret),
    )

  /** An operation on session `id`, once its id is checked (before any SQL). */
  const onSession = <T>(op: string, id: SessionId, body: (sql: PostgresClient) => Promise<T>): Promise<T> =>
    run(op, typeof id === 'string' ? id : undefined, async () => {
      assertSessionId(id)
      return body(await db())
    })

  // Appends through one connection (options.ts, appendSql): group commit sends one statement at
  // a time, and the driver hands a pool's idle connections out in turn, so a writer's appends
  // went to a different server process each time (three in turn beside checkpoint writes).
  let appendPool: Promise<PostgresClient> | undefined
  const appendDb = async (): Promise<PostgresClient> => {
    const sql = await db() // the schema at our version first
    return settings.appendSql ?? (settings.sql ? sql : await (appendPool ??= openPool(settings, 1, 'sessionfold appends')))
  }
  const appender = createAppender(appendDb, n, settings)

  const getInfo = async (sql: PostgresClient, id: SessionId): Promise<SessionInfo | undefined> => readInfo(sql, n, id, settings.prepare)

  const log: LogStore = {
    kind: 'postgres',

    createSession: (header, seed: readonly EncodedEvent[] = []) =>
      run('create', typeof header?.id === 'string' ? header.id : undefined, async () => {
        assertHeader(header)
        assertSeed(header, seed)
        const id = header.id
        const sql = await db()
        try {
          await sql.begin(async (tx: PostgresClient) => {
            const statements: PromiseLike<unknown>[] = []
            if (!settings.strict) statements.push(tx.unsafe(`SET LOCAL synchronous_commit = off`))
            // The header as its JSON text inside a jsonb string: a jsonb object cannot hold every
            // string a header may (\u0000 in a cwd), and the text round-trips exactly.
            // Events left by a session of this id that a process of an older sessionfold deleted (schema.ts, V5).
            statements.push(tx.unsafe(`DELETE FROM ${n.events} WHERE session_id = $1 AND NOT EXISTS (SELECT 1 FROM ${n.sessions} WHERE id = $1)`, [id]))
            statements.push(
              tx.unsafe(`INSERT INTO ${n.sessions} (id, header, length) VALUES ($1, to_jsonb($2::text), $3)`, [id, JSON.stringify(header), seed.length]),
            )
            if (seed.length > 0) {
              statements.push(
                tx.unsafe(`INSERT INTO ${n.events} (session_id, seq, body) SELECT $1, * FROM unnest($2::int8[], $3::text[])`, [
                  id,
                  seed.map((e) => e.event.seq),
                  seed.map((e) => e.json),
                ]),
              )
            }
            statements.push(tx.unsafe(`INSERT INTO ${n.feed} (session_id, from_seq, to_seq) VALUES ($1, 0, $2)`, [id, seed.length]))
            await Promise.all(statements)
          })
        } catch (err) {
          if (codeOf(err) === '23505') throw alreadyExists(id)
          throw err
        }
      }),

    createSessions: (sessions) =>
      run('create', undefined, async () => {
        assertNewSessions(sessions)
        return createMany(await db(), n, sessions, settings.strict)
      }),

    append: (id, batch) => onSession('append', id, () => appender.append(id, batch)),

    async *readEvents(id, range?: ReadRange): AsyncGenerator<SessionEvent[]> {
      guard.check()
      // A range with an end whose first page is all there needs no lookup of the session
      // first (rows exist only up to its length): a follower reading what a notice announced
      // makes one query. Otherwise, or if rows are missing, the session is looked up.
      let start = range?.from ?? 0
      if (range?.to !== undefined && isCount(start) && isCount(range.to) && range.to > start && !range.signal?.aborted) {
        const end = Math.min(range.to, start + READ_PAGE)
        const first = await onSession('read', id, async (sql) => readPage(sql, n, id, start, end, settings.prepare))
        if (first) {
          yield first
          start = end
          if (start >= range.to) return
        }
      }
      const info = await onSession('read', id, (sql) => getInfo(sql, id))
      if (!info) throw notFound(id)
      const { from, to } = resolveRange(id, { ...range, from: start }, info.length)
      for (let at = from; at < to; at += READ_PAGE) {
        if (range?.signal?.aborted) throw cancelled(id)
        const end = Math.min(to, at + READ_PAGE)
        const page = await onSession('read', id, async (sql) => {
          const events = await readPage(sql, n, id, at, end, settings.prepare)
          if (events) return events
          // Rows are missing: the session was deleted (or deleted and made again) since the
          // read began, or its log is damaged.
          const now = await getInfo(sql, id)
          if (!now || now.header.createdAt !== info.header.createdAt || now.length < end) throw notFound(id)
          throw corrupt(id, `events ${at}..${end - 1} are missing`, at)
        })
        yield page
      }
    },

    getSession: (id) => onSession('read', id, (sql) => getInfo(sql, id)),

    getSessions: (ids, maxEvents) =>
      run('read', undefined, async () => {
        assertGetSessions(ids, maxEvents)
        return readSessions(await db(), n, ids, maxEvents, settings.prepare)
      }),

    listSessions: (opts) =>
      run('list', undefined, async () => {
        const { after, limit } = resolveList(opts)
        return readHeaders(await db(), n, after, limit)
      }),

    listIds: (opts) =>
      run('list', undefined, async () => {
        const { after, limit } = resolveList(opts)
        return readIds(await db(), n, after, limit)
      }),

    // One transaction: the row first (it waits for an append holding it, and appends after it
    // find no session), then its events; checkpoint and history rows go with the row (ON DELETE
    // CASCADE), and the key-value records too. Events have no key to the row since schema version 5 (schema.ts).
    deleteSession: (id) =>
      onSession('delete', id, async (sql) => {
        // Its growth channel is told, with the commit: engines following it look, and find it gone.
        // A delete in the change feed (when there was a session): changesSince sends its tombstone from there.
        await sql.begin((tx: PostgresClient) => [
          tx.unsafe(
            `WITH gone AS (DELETE FROM ${n.sessions} WHERE id = $1 RETURNING id) INSERT INTO ${n.feed} (session_id, from_seq, to_seq) SELECT id, 0, 0 FROM gone`,
            [id],
          ),
          tx.unsafe(`DELETE FROM ${n.events} WHERE session_id = $1`, [id]),
          tx.unsafe(`SELECT pg_notify($1, $2)`, [growthChannelOf(n.bare, id), `${id}:deleted`]),
        ])
      }),

    feed: {
      id: () =>
        run('feed read', undefined, async () => {
          const [row] = (await (await db()).unsafe(`SELECT value FROM ${n.meta} WHERE key = '#feed'`)) as { value: string }[]
          if (!row) throw new SessionfoldError('CORRUPT_LOG', `the PostgreSQL store in schema "${n.bare}" has a feed without its identity`)
          return row.value
        }),
      // Every row of a transaction older than all those running is in; a position is "xid:pos".
      head: () =>
        run('feed read', undefined, async () => {
          const [row] = (await (await db()).unsafe(`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS x`)) as { x: string }[]
          return `${row!.x}:0`
        }),
      read: (after, limit) =>
        run('feed read', undefined, async () => {
          const [x, p] = after === '' ? ['0', '0'] : after.split(':')
          if (!/^\d{1,20}$/.test(x ?? '') || !/^\d{1,19}$/.test(p ?? '') || !isCount(limit)) {
            throw new SessionfoldError('INVALID_ARGUMENT', `feed position ${JSON.stringify(after)} is not one of this store's`)
          }
          const rows = (await (
            await db()
          ).unsafe(
            `SELECT xid::text AS x, pos::text AS p, session_id AS id, from_seq AS f, to_seq AS t FROM ${n.feed}
            WHERE (xid, pos) > ($1::xid8, $2::int8) AND xid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY xid, pos LIMIT $3`,
            [x, p, limit],
            { prepare: settings.prepare },
          )) as { x: string; p: string; id: string; f: string | number; t: string | number }[]
          return rows.map((r) => ({ at: `${r.x}:${r.p}`, id: r.id, from: Number(r.f), to: Number(r.t) }))
        }),
    },

    replaceRecords: (id, replacement) => onSession('replace', id, (sql) => replaceRecords(sql, n, id, replacement)),

    close: () =>
      guard.close(async () => {
        // A pool given by the caller is the caller's to end.
        if (!settings.sql && pool) await (await pool.catch(() => undefined))?.end({ timeout: 5 })
        if (appendPool) await (await appendPool.catch(() => undefined))?.end({ timeout: 5 })
      }),
  }
  const kv: KeyValueStore = createPgRecords((op, body) => run(op, undefined, async () => body(await db())), n, settings.prepare)
  return composeStorage(log, kv, {
    exists: (id) =>
      onSession(
        'read',
        id,
        async (sql) => ((await sql.unsafe(`SELECT 1 FROM ${n.sessions} WHERE id = $1`, [id], { prepare: settings.prepare })) as unknown[]).length > 0,
      ),
  })
}
