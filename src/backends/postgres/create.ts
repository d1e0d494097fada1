// createSessions on PostgreSQL: many new sessions with their events in one transaction (an
// import of many small sessions committed a session at a time waited on a WAL flush each:
// about 2.4 ms a session 16 at once on this project's machine, against tens of µs in one commit).
import type { NewSession } from '../../storage/types'
import type { PostgresClient } from './options'
import type { Names } from './schema'

/**
 * Stores `sessions` not stored yet, in one transaction: each one's row, events and feed entry,
 * or (its id taken) nothing of it. True for each created, in order.
 */
export async function createMany(sql: PostgresClient, n: Names, sessions: readonly NewSession[], strict: boolean): Promise<boolean[]> {
  if (sessions.length === 0) return []
  const ids = sessions.map((s) => s.header.id)
  const created = await sql.begin(async (tx: PostgresClient) => {
    const relaxed = strict ? undefined : tx.unsafe(`SET LOCAL synchronous_commit = off`)
    // The rows first, in id order, so that two imports of overlapping groups lock them in one
    // order; a taken id is passed over (ON CONFLICT DO NOTHING), and only the rows made get a
    // feed entry and, next, their events.
    const made = tx.unsafe(
      `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int8[]) AS t(id, header, length)),
       made AS (INSERT INTO ${n.sessions} (id, header, length) SELECT id, to_jsonb(header), length FROM input ORDER BY id ON CONFLICT (id) DO NOTHING RETURNING id, length),
       fed AS (INSERT INTO ${n.feed} (session_id, from_seq, to_seq) SELECT id, 0, length FROM made ORDER BY id)
       SELECT id FROM made`,
      [ids, sessions.map((s) => JSON.stringify(s.header)), sessions.map((s) => s.events.length)],
    ) as PromiseLike<{ id: string }[]>
    const [, rows] = await Promise.all([relaxed, made])
    const madeIds = rows.map((r) => r.id)
    if (madeIds.length === 0) return new Set<string>()
    const mine = new Set(madeIds)
    const news = sessions.filter((s) => mine.has(s.header.id))
    await Promise.all([
      // Events left by a session of one of these ids that a process of an older sessionfold
      // deleted (schema.ts, V5); their rows are ours now, so no other writer is at them.
      tx.unsafe(`DELETE FROM ${n.events} WHERE session_id = ANY($1::text[])`, [madeIds]),
      tx.unsafe(`INSERT INTO ${n.events} (session_id, seq, body) SELECT * FROM unnest($1::text[], $2::int8[], $3::text[])`, [
        news.flatMap((s) => s.events.map(() => s.header.id)),
        news.flatMap((s) => s.events.map((e) => e.event.seq)),
        news.flatMap((s) => s.events.map((e) => e.json)),
      ]),
    ])
    return mine
  })
  return ids.map((id) => created.has(id))
}
