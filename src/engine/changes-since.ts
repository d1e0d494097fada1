// changesSince: a bounded batch of what this store holds beyond a cursor, for another store's
// applyChanges. Nothing is kept between calls: the cursor is the state.
import { z } from 'zod/mini'
import type { ChangeEntry, Changes, SessionMapCursor, Tombstone } from '../core/changes'
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import { countSchema, safeParse, sessionIdSchema, timeSchema } from '../core/schemas'
import { utf8Length } from '../core/validate'
import { Batch, buryAll, changesByFeed, parseFeedCursor, type ChainAt } from './changes-feed'
import type { StoreReader } from './reader'
import type { Tombstones } from './tombstones'

export const DEFAULT_BATCH_EVENTS = 1000
export const MAX_BATCH_EVENTS = 10_000
export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024
export const MAX_BATCH_BYTES = 64 * 1024 * 1024

type Reader = Pick<StoreReader, 'find' | 'pages' | 'ids' | 'feed'>

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

const cursorSchema = z.strictObject({
  v: z.literal(1),
  sessions: z.record(sessionIdSchema, z.tuple([timeSchema, countSchema])),
  after: z.optional(sessionIdSchema),
  deleted: z.optional(z.union([z.literal('sent'), z.strictObject({ after: z.optional(sessionIdSchema) })])),
})
const optionsSchema = z.strictObject({
  sessions: z.optional(z.array(sessionIdSchema).check(z.maxLength(100_000))),
  maxEvents: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_BATCH_EVENTS))),
  maxBytes: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_BATCH_BYTES))),
  until: z.optional(cursorSchema),
  head: z.optional(z.boolean()),
})

/** A bounded batch of this store's sessions and events after `cursor` (see src/core/changes.ts). */
export async function changesSince(reader: Reader, tombstones: Tombstones, chainAt: ChainAt, cursorInput: unknown, optionsInput: unknown): Promise<Changes> {
  const parsed = safeParse(optionsSchema, optionsInput ?? {})
  if (!parsed.success)
    throw bad(`changesSince options are invalid: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`).join('; ')}`)
  const maxEvents = parsed.data.maxEvents ?? DEFAULT_BATCH_EVENTS
  const maxBytes = parsed.data.maxBytes ?? DEFAULT_BATCH_BYTES
  const until = parsed.data.until as SessionMapCursor | undefined
  const mapAsked = until !== undefined || parsed.data.head === true
  const isFeedCursor = (cursorInput as { v?: unknown } | null | undefined)?.v === 2
  if (isFeedCursor || ((cursorInput === undefined || cursorInput === null) && !mapAsked && reader.feed)) {
    const feedCursor = isFeedCursor ? parseFeedCursor(cursorInput) : undefined
    if (mapAsked) throw bad('changesSince: until and head go with session-map cursors (v 1), not with a feed cursor')
    if (!reader.feed) throw bad('changesSince: this store keeps no change feed, so it cannot go on from a feed cursor (v 2)')
    const only = parsed.data.sessions ? new Set(parsed.data.sessions) : undefined
    return changesByFeed(reader, tombstones, chainAt, reader.feed, feedCursor, only, maxEvents, maxBytes)
  }
  const cursor = parseCursor(cursorInput)
  const head: SessionMapCursor | undefined = parsed.data.head ? { v: 1, sessions: {} } : undefined
  const next: SessionMapCursor = { v: 1, sessions: { ...cursor.sessions } }
  if (cursor.after !== undefined) next.after = cursor.after
  const entries: ChangeEntry[] = []
  const failed: Changes['failed'] = []
  let events = 0
  let bytes = 0
  let pending = 0
  const full = () => events >= maxEvents || bytes >= maxBytes

  // The tombstones first, every one (of the sessions asked for), before any session is sent.
  let deleted: Tombstone[] = []
  if (cursor.deleted !== 'sent') {
    const buried = new Batch(chainAt, maxEvents, maxBytes)
    const only = parsed.data.sessions ? new Set(parsed.data.sessions) : undefined
    const left = await buryAll(tombstones, typeof cursor.deleted === 'object' ? cursor.deleted : {}, only, buried)
    ;({ deleted } = buried)
    events += buried.events
    bytes += buried.bytes
    next.deleted = left ?? 'sent'
    if (left) return { batch: { v: 1, sessions: [], deleted }, cursor: next, pending: 1, done: false, failed }
  } else next.deleted = 'sent'

  const only = parsed.data.sessions ?? (until ? Object.keys(until.sessions) : undefined)
  for await (const id of idsOf(reader, only, cursor.after)) {
    let info
    try {
      info = await reader.find(id)
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
      failed.push({ id, code: err.code, detail: err.message })
      continue
    }
    if (!info) continue // deleted meanwhile, or never there (a listed id)
    const { header } = info
    if (head) head.sessions[id] = [header.createdAt, info.length]
    const bound = until?.sessions[id]
    if (until && (!bound || bound[0] !== header.createdAt)) continue
    const length = bound ? Math.min(bound[1], info.length) : info.length
    const sent = cursor.sessions[id]
    // Another life of the id, or a log cut back (a torn tail): start that session over.
    const from = sent && sent[0] === header.createdAt && sent[1] <= info.length ? sent[1] : 0
    if (sent && from >= length) continue // sent already (up to the bound, with until)
    // A header counts as one item, so batches of empty sessions stay bounded too. A fork's
    // seed travels whole: the receiver creates the fork and its seed at once.
    const room = Math.max(maxEvents - events - 1, from === 0 ? header.seedLength : 0)
    if (full() || (room === 0 && from < length)) {
      pending += length - from
      continue
    }
    const to = Math.min(length, from + room)
    const entry: ChangeEntry = { header, from, events: [], length: info.length }
    bytes += utf8Length(JSON.stringify(header))
    events += 1
    try {
      if (from > 0) entry.chain = await chainAt(header, from)
      if (from < to) {
        read: for await (const page of reader.pages(id, { from, to })) {
          for (const e of page) {
            const mustTake = e.seq < header.seedLength || (entry.events.length === 0 && entries.length === 0)
            if (!mustTake && bytes >= maxBytes) break read
            entry.events.push(e)
            bytes += utf8Length(JSON.stringify(e))
          }
        }
      }
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
      failed.push({ id, code: err.code, detail: err.message })
      events -= 1
      continue
    }
    events += entry.events.length
    entries.push(entry)
    const reached = from + entry.events.length
    next.sessions[id] = [header.createdAt, reached]
    next.after = id
    pending += length - reached
  }
  const changes: Changes = {
    batch: { v: 1, sessions: entries, ...(deleted.length > 0 ? { deleted } : {}) },
    cursor: next,
    pending,
    done: pending === 0,
    failed,
  }
  if (head) changes.head = head
  return changes
}

function parseCursor(input: unknown): SessionMapCursor {
  if (input === undefined || input === null) return { v: 1, sessions: {} }
  const parsed = safeParse(cursorSchema, input)
  if (!parsed.success) throw bad(`changesSince cursor is not a cursor made by changesSince: ${parsed.error.issues[0]?.message ?? 'malformed'}`)
  return parsed.data as SessionMapCursor
}

/**
 * The given ids (once each), or every session of the store, page by page: in id order from
 * just after `start`, wrapping around to the ones up to it (each session gets its turn).
 */
async function* idsOf(reader: Reader, only: readonly SessionId[] | undefined, start: SessionId | undefined): AsyncGenerator<SessionId> {
  if (only) {
    const sorted = [...new Set(only)].sort(compareIds)
    const cut = start === undefined ? 0 : sorted.findIndex((id) => id > start)
    yield* cut < 0 ? sorted : [...sorted.slice(cut), ...sorted.slice(0, cut)]
    return
  }
  // Ids, not headers: a session whose header is damaged is reported, not left out.
  yield* reader.ids(start)
  if (start === undefined) return
  for await (const id of reader.ids()) {
    if (id > start) return
    yield id
  }
}

const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
