// Reads: a session's header and length, its events in pages, ids and headers in id order.
// Stored values are the JSON the engine encoded (events, checkpoint rows, and the header as a
// JSON string inside the jsonb column: see index.ts), parsed afresh on every read so callers
// never share objects; a value that does not parse, or an event that is not where its seq
// says, is CORRUPT_LOG.
import type { SessionEvent, SessionHeader, SessionId } from '../../core/model'
import { READ_PAGE, type SessionRead } from '../../storage/types'
import { corrupt } from './errors'
import type { PostgresClient } from './options'
import type { Names } from './schema'

export interface StoredInfo {
  header: SessionHeader
  length: number
}

/** A stored header, parsed and checked to be the header of `id`. */
export function parseHeader(id: SessionId, text: string): SessionHeader {
  let header: unknown
  try {
    header = JSON.parse(text)
  } catch {
    throw corrupt(id, 'its header is not JSON')
  }
  if (typeof header !== 'object' || header === null || (header as { id?: unknown }).id !== id) {
    throw corrupt(id, 'its stored header is not the header of this session')
  }
  return header as SessionHeader
}

/** The session's header and length, or undefined. */
export async function readInfo(sql: PostgresClient, n: Names, id: SessionId, prepare = true): Promise<StoredInfo | undefined> {
  const [row] = (await sql.unsafe(`SELECT header #>> '{}' AS header, length FROM ${n.sessions} WHERE id = $1`, [id], { prepare })) as {
    header: string
    length: string
  }[]
  return row && { header: parseHeader(id, row.header), length: Number(row.length) }
}

/**
 * Events `[at, end)` (at most READ_PAGE), by key range on (session_id, seq): each page starts
 * where the last one ended, so no page costs more than its own rows (no OFFSET). Returns
 * undefined when rows are missing (the caller tells a deleted session from a damaged log).
 */
export async function readPage(sql: PostgresClient, n: Names, id: SessionId, at: number, end: number, prepare = true): Promise<SessionEvent[] | undefined> {
  const rows = (await sql.unsafe(
    `SELECT seq, body FROM ${n.events} WHERE session_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq LIMIT $4`,
    [id, at, end, READ_PAGE],
    { prepare },
  )) as { seq: string; body: string }[]
  if (rows.length !== end - at) return undefined
  return rows.map((row, i) => {
    const seq = at + i
    let event: SessionEvent
    try {
      event = JSON.parse(row.body) as SessionEvent
    } catch {
      throw corrupt(id, 'a stored event is not JSON', seq)
    }
    if (Number(row.seq) !== seq || event?.seq !== seq) throw corrupt(id, `the event stored for seq ${seq} says seq ${String(event?.seq)}`, seq)
    return event
  })
}

/**
 * Sessions `ids` at once (getSessions), in one statement: header and length, and every event of
 * those of at most `maxEvents`; undefined for an id not there. A header that does not parse is
 * CORRUPT_LOG (the caller asks session by session); a session whose events are not all where
 * their seqs say is given without them, so that its own read reports it.
 */
export async function readSessions(
  sql: PostgresClient,
  n: Names,
  ids: readonly SessionId[],
  maxEvents: number,
  prepare = true,
): Promise<(SessionRead | undefined)[]> {
  const rows = (await sql.unsafe(
    // Each session's events by its own index lookup, bounded by its length (none for a session
    // over maxEvents): a join filter on the length alone read a big session's whole log to drop it.
    `SELECT s.id, s.header #>> '{}' AS header, s.length, e.seq, e.body FROM ${n.sessions} s
     LEFT JOIN LATERAL (SELECT seq, body FROM ${n.events} WHERE session_id = s.id
       AND seq < CASE WHEN s.length <= $2 THEN s.length ELSE 0 END ORDER BY seq LIMIT $2) e ON true
     WHERE s.id = ANY($1::text[]) ORDER BY s.id, e.seq`,
    [ids as SessionId[], maxEvents],
    { prepare },
  )) as { id: string; header: string; length: string; seq: string | null; body: string | null }[]
  const found = new Map<SessionId, SessionRead>()
  const broken = new Set<SessionId>()
  for (const row of rows) {
    let read = found.get(row.id)
    if (!read) {
      read = { header: parseHeader(row.id, row.header), length: Number(row.length) }
      if (read.length <= maxEvents) read.events = []
      found.set(row.id, read)
    }
    if (row.seq === null || !read.events) continue
    const seq = read.events.length
    let event: SessionEvent | undefined
    try {
      event = JSON.parse(row.body!) as SessionEvent
    } catch {
      broken.add(row.id)
    }
    if (Number(row.seq) !== seq || event?.seq !== seq) broken.add(row.id)
    else read.events.push(event)
  }
  for (const [id, read] of found) if (read.events && (broken.has(id) || read.events.length !== read.length)) delete read.events
  return ids.map((id) => found.get(id))
}

/** Ids strictly after `after` in byte order (compareIds), at most `limit`. */
export async function readIds(sql: PostgresClient, n: Names, after: SessionId | undefined, limit: number): Promise<SessionId[]> {
  const rows = (await (after === undefined
    ? sql.unsafe(`SELECT id FROM ${n.sessions} ORDER BY id COLLATE "C" LIMIT $1`, [limit])
    : sql.unsafe(`SELECT id FROM ${n.sessions} WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`, [after, limit]))) as { id: string }[]
  return rows.map((r) => r.id)
}

/** Headers of the sessions after `after`, in id order, at most `limit`; a damaged header is skipped. */
export async function readHeaders(sql: PostgresClient, n: Names, after: SessionId | undefined, limit: number): Promise<SessionHeader[]> {
  const rows = (await (after === undefined
    ? sql.unsafe(`SELECT id, header #>> '{}' AS header FROM ${n.sessions} ORDER BY id COLLATE "C" LIMIT $1`, [limit])
    : sql.unsafe(`SELECT id, header #>> '{}' AS header FROM ${n.sessions} WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`, [after, limit]))) as {
    id: string
    header: string
  }[]
  const headers: SessionHeader[] = []
  for (const row of rows) {
    try {
      headers.push(parseHeader(row.id, row.header))
    } catch {
      // listIds lists it, so that verify can report it.
    }
  }
  return headers
}
