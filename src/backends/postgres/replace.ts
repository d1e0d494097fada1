// replaceRecords on PostgreSQL: one transaction that locks the session's row, checks every
// record against the stored one (its seq, its length) and updates them, and the header, in
// place; a check that fails rolls all of it back.
import type { SessionId } from '../../core/model'
import { checkReplacement, notFound, sameLength } from '../../storage/guard'
import type { RecordReplacement } from '../../storage/types'
import type { PostgresClient } from './options'
import { parseHeader } from './read'
import type { Names } from './schema'

export async function replaceRecords(sql: PostgresClient, n: Names, id: SessionId, replacement: RecordReplacement): Promise<void> {
  await sql.begin(async (tx: PostgresClient) => {
    // The session's row locked: an append (which locks it too) waits for this to commit.
    const [row] = (await tx.unsafe(`SELECT header #>> '{}' AS header, length FROM ${n.sessions} WHERE id = $1 FOR UPDATE`, [id])) as {
      header: string
      length: string
    }[]
    if (!row) throw notFound(id)
    const header = checkReplacement(id, replacement, { header: parseHeader(id, row.header), length: Number(row.length) })
    const seqs = replacement.records.map((r) => r.event.seq)
    if (seqs.length > 0) {
      const stored = (await tx.unsafe(
        `SELECT seq, octet_length(convert_to(body, 'UTF8')) AS bytes FROM ${n.events} WHERE session_id = $1 AND seq = ANY($2::int8[])`,
        [id, seqs],
      )) as { seq: string; bytes: string | number }[]
      const bytes = new Map(stored.map((s) => [Number(s.seq), Number(s.bytes)]))
      for (const r of replacement.records) sameLength(id, r.event.seq, bytes.get(r.event.seq), r.json)
      await tx.unsafe(
        `UPDATE ${n.events} AS e SET body = u.body FROM unnest($2::int8[], $3::text[]) AS u(seq, body) WHERE e.session_id = $1 AND e.seq = u.seq`,
        [id, seqs, replacement.records.map((r) => r.json)],
      )
    }
    if (header) await tx.unsafe(`UPDATE ${n.sessions} SET header = to_jsonb($2::text) WHERE id = $1`, [id, JSON.stringify(header)])
  })
}
