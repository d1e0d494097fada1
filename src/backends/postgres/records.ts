// Key-value records in PostgreSQL (StorageAdapter.kv, schema version 7): the store's own in
// `records`, a session's in `session_records`, keyed (session_id, the key's parts after the id)
// and deleted with their session by its foreign key. Keys are their flat form (kv.ts) in the
// "C" collation, so the database orders them as the parts sort. Like history rows they are a
// cache: a put commits without waiting for its WAL flush.
import type { SessionId } from '../../core/model'
import { assertKey, assertValue, flat, notFoundForKey, resolveKeyRange, sessionOfKey, SEPARATOR, unflat } from '../../storage/kv'
import type { KeyValueStore, RecordKey } from '../../storage/types'
import { codeOf } from './errors'
import type { PostgresClient } from './options'
import type { Names } from './schema'

type Run = <T>(op: string, body: (sql: PostgresClient) => Promise<T>) => Promise<T>

/** The row a key is stored in: its table's columns. */
const rowOf = (key: RecordKey): { owner?: SessionId; key: string } => {
  const owner = sessionOfKey(key)
  return owner === undefined ? { key: flat(key) } : { owner, key: flat(key.slice(2)) }
}

export function createPgRecords(run: Run, n: Names, prepare: boolean): KeyValueStore {
  const q = (sql: PostgresClient, text: string, params: unknown[]) => sql.unsafe(text, params as never[], { prepare }) as Promise<Record<string, string>[]>
  return {
    get: (key) => run('record read', async (sql) => {
      assertKey(key)
      const r = rowOf(key)
      const rows = r.owner === undefined
        ? await q(sql, `SELECT value FROM ${n.records} WHERE key = $1`, [r.key])
        : await q(sql, `SELECT value FROM ${n.sessionRecords} WHERE session_id = $1 AND key = $2`, [r.owner, r.key])
      return rows[0]?.value
    }),
    put: (key, value) => run('record write', async (sql) => {
      assertKey(key)
      assertValue(key, value)
      const r = rowOf(key)
      const relaxed = `(SELECT set_config('synchronous_commit', 'off', true)) AS relaxed`
      if (r.owner === undefined) {
        await q(sql, `INSERT INTO ${n.records} (key, value) SELECT $1, $2 FROM ${relaxed} ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [r.key, value])
        return
      }
      try {
        const done = await q(sql,
          `INSERT INTO ${n.sessionRecords} (session_id, key, value) SELECT s.id, $2, $3 FROM ${n.sessions} s, ${relaxed} WHERE s.id = $1
           ON CONFLICT (session_id, key) DO UPDATE SET value = EXCLUDED.value RETURNING 1 AS ok`, [r.owner, r.key, value])
        if (done.length === 0) throw notFoundForKey(r.owner, key)
      } catch (err) {
        if (codeOf(err) === '23503') throw notFoundForKey(r.owner, key) // deleted between the select and the insert
        throw err
      }
    }),
    delete: (key) => run('record delete', async (sql) => {
      assertKey(key)
      const r = rowOf(key)
      if (r.owner === undefined) await q(sql, `DELETE FROM ${n.records} WHERE key = $1`, [r.key])
      else await q(sql, `DELETE FROM ${n.sessionRecords} WHERE session_id = $1 AND key = $2`, [r.owner, r.key])
    }),
    list: (prefix, range) => run('record read', async (sql) => {
      const r = resolveKeyRange(prefix, range)
      const owner = prefix.length >= 2 ? sessionOfKey([...prefix.slice(0, 2), 'x']) : undefined
      // Every key as its flat form, filtered and ordered in the "C" collation: the order of the parts.
      const all = owner === undefined
        ? `SELECT key AS k FROM ${n.records} UNION ALL SELECT 'session${SEPARATOR}' || session_id || '${SEPARATOR}' || key FROM ${n.sessionRecords}`
        : `SELECT 'session${SEPARATOR}' || session_id || '${SEPARATOR}' || key AS k FROM ${n.sessionRecords} WHERE session_id = $4`
      const rows = await q(sql,
        `SELECT k FROM (${all}) AS flat WHERE starts_with(k, $1) AND ($2::text IS NULL OR k COLLATE "C" > $2::text COLLATE "C") ORDER BY k COLLATE "C" LIMIT $3`,
        owner === undefined ? [r.prefix, r.after ?? null, r.limit] : [r.prefix, r.after ?? null, r.limit, owner])
      return rows.map((row) => unflat(row.k!))
    }),
  }
}
