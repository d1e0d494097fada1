// Group commit: appends (to one session or many) that arrive while a transaction is in flight
// wait, and go together in the next one: one commit, and a fixed number of round trips of
// statements whatever the group's size (arrays through unnest). A lone append goes at once.
// Each append still succeeds or fails on its own: its session gone, a seq that does not
// continue, a lost write lease refuse that append only, checked in the transaction under the
// session rows' locks before anything is inserted. A transaction that fails fails every append
// in it (nothing of it was written).
import { SessionfoldError, where } from '../../src/errors'
import type { SessionId } from '../../src/model'
import type { EncodedEvent } from '../../src/validate'
import { assertContinues, notFound } from '../guard'
import { codeOf } from './errors'
import type { PgSettings, PostgresClient } from './options'
import type { Names } from './schema'

interface PendingAppend {
  id: SessionId
  batch: readonly EncodedEvent[]
  resolve: () => void
  reject: (err: unknown) => void
}

/** A group's bounds: UTF-16 units of event JSON, and appends. */
const MAX_GROUP_BYTES = 32 * 1024 * 1024
const MAX_GROUP_APPENDS = 4096

export interface Appender {
  /** Resolves once `batch` is committed (per durability), or rejects with why it was not. */
  append(id: SessionId, batch: readonly EncodedEvent[]): Promise<void>
}

export function createAppender(
  sql: () => Promise<PostgresClient>,
  n: Names,
  { strict, fence }: Pick<PgSettings, 'strict' | 'fence'>,
): Appender {
  const queue: PendingAppend[] = []
  let flushing: Promise<void> | undefined

  async function flushLoop(): Promise<void> {
    try {
      while (queue.length > 0) {
        // A group stays well under the protocol's 1 GiB message: the rest waits for the next one.
        let take = 0
        let bytes = 0
        while (take < queue.length && (take === 0 || (bytes < MAX_GROUP_BYTES && take < MAX_GROUP_APPENDS))) {
          for (const e of queue[take]!.batch) bytes += e.json.length
          take++
        }
        await writeGroup(queue.splice(0, take))
      }
    } finally {
      flushing = undefined
    }
  }

  async function writeGroup(group: PendingAppend[]): Promise<void> {
    const ids = [...new Set(group.map((p) => p.id))].sort()
    /** Appends refused on their own (told at once); the others land or fail together. */
    const refused = new Set<PendingAppend>()
    const landed: PendingAppend[] = []
    try {
      // The lease tokens as they are now: a lease lost since the append was asked still fences it.
      const tokens = new Map<SessionId, string>()
      for (const id of ids) {
        const token = fence?.(id)
        if (token !== undefined) tokens.set(id, String(token))
      }
      const db = await sql()
      await db.begin(async (tx: PostgresClient) => {
        // Round trip 1: the settings, the fences, and the session rows locked (in id order, so
        // two processes never deadlock on them) with their lengths as committed.
        const first: PromiseLike<unknown>[] = []
        if (!strict) first.push(tx.unsafe(`SET LOCAL synchronous_commit = off`))
        const fenced = [...tokens.keys()]
        const held = fenced.length === 0 ? Promise.resolve([]) : tx.unsafe(
          `SELECT l.session_id FROM ${n.leases} l JOIN unnest($1::text[], $2::int8[]) AS f(id, token) ON l.session_id = f.id AND l.token = f.token ORDER BY l.session_id FOR SHARE OF l`,
          [fenced, fenced.map((id) => tokens.get(id)!)],
        )
        const locked = tx.unsafe(`SELECT id, length FROM ${n.sessions} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [ids])
        const [heldRows, lengthRows] = await Promise.all([held, locked, ...first]) as [{ session_id: string }[], { id: string; length: string }[]]
        const stillHeld = new Set(heldRows.map((r) => r.session_id))
        const lengths = new Map(lengthRows.map((r) => [r.id, Number(r.length)]))

        const sessionIds: string[] = []
        const seqs: number[] = []
        const bodies: string[] = []
        for (const p of group) {
          try {
            const length = lengths.get(p.id)
            if (length === undefined) throw notFound(p.id)
            if (tokens.has(p.id) && !stillHeld.has(p.id)) {
              throw new SessionfoldError('SESSION_LOCKED', `append to ${where(p.id)} refused: this writer lost its write lease (another process may have taken it over); nothing was written`, { sessionId: p.id })
            }
            assertContinues(p.id, p.batch, length)
          } catch (err) {
            refused.add(p)
            p.reject(err)
            continue
          }
          landed.push(p)
          for (const e of p.batch) {
            sessionIds.push(p.id)
            seqs.push(e.event.seq)
            bodies.push(e.json)
          }
          lengths.set(p.id, lengths.get(p.id)! + p.batch.length)
        }
        if (sessionIds.length === 0) return
        // Round trip 2: the events, the new lengths, and one growth notice per session (sent
        // by the server at commit, so a follower never hears of events it cannot read yet).
        const grown = [...new Set(landed.filter((p) => p.batch.length > 0).map((p) => p.id))]
        await Promise.all([
          tx.unsafe(`INSERT INTO ${n.events} (session_id, seq, body) SELECT * FROM unnest($1::text[], $2::int8[], $3::text[])`, [sessionIds, seqs, bodies]),
          tx.unsafe(
            `UPDATE ${n.sessions} s SET length = u.length FROM unnest($1::text[], $2::int8[]) AS u(id, length) WHERE s.id = u.id`,
            [grown, grown.map((id) => lengths.get(id)!)],
          ),
          tx.unsafe(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, [n.channel, grown.map((id) => `${id}:${lengths.get(id)!}`)]),
        ])
      })
    } catch (err) {
      for (const p of group) {
        if (refused.has(p)) continue
        // A duplicate (session_id, seq): another writer got there between our check and insert
        // (only possible without the locks); the database kept the log whole.
        const e = codeOf(err) === '23505'
          ? new SessionfoldError('SEQ_CONFLICT', `append to ${where(p.id)} conflicts with events written beside it; nothing was written`, { sessionId: p.id, cause: err })
          : err
        p.reject(e)
      }
      return
    }
    for (const p of landed) p.resolve()
  }

  return {
    append(id, batch) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ id, batch, resolve, reject })
        flushing ??= flushLoop()
      })
    },
  }
}
