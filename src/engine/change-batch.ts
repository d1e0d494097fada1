// A change batch as it arrives from another store (over IPC, a socket, a file): untrusted.
// It is checked whole, and every event encoded, before anything is written.
import { z } from 'zod/mini'
import { SessionfoldError, where } from '../core/errors'
import type { SessionEvent, SessionHeader, SessionId } from '../core/model'
import { MAX_EVENT_TYPE_LENGTH, isEventType, isEventVersion, isTime } from '../core/limits'
import type { Tombstone } from '../core/changes'
import { countSchema, safeParse, sessionHeaderSchema, sessionIdSchema, timeSchema } from '../core/schemas'
import { CHAIN_ZERO, isChain } from '../core/chain'
import { assertPlainJson, describe, encodeEvent, isPlainObject, type EncodedEvent } from '../core/validate'

const bad = (message: string, id?: SessionId, seq?: number) => new SessionfoldError('INVALID_ARGUMENT', message, { sessionId: id, seq })

/** At most this many tombstones in one batch (changesSince sends at most its `maxEvents`, at most 10,000). */
export const MAX_BATCH_TOMBSTONES = 10_000

const envelopeSchema = z.strictObject({
  v: z.literal(1),
  sessions: z.array(
    z.strictObject({ header: z.unknown(), from: countSchema, events: z.array(z.unknown()), chain: z.optional(z.string()), length: z.optional(countSchema) }),
  ),
  deleted: z.optional(z.array(z.strictObject({ id: sessionIdSchema, createdAt: timeSchema, deletedAt: timeSchema })).check(z.maxLength(MAX_BATCH_TOMBSTONES))),
})

/** A batch entry checked whole, its events encoded for storage. */
export interface CheckedEntry {
  header: SessionHeader
  from: number
  events: EncodedEvent[]
  /** The sender's chain value at `from` (CHAIN_ZERO at 0). */
  chain: string
}

/** The whole batch checked, and every event encoded, before anything is written. */
export function checkBatch(input: unknown, maxEventBytes: number): { entries: CheckedEntry[]; deleted: Tombstone[] } {
  if (!isPlainObject(input)) throw bad(`applyChanges needs a batch made by changesSince, got ${describe(input)}`)
  const envelope = safeParse(envelopeSchema, input)
  if (!envelope.success) {
    throw bad(
      `the change batch is malformed: ${envelope.error.issues
        .map((i) => `${i.path.join('.') || 'batch'}: ${i.message}`)
        .slice(0, 3)
        .join('; ')}`,
    )
  }
  const seen = new Set<SessionId>()
  const entries = envelope.data.sessions.map((raw, n) => {
    const header = checkHeader(raw.header, `the change batch's entry ${n}`)
    const id = header.id
    if (seen.has(id)) throw bad(`the change batch holds ${where(id)} twice`, id)
    seen.add(id)
    const from = raw.from
    if (from === 0 && raw.events.length < header.seedLength) {
      throw bad(`the change batch starts ${where(id)}, a fork, without its ${header.seedLength} seed events`, id)
    }
    // Past the start, the witness of the sender's prefix is what makes the entry safe to apply.
    if (from > 0 ? !isChain(raw.chain) : raw.chain !== undefined && raw.chain !== CHAIN_ZERO) {
      throw bad(
        `the change batch's entry for ${where(id)} from seq ${from} ${from > 0 ? 'needs' : 'cannot have'} the chain value of the sender's events before it (32 hex digits; sessionfold before 0.2 did not send it)`,
        id,
        from,
      )
    }
    const events = raw.events.map((e, i) => checkEvent(e, from + i, id, maxEventBytes))
    return { header, from, events, chain: raw.chain ?? CHAIN_ZERO }
  })
  return { entries, deleted: (envelope.data.deleted ?? []) as Tombstone[] }
}

/** INVALID_ARGUMENT unless `raw` is a well-formed session header. */
export function checkHeader(raw: unknown, what: string): SessionHeader {
  const h = safeParse(sessionHeaderSchema, raw)
  if (!h.success) throw bad(`${what} has a malformed header: ${h.error.issues.map((i) => i.message).join('; ')}`)
  return h.data as SessionHeader
}

function checkEvent(e: unknown, seq: number, id: SessionId, maxEventBytes: number): EncodedEvent {
  if (!isPlainObject(e)) throw bad(`the change batch's event for ${where(id, seq)} is not an object`, id, seq)
  const keys = Object.keys(e)
  const fields = 'v' in e ? 5 : 4
  if (keys.length !== fields || !['seq', 'type', 'time', 'data'].every((k) => k in e)) {
    throw bad(`the change batch's event for ${where(id, seq)} must have exactly seq, type, time, data and (a version) v`, id, seq)
  }
  const { type, time, data, v } = e as unknown as SessionEvent
  if (v !== undefined && !isEventVersion(v)) throw bad(`the change batch's event version for ${where(id, seq)} must be an integer >= 2`, id, seq)
  if (e.seq !== seq) throw bad(`the change batch's events of ${where(id)} are not contiguous: seq ${describe(e.seq)} where ${seq} belongs`, id, seq)
  if (!isEventType(type)) throw bad(`the change batch's event type for ${where(id, seq)} must be a string of 1-${MAX_EVENT_TYPE_LENGTH} characters`, id, seq)
  if (!isTime(time)) throw bad(`the change batch's event time for ${where(id, seq)} must be a finite number >= 0`, id, seq)
  try {
    assertPlainJson(data, `the change batch's event data for ${where(id, seq)}`)
    return encodeEvent(v === undefined ? { seq, type, time, data } : { seq, type, time, v, data }, id, maxEventBytes)
  } catch (err) {
    throw bad(`the change batch cannot be applied: ${(err as Error).message}`, id, seq)
  }
}
