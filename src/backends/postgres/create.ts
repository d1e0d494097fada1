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
  const made = await sql.begin(async (tx: PostgresClient) => {
    const statements: PromiseLike<unknown>[] = []
    if (!strict) statements.push(tx.unsafe(`SET LOCAL synchronous_commit = off`))
    // Events left by a session of one of these ids that a process of an older sessionfold deleted (schema.ts, V5).
    statements.push(
      tx.unsafe(`DELETE FROM ${n.events} e WHERE e.session_id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM ${n.sessions} s WHERE s.id = e.session_id)`, [
        ids,
      ]),
    )
    // Rows in id order, so that two imports of overlapping groups take their row locks in one order.
    // A taken id is passed over (ON CONFLICT DO NOTHING): only the rows made get events and a feed entry.
    const created = tx.unsafe(
      `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int8[]) AS t(id, header, length)),
       made AS (INSERT INTO ${n.sessions} (id, header, length) SELECT id, to_jsonb(header), length FROM input ORDER BY id ON CONFLICT (id) DO NOTHING RETURNING id, length),
       fed AS (INSERT INTO ${n.feed} (session_id, from_seq, to_seq) SELECT id, 0, length FROM made ORDER BY id),
       written AS (INSERT INTO ${n.events} (session_id, seq, body) SELECT e.id, e.seq, e.body FROM unnest($4::text[], $5::int8[], $6::text[]) AS e(id, seq, body) JOIN made USING (id))
       SELECT id FROM made`,
      [
        ids,
        sessions.map((s) => JSON.stringify(s.header)),
        sessions.map((s) => s.events.length),
        sessions.flatMap((s) => s.events.map(() => s.header.id)),
        sessions.flatMap((s) => s.events.map((e) => e.event.seq)),
        sessions.flatMap((s) => s.events.map((e) => e.json)),
      ],
    ) as PromiseLike<{ id: string }[]>
    statements.push(created)
    await Promise.all(statements)
    return new Set((await created).map((r) => r.id))
  })
  return ids.map((id) => made.has(id))
}
