// Store-to-store changes, engine side. changesSince reads a bounded batch of what this store
// holds beyond a cursor; applyChanges takes a batch from anywhere (it is untrusted: checked
// whole before anything is written) and imports it with headers and seqs unchanged. A run that
// overlaps what is stored must match it event for event; a difference is a conflict, reported,
// and neither version is touched. Nothing here is kept between calls: the cursor is the state.
import { z } from 'zod'
import type { ApplyResult, ChangeBatch, ChangeCursor, ChangeEntry, Changes, SyncConflict, SyncSkip } from '../src/changes'
import { SessionfoldError, isSessionfoldError, where } from '../src/errors'
import { witnessOf, type SessionEvent, type SessionHeader, type SessionId } from '../src/model'
import { sessionHeaderSchema, sessionIdSchema } from '../src/schemas'
import { assertPlainJson, describe, encodeEvent, isPlainObject, utf8Length, type EncodedEvent } from '../src/validate'
import type { Engine } from './engine'
import { checkpointRowOf, foldEvent, initSlots } from './units'

export const DEFAULT_BATCH_EVENTS = 1000
export const MAX_BATCH_EVENTS = 10_000
export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024
export const MAX_BATCH_BYTES = 64 * 1024 * 1024
/** Sessions listed per page while scanning the store. */
const LIST_PAGE = 1000

const bad = (message: string, id?: SessionId, seq?: number) => new SessionfoldError('INVALID_ARGUMENT', message, { sessionId: id, seq })

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)
const cursorSchema = z.strictObject({
  v: z.literal(1),
  sessions: z.record(sessionIdSchema, z.tuple([z.number().finite().nonnegative(), count])),
  after: sessionIdSchema.optional(),
})
const optionsSchema = z.strictObject({
  sessions: z.array(sessionIdSchema).max(100_000).optional(),
  maxEvents: z.number().int().min(1).max(MAX_BATCH_EVENTS).optional(),
  maxBytes: z.number().int().min(1).max(MAX_BATCH_BYTES).optional(),
  until: cursorSchema.optional(),
  head: z.boolean().optional(),
})
const envelopeSchema = z.strictObject({
  v: z.literal(1),
  sessions: z.array(z.strictObject({ header: z.unknown(), from: count, events: z.array(z.unknown()), length: count.optional() })),
})

// ---- reading ------------------------------------------------------------------------------

/** A bounded batch of this store's sessions and events after `cursor` (see src/changes.ts). */
export async function changesSince(engine: Engine, cursorInput: unknown, optionsInput: unknown): Promise<Changes> {
  const cursor = parseCursor(cursorInput)
  const parsed = optionsSchema.safeParse(optionsInput ?? {})
  if (!parsed.success) throw bad(`changesSince options are invalid: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`).join('; ')}`)
  const maxEvents = parsed.data.maxEvents ?? DEFAULT_BATCH_EVENTS
  const maxBytes = parsed.data.maxBytes ?? DEFAULT_BATCH_BYTES
  const until = parsed.data.until as ChangeCursor | undefined
  const head: ChangeCursor | undefined = parsed.data.head ? { v: 1, sessions: {} } : undefined
  const next: ChangeCursor = { v: 1, sessions: { ...cursor.sessions } }
  if (cursor.after !== undefined) next.after = cursor.after
  const entries: ChangeEntry[] = []
  const failed: Changes['failed'] = []
  let events = 0
  let bytes = 0
  let pending = 0
  const full = () => events >= maxEvents || bytes >= maxBytes

  const only = parsed.data.sessions ?? (until ? Object.keys(until.sessions) : undefined)
  for await (const id of idsOf(engine, only, cursor.after)) {
    let info
    try {
      info = await engine.storage.getSession(id)
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
      if (from < to) {
        read: for await (const page of engine.storage.readEvents(id, { from, to })) {
          for (const e of page) {
            const mustTake = e.seq < header.seedLength || entry.events.length === 0 && entries.length === 0
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
  const changes: Changes = { batch: { v: 1, sessions: entries }, cursor: next, pending, done: pending === 0, failed }
  if (head) changes.head = head
  return changes
}

function parseCursor(input: unknown): ChangeCursor {
  if (input === undefined || input === null) return { v: 1, sessions: {} }
  const parsed = cursorSchema.safeParse(input)
  if (!parsed.success) throw bad(`changesSince cursor is not a cursor made by changesSince: ${parsed.error.issues[0]?.message ?? 'malformed'}`)
  return parsed.data as ChangeCursor
}

/**
 * The given ids (once each), or every session of the store, page by page: in id order from
 * just after `start`, wrapping around to the ones up to it (each session gets its turn).
 */
async function* idsOf(engine: Engine, only: readonly SessionId[] | undefined, start: SessionId | undefined): AsyncGenerator<SessionId> {
  if (only) {
    const sorted = [...new Set(only)].sort(compareIds)
    const cut = start === undefined ? 0 : sorted.findIndex((id) => id > start)
    yield* cut < 0 ? sorted : [...sorted.slice(cut), ...sorted.slice(0, cut)]
    return
  }
  // listIds, not listSessions: a session whose header is damaged is reported, not left out.
  let after = start
  for (;;) {
    const page = await engine.storage.listIds({ after, limit: LIST_PAGE })
    yield* page
    if (page.length < LIST_PAGE) break
    after = page[page.length - 1]!
  }
  if (start === undefined) return
  after = undefined
  for (;;) {
    const page = await engine.storage.listIds({ after, limit: LIST_PAGE })
    for (const id of page) {
      if (id > start) return
      yield id
    }
    if (page.length < LIST_PAGE) return
    after = page[page.length - 1]!
  }
}

const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

// ---- validating ---------------------------------------------------------------------------

interface CheckedEntry {
  header: SessionHeader
  from: number
  events: EncodedEvent[]
}

/** The whole batch checked, and every event encoded, before anything is written. */
export function checkBatch(input: unknown, maxEventBytes: number): CheckedEntry[] {
  if (!isPlainObject(input)) throw bad(`applyChanges needs a batch made by changesSince, got ${describe(input)}`)
  const envelope = envelopeSchema.safeParse(input)
  if (!envelope.success) {
    throw bad(`the change batch is malformed: ${envelope.error.issues.map((i) => `${i.path.join('.') || 'batch'}: ${i.message}`).slice(0, 3).join('; ')}`)
  }
  const seen = new Set<SessionId>()
  return envelope.data.sessions.map((raw, n) => {
    const header = checkHeader(raw.header, `the change batch's entry ${n}`)
    const id = header.id
    if (seen.has(id)) throw bad(`the change batch holds ${where(id)} twice`, id)
    seen.add(id)
    const from = raw.from
    if (from === 0 && raw.events.length < header.seedLength) {
      throw bad(`the change batch starts ${where(id)}, a fork, without its ${header.seedLength} seed events`, id)
    }
    const events = raw.events.map((e, i) => checkEvent(e, from + i, id, maxEventBytes))
    return { header, from, events }
  })
}

/** INVALID_ARGUMENT unless `raw` is a well-formed session header. */
export function checkHeader(raw: unknown, what: string): SessionHeader {
  const h = sessionHeaderSchema.safeParse(raw)
  if (!h.success) throw bad(`${what} has a malformed header: ${h.error.issues.map((i) => i.message).join('; ')}`)
  return h.data as SessionHeader
}

function checkEvent(e: unknown, seq: number, id: SessionId, maxEventBytes: number): EncodedEvent {
  if (!isPlainObject(e)) throw bad(`the change batch's event for ${where(id, seq)} is not an object`, id, seq)
  const keys = Object.keys(e)
  if (keys.length !== 4 || !['seq', 'type', 'time', 'data'].every((k) => k in e)) {
    throw bad(`the change batch's event for ${where(id, seq)} must have exactly seq, type, time and data`, id, seq)
  }
  const { type, time, data } = e as unknown as SessionEvent
  if (e.seq !== seq) throw bad(`the change batch's events of ${where(id)} are not contiguous: seq ${describe(e.seq)} where ${seq} belongs`, id, seq)
  if (typeof type !== 'string' || type.length === 0 || type.length > 256) throw bad(`the change batch's event type for ${where(id, seq)} must be a string of 1-256 characters`, id, seq)
  if (typeof time !== 'number' || !Number.isFinite(time) || time < 0) throw bad(`the change batch's event time for ${where(id, seq)} must be a finite number >= 0`, id, seq)
  try {
    assertPlainJson(data, `the change batch's event data for ${where(id, seq)}`)
    return encodeEvent({ seq, type, time, data }, id, maxEventBytes)
  } catch (err) {
    throw bad(`the change batch cannot be applied: ${(err as Error).message}`, id, seq)
  }
}

// ---- applying -----------------------------------------------------------------------------

/** Imports a batch (see the file comment). INVALID_ARGUMENT for a bad batch, with nothing written. */
export async function applyChanges(engine: Engine, batch: unknown, maxEventBytes: number): Promise<ApplyResult> {
  const entries = checkBatch(batch, maxEventBytes)
  const result: ApplyResult = { copiedSessions: 0, copiedEvents: 0, conflicts: [], skipped: [] }
  for (const entry of entries) await applyEntry(engine, entry, result)
  return result
}

const sameHeader = (a: SessionHeader, b: SessionHeader) => JSON.stringify(ordered(a)) === JSON.stringify(ordered(b))

/** A header's fields in one order, so two copies compare by value. */
function ordered(h: SessionHeader): unknown[] {
  return [h.version, h.id, h.createdAt, h.cwd, h.parentSession, h.seedLength, h.delegationDepth, h.origin, h.forkedFrom]
}

async function applyEntry(engine: Engine, entry: CheckedEntry, result: ApplyResult): Promise<void> {
  const { header, from, events } = entry
  const id = header.id
  const skip = (reason: SyncSkip['reason'], detail: string) => void result.skipped.push({ id, reason, detail })
  let info
  try {
    info = await engine.storage.getSession(id)
  } catch (err) {
    if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
    return skip('damaged', err.message)
  }
  if (!info) {
    if (from > 0) return skip('gap', `${where(id)} is not here and the batch starts at seq ${from}`)
    await withLock(engine, id, skip, async () => {
      const again = await engine.storage.getSession(id)
      if (again) {
        // Created meanwhile (another importer): compare with it as with any stored copy.
        await appendAfterCompare(engine, entry, again, result)
        return
      }
      const seed = events.slice(0, header.seedLength)
      await engine.storage.createSession(header, seed)
      result.copiedSessions++
      result.copiedEvents += seed.length
      const slots = initSlots(engine.registry.list(), header)
      for (const e of seed) foldEvent(slots, e.event)
      const length = await appendRest(engine, header, slots, header.seedLength, events.slice(header.seedLength), result)
      await engine.imported(id, length)
    })
    return
  }
  if (!sameHeader(info.header, header)) {
    result.conflicts.push(conflict(id, 0, 'header', header, info.header))
    return
  }
  if (from > info.length) return skip('gap', `${where(id)} has ${info.length} events here and the batch starts at seq ${from}`)
  // Compare what overlaps without any lock (a reader): only appending needs the writer lock.
  if (!(await sameOverlap(engine, entry, info.length, result))) return
  if (from + events.length <= info.length) return
  await withLock(engine, id, skip, async () => {
    const again = await engine.storage.getSession(id)
    if (!again) return skip('gap', `${where(id)} was deleted while the batch was applied`)
    await appendAfterCompare(engine, entry, again, result)
  })
}

/** Under the writer lock: compares what was appended meanwhile, then appends the rest. */
async function appendAfterCompare(engine: Engine, entry: CheckedEntry, info: { header: SessionHeader; length: number }, result: ApplyResult): Promise<void> {
  const { header, from, events } = entry
  if (!sameHeader(info.header, header)) {
    result.conflicts.push(conflict(header.id, 0, 'header', header, info.header))
    return
  }
  if (from > info.length) {
    result.skipped.push({ id: header.id, reason: 'gap', detail: `${where(header.id)} has ${info.length} events here and the batch starts at seq ${from}` })
    return
  }
  if (!(await sameOverlap(engine, entry, info.length, result))) return
  const rest = events.slice(info.length - from)
  if (rest.length === 0) return
  const cold = await engine.coldRead(header.id)
  await engine.imported(header.id, await appendRest(engine, header, cold.slots, info.length, rest, result))
}

/** Appends `rest` (seqs from `length`), then checkpoints the folded states: the next batch starts warm. */
async function appendRest(engine: Engine, header: SessionHeader, slots: ReturnType<typeof initSlots>, length: number, rest: EncodedEvent[], result: ApplyResult): Promise<number> {
  if (rest.length > 0) {
    await engine.storage.append(header.id, rest)
    result.copiedEvents += rest.length
    for (const e of rest) foldEvent(slots, e.event)
  }
  // The row is a cache: failing to write it costs a refold later, not the import.
  await engine.storage.putCheckpoint(header.id, checkpointRowOf(header, slots).row).catch(() => {})
  return length + rest.length
}

/** True when the batch's events below `length` are the stored ones; else records the conflict. */
async function sameOverlap(engine: Engine, entry: CheckedEntry, length: number, result: ApplyResult): Promise<boolean> {
  const { header, from, events } = entry
  const end = Math.min(length, from + events.length)
  if (from >= end) return true
  let seq = from
  for await (const page of engine.storage.readEvents(header.id, { from, to: end })) {
    for (const stored of page) {
      if (encodeEvent(stored, header.id, Number.MAX_SAFE_INTEGER).json !== events[seq - from]!.json) {
        const info = await engine.storage.getSession(header.id)
        result.conflicts.push(conflict(header.id, seq, 'event', header, info?.header ?? header))
        return false
      }
      seq++
    }
  }
  return true
}

async function withLock(engine: Engine, id: SessionId, skip: (reason: 'locked', detail: string) => void, fn: () => Promise<void>): Promise<void> {
  let release: () => Promise<void>
  try {
    release = await engine.locks.acquire(id)
  } catch (err) {
    if (!isSessionfoldError(err, 'SESSION_LOCKED')) throw err
    return skip('locked', `${where(id)} is open for writing on this side, so its new events were not appended`)
  }
  try {
    await fn()
  } finally {
    await release()
  }
}

function conflict(id: SessionId, seq: number, reason: SyncConflict['reason'], source: SessionHeader, target: SessionHeader): SyncConflict {
  return { id, seq, reason, source: witnessOf(source), target: witnessOf(target) }
}
