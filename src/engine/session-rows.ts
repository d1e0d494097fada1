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
import { flat, getMany, writeMany } from '../storage/kv'
import type { KeyValueStore, NewSession, RecordKey, RecordWrite } from '../storage/types'
import type { SessionMetaView } from '../core/units/meta'
import type { UnitSlot } from './units'
import type { SessionEvent } from '../core/model'
import { isPlainObject } from '../core/validate'
import { isSessionfoldError } from '../core/errors'

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
  /** Records' values, '' for one that cannot be opened. */
  read(keys: readonly RecordKey[]): Promise<(string | undefined)[]>
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
    const texts = await r.read(keys.map((key) => summaryKey(key[3]!)))
    const found = keys.map((key, i) => ({ key, row: parseRow(key[3]!, texts[i]) }))
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

/** A row moved: as stored before (if at all), and as it is now. */
export interface RowMove {
  before: IndexRow | undefined
  next: IndexRow
}

const entryKeys = (row: IndexRow | undefined): Map<string, RecordKey> =>
  new Map((row ? entriesOf(row) : []).map(([l, t]) => [`${l} ${timePart(t)}`, indexEntryKey(l, t, row!.id)]))

/**
 * Writes rows in three steps for them all (each a writeMany): the entries each gains, the rows,
 * the entries each leaves. A row whose session went meanwhile is not written, and its entries go
 * (SESSION_NOT_FOUND: then the rows are put one by one to tell which).
 */
export async function writeRows(records: KeyValueStore, moves: readonly RowMove[]): Promise<void> {
  const adds: RecordWrite[] = []
  for (const { before, next } of moves) {
    const was = entryKeys(before)
    for (const [k, key] of entryKeys(next)) if (!was.has(k)) adds.push([key, ''])
  }
  await writeMany(records, adds)
  const gone = new Set<SessionId>()
  try {
    await writeMany(
      records,
      moves.map(({ next }) => [summaryKey(next.id), rowText(next)]),
    )
  } catch (err) {
    if (!isSessionfoldError(err, 'SESSION_NOT_FOUND')) throw err
    for (const { next } of moves) {
      try {
        await records.put(summaryKey(next.id), rowText(next))
      } catch (e) {
        if (!isSessionfoldError(e, 'SESSION_NOT_FOUND')) throw e
        gone.add(next.id)
      }
    }
  }
  const leaves = new Map<string, RecordWrite>()
  for (const { before, next } of moves) {
    const is = gone.has(next.id) ? new Map() : entryKeys(next)
    for (const row of gone.has(next.id) ? [before, next] : [before]) {
      for (const [k, key] of entryKeys(row)) if (!is.has(k)) leaves.set(flat(key), [key, undefined])
    }
  }
  await writeMany(records, [...leaves.values()])
}

/**
 * writeRows for moves worked out a while ago (logs read since): the rows are read again first,
 * and one that is no longer what its move started from (another engine moved it, or the session
 * was made again) is left as it is. Returns, for each move, whether it was left so.
 */
export async function writeRowsForward(records: KeyValueStore, moves: readonly RowMove[]): Promise<boolean[]> {
  const now = await readRows(
    records,
    moves.map((m) => m.next.id),
  )
  const left = moves.map(({ before }, k) => (now[k] === undefined ? before !== undefined : before === undefined || rowText(now[k]) !== rowText(before)))
  await writeRows(
    records,
    moves.filter((_, k) => !left[k]),
  )
  return left
}

/** Deletes a row's entries. */
export async function removeEntries(records: KeyValueStore, row: IndexRow): Promise<void> {
  await writeMany(
    records,
    [...entryKeys(row).values()].map((key) => [key, undefined]),
  )
}

/** Records' values; one the codec cannot open (damaged) reads as '', a value no row parses. */
export async function readable(records: KeyValueStore, keys: readonly RecordKey[]): Promise<(string | undefined)[]> {
  try {
    return await getMany(records, keys)
  } catch (err) {
    if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
    if (keys.length === 1) return ['']
    return Promise.all(keys.map(async (key) => (await readable(records, [key]))[0]))
  }
}

/** The stored rows of `ids` (undefined: none, or not readable). */
export async function readRows(records: KeyValueStore, ids: readonly SessionId[]): Promise<(IndexRow | undefined)[]> {
  const texts = await readable(records, ids.map(summaryKey))
  return ids.map((id, i) => parseRow(id, texts[i]))
}

/** What this engine knows of a session it wrote: its row as of `length` but for the stored metadata. */
export interface IndexHint {
  header: SessionHeader
  length: number
  lastEventAt: number
  title: string | null
  tags: string[]
}

/** What a live session of this engine tells the index after a write (undefined: its metadata is faulted, so the log is read). */
export function hintOf(live: { header: SessionHeader; slots: readonly UnitSlot[]; log: { durable: number } }, lastEventAt: number): IndexHint | undefined {
  const slot = live.slots.find((s) => s.def.key === 'sessionMeta')
  if (!slot || slot.fault) return undefined
  const { title, tags } = slot.state as SessionMetaView
  return { header: live.header, length: live.log.durable, lastEventAt, title, tags }
}

/** What a session stored with its events (an import's createSessions) holds: its row without reading it back. */
export function hintOfNew({ header, events }: NewSession): IndexHint {
  const { length, lastEventAt, title, tags } = extendRow(
    freshRow(header),
    events.map((e) => e.event),
  )
  return { header, length, lastEventAt, title, tags }
}
