// The session index's rows over the store's key-value records: a session's summary row (beside
// its checkpoint, deleted with it) and its entries in the index's sorted lists (by activity or
// creation, of roots or of all; src/storage/records/keys.ts). A page of a list is read entry
// by entry from the list's start, each entry's row read and checked: so a page costs the page,
// whatever the store holds. What the rows say is written by session-index.ts.
import type { SessionHeader, SessionId, SessionOrigin } from '../core/model'
import { META_EVENT, SESSION_ORIGINS, isSessionId, isTag, isTitle } from '../core/limits'
import type { ResolvedSessionQuery, SessionSummary } from '../core/session-list'
import { matchesQuery } from '../core/session-list'
import { indexEntryKey, indexListPrefix, summaryKey, timePart, type IndexList } from '../storage/records/keys'
import type { KeyValueStore, RecordKey } from '../storage/types'
import type { SessionEvent } from '../core/model'
import { isPlainObject } from '../core/validate'

/** What the index keeps of a session: its summary without `running` (which the locks know). */
export type IndexRow = Omit<SessionSummary, 'running'>

/** The row of a session with no events read yet. */
export function freshRow(header: SessionHeader): IndexRow {
  return {
    id: header.id,
    origin: header.origin,
    parent: header.parentSession ?? null,
    createdAt: header.createdAt,
    title: null,
    tags: [],
    length: 0,
    lastEventAt: header.createdAt,
  }
}

/** `row` moved on by `events` (the next ones of its log): length, last time, and metadata. */
export function extendRow(row: IndexRow, events: readonly SessionEvent[]): IndexRow {
  if (events.length === 0) return row
  let { title, tags } = row
  for (const e of events) {
    if (e.type !== META_EVENT || !isPlainObject(e.data)) continue
    const { title: t, tags: g } = e.data
    if (t === null || isTitle(t)) title = t
    if (Array.isArray(g) && g.every(isTag)) tags = g as string[]
  }
  const last = events[events.length - 1]!
  return { ...row, title, tags, length: last.seq + 1, lastEventAt: last.time }
}

/** The lists a row has an entry in, each with its time. */
export function entriesOf(row: IndexRow): [IndexList, number][] {
  const out: [IndexList, number][] = [
    ['ax', row.lastEventAt],
    ['cx', row.createdAt],
  ]
  if (row.parent === null) out.push(['ar', row.lastEventAt], ['cr', row.createdAt])
  return out
}

const isTimeValue = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0

/** A stored row, or undefined when it is missing or not one (damaged: the index is a cache). */
export function parseRow(id: SessionId, text: string | undefined): IndexRow | undefined {
  if (text === undefined) return undefined
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isPlainObject(v) || v.v !== 1) return undefined
  const { origin, parent, createdAt, title, tags, length, lastEventAt } = v
  if (!SESSION_ORIGINS.includes(origin as SessionOrigin) || !(parent === null || isSessionId(parent))) return undefined
  if (!isTimeValue(createdAt) || !isTimeValue(lastEventAt) || !(title === null || isTitle(title))) return undefined
  if (!Array.isArray(tags) || !tags.every(isTag) || !Number.isSafeInteger(length) || (length as number) < 0) return undefined
  return { id, origin: origin as SessionOrigin, parent, createdAt, title, tags: tags as string[], length: length as number, lastEventAt }
}

export const rowText = (row: IndexRow): string => {
  const { id: _, ...rest } = row
  return JSON.stringify({ v: 1, ...rest })
}

/** The list a query reads. */
export const listOf = (query: Pick<ResolvedSessionQuery, 'order' | 'roots'>): IndexList =>
  `${query.order === 'activity' ? 'a' : 'c'}${query.roots ? 'r' : 'x'}` as IndexList

/** What reading a page needs. */
export interface PageReader {
  records: KeyValueStore
  /** A record's value, '' for one that cannot be opened. */
  read(key: RecordKey): Promise<string | undefined>
  /** Whether a session exists (an entry without a readable row: a damaged row, or a deleted session's leftover). */
  exists(id: SessionId): Promise<boolean>
  /** A session whose row is missing or damaged: the index writes it again. */
  repair(id: SessionId): void
}

/** Entries read per step of a page. */
const STEP = 64

/**
 * Up to `count` rows of `query`'s list after the entry `after` (a flat key from an earlier
 * page), with where the next page starts. Entries left by a deleted session, or older than
 * their session's row (a move a crash cut short), are removed as they are met.
 */
export async function readPage(
  r: PageReader,
  query: ResolvedSessionQuery,
  count: number,
  after: string | undefined,
): Promise<{ rows: IndexRow[]; next: string | null }> {
  const list = listOf(query)
  const prefix = indexListPrefix(list)
  const rows: IndexRow[] = []
  let from: RecordKey | undefined = after === undefined ? undefined : after.split('+')
  for (;;) {
    const keys = await r.records.list(prefix, { limit: STEP, ...(from ? { after: from } : {}) })
    const found = await Promise.all(keys.map(async (key) => ({ key, row: parseRow(key[3]!, await r.read(summaryKey(key[3]!))) })))
    for (const { key, row } of found) {
      const [, , part, id] = key as [string, string, string, SessionId]
      const time = row && (list[0] === 'a' ? row.lastEventAt : row.createdAt)
      if (!row || timePart(time!) !== part) {
        await settleStale(r, list, key, id, row, part)
        continue
      }
      if (matchesQuery(row, query)) rows.push(row)
      if (rows.length === count) return { rows, next: key.join('+') }
    }
    if (keys.length < STEP) return { rows, next: null }
    from = keys[keys.length - 1]
  }
}

async function settleStale(r: PageReader, list: IndexList, key: RecordKey, id: SessionId, row: IndexRow | undefined, part: string): Promise<void> {
  if (!row) {
    if (await r.exists(id)) r.repair(id)
    else await r.records.delete(key)
    return
  }
  // Parts sort latest first: a larger part is an older time. An entry newer than the row may be
  // a move under way (its row is written next), so it stays.
  const time = list[0] === 'a' ? row.lastEventAt : row.createdAt
  if (part > timePart(time)) await r.records.delete(key)
}

/** Puts the entries `next` has and `before` had not, then the row, then deletes what only `before` had. */
export async function writeRow(records: KeyValueStore, before: IndexRow | undefined, next: IndexRow): Promise<void> {
  const was = new Set((before ? entriesOf(before) : []).map(([l, t]) => `${l} ${timePart(t)}`))
  const now = entriesOf(next)
  const is = new Set(now.map(([l, t]) => `${l} ${timePart(t)}`))
  await Promise.all(now.filter(([l, t]) => !was.has(`${l} ${timePart(t)}`)).map(([l, t]) => records.put(indexEntryKey(l, t, next.id), '')))
  await records.put(summaryKey(next.id), rowText(next))
  if (before) await removeEntries(records, before, is)
}

/** Deletes a row's entries (but those in `keep`, as `${list} ${part}`). */
export async function removeEntries(records: KeyValueStore, row: IndexRow, keep: ReadonlySet<string> = new Set()): Promise<void> {
  await Promise.all(
    entriesOf(row)
      .filter(([l, t]) => !keep.has(`${l} ${timePart(t)}`))
      .map(([l, t]) => records.delete(indexEntryKey(l, t, row.id))),
  )
}
