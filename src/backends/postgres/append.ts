// Group commit: appends (to one session or many) that arrive while a group is in flight wait,
// and go together in the next one: one statement (append_group, schema.ts), so one round trip
// and one commit whatever the group's size (arrays through unnest, the events' JSON as one text
// of lines). A lone append goes at once.
// Each append still succeeds or fails on its own: its session gone, a seq that does not
// continue, a lost write lease refuse that append only, judged in the statement under the
// session rows' locks before anything is inserted. A statement that fails fails every append
// in it (nothing of it was written).
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import type { EncodedEvent } from '../../core/validate'
import { assertContinues, notFound } from '../../storage/guard'
import { growthChannelOf } from './channel'
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
  { strict, fence, prepare }: Pick<PgSettings, 'strict' | 'fence' | 'prepare'>,
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
        const group = queue.splice(0, take)
        // What writeGroup throws before its statement (the caller's fence, say) fails its group
        // only: no append left waiting, and no rejection of this loop that nobody awaits.
        await writeGroup(group).catch((err: unknown) => {
          for (const p of group) p.reject(err)
        })
      }
    } finally {
      flushing = undefined
    }
  }

  async function writeGroup(group: PendingAppend[]): Promise<void> {
    // The group as arrays, one statement (schema.ts, append_group): the sessions in id order
    // with the lease token held on each as it is now (a lease lost since the append was asked
    // still fences it) and its growth channel, each append's session, first seq and size, and
    // every event's seq, and their JSON, a line each.
    const ids = [...new Set(group.map((p) => p.id))].sort()
    const position = new Map(ids.map((id, i) => [id, i + 1]))
    const tokens = ids.map((id) => {
      const token = fence?.(id)
      return token === undefined ? null : String(token)
    })
    const aIdx: number[] = []
    const aFrom: number[] = []
    const aCount: number[] = []
    const eApp: number[] = []
    const eSeq: number[] = []
    const eBody: string[] = []
    group.forEach((p, i) => {
      aIdx.push(position.get(p.id)!)
      aFrom.push(p.batch[0]?.event.seq ?? 0)
      aCount.push(p.batch.length)
      for (const e of p.batch) {
        eApp.push(i + 1)
        eSeq.push(e.event.seq)
        eBody.push(e.json)
      }
    })
    let codes: number[]
    let seen: (string | null)[]
    try {
      const db = await sql()
      const [row] = (await db.unsafe(
        `SELECT codes, seen FROM ${n.schema}.append_group($1::text[], $2::int8[], $3::text[], $4::int4[], $5::int8[], $6::int4[], $7::int4[], $8::int8[], $9::text, $10::boolean)`,
        [ids, tokens, ids.map((id) => growthChannelOf(n.bare, id)), aIdx, aFrom, aCount, eApp, eSeq, eBody.join('\n'), !strict],
        { prepare },
      )) as { codes: number[]; seen: (string | null)[] }[]
      codes = row!.codes
      seen = row!.seen
    } catch (err) {
      // Nothing of the group was written.
      for (const p of group) {
        // A duplicate (session_id, seq): another writer got there beside the session lock
        // (only possible without it); the database kept the log whole.
        p.reject(
          codeOf(err) === '23505'
            ? new SessionfoldError('SEQ_CONFLICT', `append to ${where(p.id)} conflicts with events written beside it; nothing was written`, {
                sessionId: p.id,
                cause: err,
              })
            : err,
        )
      }
      return
    }
    group.forEach((p, i) => {
      switch (Number(codes[i])) {
        case 0:
          return p.resolve()
        case 1:
          return p.reject(notFound(p.id))
        case 2:
          return p.reject(
            new SessionfoldError(
              'SESSION_LOCKED',
              `append to ${where(p.id)} refused: this writer lost its write lease (another process may have taken it over); nothing was written`,
              { sessionId: p.id },
            ),
          )
        default:
          try {
            assertContinues(p.id, p.batch, Number(seen[i]))
            p.reject(new SessionfoldError('SEQ_CONFLICT', `append to ${where(p.id)} conflicts; nothing was written`, { sessionId: p.id }))
          } catch (err) {
            p.reject(err)
          }
      }
    })
  }

  return {
    append(id, batch) {
      // A batch that does not count up by one is refused here; append_group checks where it starts.
      const first = batch[0]?.event.seq ?? 0
      try {
        assertContinues(id, batch, first)
        // The events go as lines of one text: JSON as JSON.stringify writes it has no line break.
        for (const e of batch) {
          if (e.json.includes('\n'))
            throw new SessionfoldError('INVALID_ARGUMENT', `event for ${where(id, e.event.seq)} is not one line of JSON; nothing was written`, {
              sessionId: id,
              seq: e.event.seq,
            })
        }
      } catch (err) {
        return Promise.reject(err)
      }
      return new Promise<void>((resolve, reject) => {
        queue.push({ id, batch, resolve, reject })
        if (flushing === undefined) flushing = flushLoop()
      })
    },
  }
}
