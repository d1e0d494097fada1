// changesSince on a store with a change feed: a first walk over every session (in id order),
// then the feed's entries after the cursor, so a call costs what was written since it and the
// cursor stays the same few fields however many sessions the store holds. Tombstones (DESIGN
// §15) travel too: every one at the start of the walk, then each as the feed records its delete.
import { z } from 'zod/mini'
import type { ChangeFeed } from '../storage/types'
import type { ChangeEntry, Changes, FeedCursor, Tombstone } from '../core/changes'
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import { countSchema, safeParse, sessionIdSchema, timeSchema } from '../core/schemas'
import { utf8Length } from '../core/validate'
import type { StoreReader } from './reader'
import type { Tombstones } from './tombstones'
import { WalkAhead } from './walk-ahead'

type Reader = Pick<StoreReader, 'find' | 'pages' | 'ids'>
/** The chain value of a session at a position: the witness an entry from there carries (chains.ts). */
export type ChainAt = (header: SessionHeader, position: number) => Promise<string>

export const feedCursorSchema = z.strictObject({
  v: z.literal(2),
  feed: z.string().check(z.maxLength(200)),
  at: z.string().check(z.maxLength(200)),
  walk: z.optional(z.strictObject({ after: z.optional(sessionIdSchema), deleted: z.optional(z.strictObject({ after: z.optional(sessionIdSchema) })) })),
  part: z.optional(z.tuple([sessionIdSchema, timeSchema, countSchema])),
})

/** Feed entries read per storage call. */
const FEED_PAGE = 1000
/** At most this many feed entries scanned beyond a full batch to count what is pending. */
const PENDING_SCAN = 100_000

export function parseFeedCursor(input: unknown): FeedCursor {
  const parsed = safeParse(feedCursorSchema, input)
  if (!parsed.success)
    throw new SessionfoldError(
      'INVALID_ARGUMENT',
      `changesSince cursor is not a cursor made by changesSince: ${parsed.error.issues[0]?.message ?? 'malformed'}`,
    )
  return parsed.data as FeedCursor
}

/** A batch under construction: its budget, entries, tombstones and failures. */
export class Batch {
  readonly entries: ChangeEntry[] = []
  readonly deleted: Tombstone[] = []
  /** The entries by session: a feed of many small writes takes one session many times. */
  readonly #byId = new Map<SessionId, ChangeEntry>()
  readonly failed: Changes['failed'] = []
  events = 0
  bytes = 0
  constructor(
    readonly chainAt: ChainAt,
    readonly maxEvents: number,
    readonly maxBytes: number,
  ) {}
  get full(): boolean {
    return this.events >= this.maxEvents || this.bytes >= this.maxBytes
  }

  /** Adds tombstones not in the batch yet; each counts as an event. */
  bury(tombstones: readonly Tombstone[]): void {
    for (const t of tombstones) {
      if (this.deleted.some((d) => d.id === t.id && d.createdAt === t.createdAt)) continue
      this.deleted.push(t)
      this.events += 1
      this.bytes += utf8Length(JSON.stringify(t))
    }
  }

  /** The batch as changesSince hands it over. */
  get batch(): Changes['batch'] {
    return { v: 1, sessions: this.entries, ...(this.deleted.length > 0 ? { deleted: this.deleted } : {}) }
  }

  /**
   * Adds session `header`'s events from `from` up to `length` (or the entry already there,
   * grown), as far as the budget goes; returns how far it got, or undefined when the log
   * could not be read (reported in `failed`).
   */
  async take(reader: Pick<StoreReader, 'pages'>, header: SessionHeader, from: number, length: number, total: number): Promise<number | undefined> {
    const id = header.id
    let entry = this.#byId.get(id)
    const fresh = !entry
    if (!entry) {
      entry = { header, from, events: [], length: total }
      this.bytes += utf8Length(JSON.stringify(header))
      this.events += 1
    } else {
      from = entry.from + entry.events.length
    }
    // At least one event when the batch holds nothing else, so a batch of `maxEvents: 1` moves on.
    const room = Math.max(
      this.maxEvents - this.events,
      from === 0 ? header.seedLength : 0,
      fresh && this.entries.length === 0 && this.deleted.length === 0 ? 1 : 0,
    )
    const to = Math.min(length, from + room)
    let taken = 0
    try {
      if (fresh && from > 0) entry.chain = await this.chainAt(header, from)
      if (from < to) {
        read: for await (const page of reader.pages(id, { from, to })) {
          for (const e of page) {
            const mustTake = e.seq < header.seedLength || (entry.events.length === 0 && this.entries.length === 0 && fresh)
            if (!mustTake && this.bytes >= this.maxBytes) break read
            entry.events.push(e)
            this.bytes += utf8Length(JSON.stringify(e))
            taken++
          }
        }
      }
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
      if (fresh) {
        this.events -= 1
        this.failed.push({ id, code: err.code, detail: err.message })
      }
      return undefined
    }
    this.events += taken
    if (fresh) {
      this.entries.push(entry)
      this.#byId.set(id, entry)
    }
    return from + taken
  }
}

/** A bounded batch after a feed cursor (or from nothing: `cursor` undefined). */
export async function changesByFeed(
  reader: Reader,
  tombstones: Tombstones,
  chainAt: ChainAt,
  feed: ChangeFeed,
  cursor: FeedCursor | undefined,
  only: ReadonlySet<SessionId> | undefined,
  maxEvents: number,
  maxBytes: number,
): Promise<Changes> {
  const feedId = await feed.id()
  // No cursor, or one of another feed: walk every session, from the feed's head as it is now.
  let next: FeedCursor = cursor && cursor.feed === feedId ? { ...cursor } : { v: 2, feed: feedId, at: await feed.head(), walk: { deleted: {} } }
  const batch = new Batch(chainAt, maxEvents, maxBytes)
  let pending = 0
  if (next.walk?.deleted) {
    const buried = await buryAll(tombstones, next.walk.deleted, only, batch)
    next = { ...next, walk: { ...next.walk } }
    if (buried) next.walk!.deleted = buried
    else delete next.walk!.deleted
    if (buried) return finish(batch, next, 1)
  }
  if (next.walk) {
    const walked = await walk(reader, next, only, batch)
    next = walked.cursor
    pending += walked.pending
    if (next.walk) return finish(batch, next, pending)
  }
  const scanned = await fromFeed(reader, tombstones, feed, next, only, batch)
  return finish(batch, scanned.cursor, pending + scanned.pending)
}

function finish(batch: Batch, cursor: FeedCursor, pending: number): Changes {
  if (cursor.part === undefined) delete cursor.part
  return { batch: batch.batch, cursor, pending, done: pending === 0 && !cursor.walk, failed: batch.failed }
}

/** Tombstones in id order after `from.after`, as far as the budget goes: where to go on, or undefined when all are in. */
export async function buryAll(
  tombstones: Tombstones,
  from: { after?: SessionId },
  only: ReadonlySet<SessionId> | undefined,
  batch: Batch,
): Promise<{ after?: SessionId } | undefined> {
  let after = from.after
  for (;;) {
    if (batch.full) return after === undefined ? {} : { after }
    const page = await tombstones.page(after, Math.min(500, Math.max(1, batch.maxEvents - batch.events)), only)
    batch.bury(page.tombstones)
    if (page.last !== undefined) after = page.last
    if (page.done) return undefined
  }
}

/** The first pass: every session in id order after `walk.after`, each from seq 0. */
async function walk(
  reader: Reader,
  cursor: FeedCursor,
  only: ReadonlySet<SessionId> | undefined,
  batch: Batch,
): Promise<{ cursor: FeedCursor; pending: number }> {
  const next: FeedCursor = { ...cursor, walk: { ...cursor.walk } }
  let pending = 0
  let stopped = false
  const ids = only ? [...only].sort().filter((id) => cursor.walk?.after === undefined || id > cursor.walk.after) : reader.ids(cursor.walk?.after)
  const ahead = new WalkAhead(reader, ids)
  try {
    for (let looked = await ahead.next(); looked; looked = await ahead.next()) {
      const { id } = looked
      let info = looked.info
      try {
        if (looked.err !== undefined) throw looked.err
        // A session read ahead whole is taken as read; a bigger one is looked up again now, right before its events are.
        if (info && info.length > 0 && !looked.events && !stopped && !batch.full) info = await reader.find(id)
      } catch (err) {
        if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
        // Reported once, by the call whose walk gets to it (one past where this batch stopped only counts what is left).
        if (stopped) continue
        batch.failed.push({ id, code: err.code, detail: err.message })
        next.walk = { after: id }
        continue
      }
      if (!info) continue
      const { header, length } = info
      const part = cursor.part && cursor.part[0] === id && cursor.part[1] === header.createdAt ? cursor.part[2] : 0
      if (stopped || batch.full) {
        stopped = true
        pending += length - part
        // Counting what is left is a look at every remaining session: only the first few.
        if (pending > 0) break
        continue
      }
      const reached = await batch.take(ahead.readerFor(looked), header, part, length, length)
      if (reached === undefined) {
        next.walk = { after: id }
        delete next.part
        continue
      }
      if (reached < length) {
        next.part = [id, header.createdAt, reached]
        pending += length - reached
        stopped = true
        continue
      }
      next.walk = { after: id }
      delete next.part
      if (!batch.full) ahead.widen()
    }
  } finally {
    await ahead.stop()
  }
  if (!stopped) {
    delete next.walk
    delete next.part
  }
  return { cursor: next, pending }
}

/** Entries after `cursor.at`: each named session from the entry's first seq to its length now. */
async function fromFeed(
  reader: Reader,
  tombstones: Tombstones,
  feed: ChangeFeed,
  cursor: FeedCursor,
  only: ReadonlySet<SessionId> | undefined,
  batch: Batch,
): Promise<{ cursor: FeedCursor; pending: number }> {
  const next: FeedCursor = { ...cursor }
  /** Sessions of this batch: how far each was sent, for which life. */
  const sent = new Map<SessionId, { createdAt: number; reached: number }>()
  let pending = 0
  /** Per session, how far its events are counted already (sent, or pending): a later entry of it counts only beyond. */
  const counted = new Map<SessionId, number>()
  const count = (id: SessionId, from: number, to: number) => {
    const start = Math.max(from, counted.get(id) ?? 0)
    if (to > start) pending += to - start
    counted.set(id, Math.max(to, counted.get(id) ?? 0))
  }
  let stopped = false
  let scanned = 0
  const maxScan = Math.max(FEED_PAGE, batch.maxEvents * 4)
  for (let after = cursor.at; ; ) {
    const page = await feed.read(after, FEED_PAGE)
    for (const e of page) {
      // A delete (or a session created empty): not counted in events, but something to send.
      const deleted = e.from === 0 && e.to === 0
      if (stopped) {
        if (!only || only.has(e.id)) count(e.id, e.from, e.to)
        if (deleted) pending += 1
        continue
      }
      if (only && !only.has(e.id)) {
        next.at = e.at
        continue
      }
      if (deleted && !batch.full) batch.bury(await tombstones.of(e.id))
      const had = sent.get(e.id)
      if (had && e.to <= had.reached) {
        next.at = e.at
        continue
      }
      if (batch.full) {
        stopped = true
        count(e.id, e.from, e.to)
        if (deleted) pending += 1
        continue
      }
      let info
      try {
        info = await reader.find(e.id)
      } catch (err) {
        if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
        if (!batch.failed.some((f) => f.id === e.id)) batch.failed.push({ id: e.id, code: err.code, detail: err.message })
        next.at = e.at
        continue
      }
      if (!info || (had && had.createdAt !== info.header.createdAt)) {
        next.at = e.at // deleted since (or another life, sent already in this batch from its start)
        continue
      }
      const { header, length } = info
      const part = next.part && next.part[0] === e.id && next.part[1] === header.createdAt ? next.part[2] : 0
      const from = Math.min(length, Math.max(e.from, part))
      const reached = await batch.take(reader, header, from, length, length)
      if (reached === undefined) {
        next.at = e.at
        continue
      }
      sent.set(e.id, { createdAt: header.createdAt, reached })
      counted.set(e.id, Math.max(reached, counted.get(e.id) ?? 0))
      if (reached < length) {
        // Cut by the budget: this entry again next time, from where it stopped.
        next.part = [e.id, header.createdAt, reached]
        count(e.id, reached, length)
        stopped = true
        continue
      }
      if (next.part?.[0] === e.id) delete next.part
      next.at = e.at
    }
    scanned += page.length
    if (page.length < FEED_PAGE) break
    after = page[page.length - 1]!.at
    if (!stopped && scanned >= maxScan) {
      // Scanned enough entries that this caller may not read: answer, and say more is there.
      stopped = true
      pending += 1
      break
    }
    if (stopped && scanned >= maxScan + PENDING_SCAN) break
  }
  return { cursor: next, pending }
}
