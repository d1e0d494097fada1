// History rows (time travel) in the `history` table (schema version 4): a row per (session,
// position), the row after the first `at` events, deleted with its session (ON DELETE CASCADE).
// Like the latest checkpoint row they are a cache, so they commit without waiting for their WAL
// flush (synchronous_commit off for their own transaction).
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { assertPosition, notFound } from '../../storage/guard'
import type { HistoryRows } from '../../storage/types'
import { codeOf, corrupt } from './errors'
import type { PostgresClient } from './options'
import type { Names } from './schema'

type OnSession = <T>(op: string, id: SessionId, body: (sql: PostgresClient) => Promise<T>) => Promise<T>

export function createPgHistory(onSession: OnSession, n: Names, prepare: boolean): HistoryRows {
  /** SESSION_NOT_FOUND unless the session is there. */
  const exists = async (sql: PostgresClient, id: SessionId): Promise<void> => {
    const rows = await sql.unsafe(`SELECT 1 FROM ${n.sessions} WHERE id = $1`, [id], { prepare }) as unknown[]
    if (rows.length === 0) throw notFound(id)
  }
  return {
    put: (id, at, row) => onSession('history write', id, async (sql) => {
      assertPosition(id, at)
      let text: string
      try {
        text = JSON.stringify(row)
      } catch (err) {
        throw new SessionfoldError('INVALID_ARGUMENT', `history row of ${where(id)} is not JSON: ${(err as Error).message}`, { sessionId: id })
      }
      try {
        const done = await sql.unsafe(
          `INSERT INTO ${n.history} (session_id, at, row) SELECT s.id, $2, $3 FROM ${n.sessions} s, (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed WHERE s.id = $1 ON CONFLICT (session_id, at) DO UPDATE SET row = EXCLUDED.row RETURNING 1 AS ok`,
          [id, at, text], { prepare },
        ) as unknown[]
        if (done.length === 0) throw notFound(id)
      } catch (err) {
        if (codeOf(err) === '23503') throw notFound(id) // deleted between the check and the insert
        throw err
      }
    }),
    get: (id, at) => onSession('history read', id, async (sql) => {
      assertPosition(id, at, 0)
      const rows = await sql.unsafe(
        `SELECT h.at::int8::text AS at, h.row FROM ${n.sessions} s LEFT JOIN LATERAL (SELECT at, row FROM ${n.history} WHERE session_id = s.id AND at <= $2 ORDER BY at DESC LIMIT 1) h ON true WHERE s.id = $1`,
        [id, at], { prepare },
      ) as { at: string | null; row: string | null }[]
      if (rows.length === 0) throw notFound(id)
      const { at: found, row } = rows[0]!
      if (found === null || row === null) return undefined
      try {
        return { at: Number(found), row: JSON.parse(row) as unknown }
      } catch {
        throw corrupt(id, `its history row ${found} is not JSON`)
      }
    }),
    list: (id) => onSession('history read', id, async (sql) => {
      await exists(sql, id)
      const rows = await sql.unsafe(`SELECT at::text AS p FROM ${n.history} WHERE session_id = $1 ORDER BY at`, [id], { prepare }) as { p: string }[]
      return rows.map((r) => Number(r.p))
    }),
    remove: (id, at) => onSession('history delete', id, async (sql) => {
      for (const p of at) assertPosition(id, p)
      await exists(sql, id)
      if (at.length > 0) await sql.unsafe(`DELETE FROM ${n.history} WHERE session_id = $1 AND at = ANY($2::int8[])`, [id, at.map(String)], { prepare })
    }),
  }
}
