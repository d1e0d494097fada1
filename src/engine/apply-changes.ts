// applyChanges: imports a batch from another store with headers and seqs unchanged. An entry
// continues the history stored here only if both sides hold the same events before where it
// writes: its chain value at `from` (the witness of the sender's prefix, src/core/chain.ts), stepped
// over the events it has that are here already, must be this store's chain value there. Else
// the histories parted, and it is a conflict, reported, with neither version touched (DESIGN
// §13). New events are written through the append pipeline, by a writer the target opens for
// the import, so handles here see them like any other append. A batch's tombstones go first:
// each deletes the copy of that life here (its views hear it as of any delete) and is kept, and
// an entry of a life deleted here is refused as skipped 'deleted' (DESIGN §15).
import type { NewSession, SessionInfo } from '../storage/types'
import type { ApplyResult, SyncConflict, SyncSkip, Tombstone } from '../core/changes'
import { isSessionfoldError, where } from '../core/errors'
import { witnessOf, type SessionHeader, type SessionId } from '../core/model'
import { chainOver } from '../core/chain'
import { inTurns } from '../core/in-turns'
import { encodeEvent, type EncodedEvent } from '../core/validate'
import { checkBatch, type CheckedEntry } from './change-batch'
import type { StoreReader } from './reader'
import { MARK_EVERY } from './chain-marks'
import type { Tombstones } from './tombstones'

/** Writes an import makes to one session, while it holds that session open for writing. */
export interface ImportWriter {
  /** Stores the session with its seed (a fork's copies), and opens it. */
  create(header: SessionHeader, seed: readonly EncodedEvent[]): Promise<void>
  /** Appends events numbered from the stored length on. */
  append(events: readonly EncodedEvent[]): Promise<void>
  /** The session's chain value at `position` (at most its length), as its writer has it. */
  chainAt(position: number): Promise<string>
}

/** The store an import writes into. */
export interface ImportTarget {
  reader: Pick<StoreReader, 'find' | 'findMany' | 'pages'>
  maxEventBytes: number
  /** Runs `write` holding `id` open for writing; 'locked' when another writer has it. */
  withWriter(id: SessionId, write: (writer: ImportWriter) => Promise<void>): Promise<'locked' | undefined>
  /** The stored session's chain value at `position` (at most its length), without a writer. */
  chainAt(header: SessionHeader, position: number): Promise<string>
  /** The deleted lives this store knows of. */
  tombstones: Pick<Tombstones, 'add' | 'find' | 'any'>
  /** Deletes a session nobody holds open for writing (SESSION_LOCKED otherwise), with its tombstone. */
  remove(id: SessionId): Promise<void>
  /** Stores new sessions with their events at once, where the storage can (its `createSessions`): true for each created. */
  createMany?: ((sessions: readonly NewSession[]) => Promise<boolean[]>) | undefined
  /** Tells the engine that `made` were stored without a writer (createMany): its session list and replications hear it. */
  wrote(made: readonly NewSession[]): void
}

/**
 * Entries of a batch imported at once. Each is another session (a batch names a session once),
 * and most of an entry's time waits on the disk (a new session's folder, files and their
 * syncs), which overlaps across sessions: a batch of small sessions imported one at a time
 * waited on one sync after another.
 */
const AT_ONCE = 16

/**
 * Entries that make a small session new here (from seq 0, fewer events than a chain mark's span,
 * so no marks are owed) are stored this many at a time with one `createMany` where the storage
 * has it: one commit for many where a writer each made a commit or a transaction of its own for
 * each step (2.7 ms a two-event session on PostgreSQL, 7 ms in Chromium). Such a session gets
 * no writer: no lock (its creation is atomic, and one whose id was taken meanwhile goes the
 * way of the others), no checkpoint row (a cache; under MARK_EVERY events a fold is short).
 */
const NEW_AT_ONCE = 256
/** And at most about this many bytes of events a group (a hand-made batch may hold big ones: one statement, one transaction). */
const NEW_GROUP_BYTES = 8 * 1024 * 1024
/** Such groups stored at a time: one is sealed and sent while another's commit waits on the disk. */
const GROUPS_AT_ONCE = 3

const emptyResult = (): ApplyResult => ({ copiedSessions: 0, copiedEvents: 0, deletedSessions: 0, conflicts: [], skipped: [] })

/** Imports a batch. INVALID_ARGUMENT for a bad batch, with nothing written. */
export async function applyChanges(target: ImportTarget, batch: unknown): Promise<ApplyResult> {
  const { entries, deleted } = checkBatch(batch, target.maxEventBytes)
  const result = emptyResult()
  for (const t of deleted) await applyTombstone(target, t, result)
  const outcomes: (ApplyResult | undefined)[] = []
  if (target.createMany) await createNew(target, target.createMany, entries, outcomes)
  // Up to AT_ONCE entries at a time; each one's outcome added in the batch's order, so that the
  // result reads as if they went one after another. A failure stops new entries from starting
  // and is thrown once those under way have ended (the first failing entry's, in order).
  const rest = entries.flatMap((_, at) => (outcomes[at] ? [] : [at]))
  await inTurns(rest, AT_ONCE, async (at) => {
    const own = emptyResult()
    await applyEntry(target, entries[at]!, own)
    outcomes[at] = own
  })
  for (const own of outcomes) {
    if (!own) continue
    result.copiedSessions += own.copiedSessions
    result.copiedEvents += own.copiedEvents
    result.deletedSessions += own.deletedSessions
    result.conflicts.push(...own.conflicts)
    result.skipped.push(...own.skipped)
  }
  return result
}

/**
 * Stores the entries that make a small session new here, NEW_AT_ONCE at a time (see there), each
 * one's outcome in `outcomes`. The others, and those the storage found taken meanwhile, are left
 * for applyEntry; so is a group in which a session is damaged here (applyEntry reports it).
 * These go before the batch's other entries: a group that fails rejects the call before any of
 * those is applied (a batch is applied again whole after a failure: what is here is compared).
 */
async function createNew(
  target: ImportTarget,
  createMany: NonNullable<ImportTarget['createMany']>,
  entries: readonly CheckedEntry[],
  outcomes: (ApplyResult | undefined)[],
): Promise<void> {
  const small = entries.flatMap((e, at) => (e.from === 0 && e.events.length < MARK_EVERY ? [at] : []))
  if (small.length === 0) return
  const anyDeleted = await target.tombstones.any()
  const group = async (group: number[]) => {
    const here = await findAll(
      target,
      group.map((at) => entries[at]!.header.id),
    )
    if (!here) return
    const fresh = group.filter((_, k) => here[k] === undefined)
    // A life deleted here is left for applyEntry, which refuses it as 'deleted'.
    const gone = anyDeleted ? await Promise.all(fresh.map((at) => target.tombstones.find(entries[at]!.header.id, entries[at]!.header.createdAt))) : []
    const news = fresh.filter((_, k) => !gone[k])
    if (news.length === 0) return
    const sessions = news.map((at) => ({ header: entries[at]!.header, events: entries[at]!.events }))
    const made = await createMany(sessions)
    news.forEach((at, k) => {
      if (made[k]) outcomes[at] = { ...emptyResult(), copiedSessions: 1, copiedEvents: entries[at]!.events.length }
    })
    if (made.some(Boolean)) target.wrote(sessions.filter((_, k) => made[k]))
  }
  const groups: number[][] = []
  let bytes = 0
  for (const at of small) {
    const size = entries[at]!.events.reduce((sum, e) => sum + e.json.length, 0)
    const last = groups.at(-1)
    if (last && last.length < NEW_AT_ONCE && bytes + size <= NEW_GROUP_BYTES) {
      last.push(at)
      bytes += size
    } else {
      groups.push([at])
      bytes = size
    }
  }
  await inTurns(groups, GROUPS_AT_ONCE, group)
}

/** Whether each of `ids` is stored, at once where the reader can; undefined when one is damaged. */
async function findAll(target: ImportTarget, ids: readonly SessionId[]): Promise<(SessionInfo | undefined)[] | undefined> {
  try {
    if (target.reader.findMany) return await target.reader.findMany(ids, 0)
    return await Promise.all(ids.map((id) => target.reader.find(id)))
  } catch (err) {
    if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
    return undefined
  }
}

/** Keeps the tombstone, and deletes the copy of that life here, if there is one. */
async function applyTombstone(target: ImportTarget, t: Tombstone, result: ApplyResult): Promise<void> {
  await target.tombstones.add(t)
  let info
  try {
    info = await target.reader.find(t.id)
  } catch (err) {
    if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
    return // a damaged copy: its life cannot be told; `verify` reports it, a delete by id removes it
  }
  if (info?.header.createdAt !== t.createdAt) return
  try {
    await target.remove(t.id)
    result.deletedSessions++
  } catch (err) {
    if (!isSessionfoldError(err, 'SESSION_LOCKED')) throw err
    result.skipped.push({ id: t.id, reason: 'locked', detail: `${where(t.id)} is open for writing on this side, so it was not deleted` })
  }
}

/** True (and the entry skipped) when the life the entry carries was deleted here. */
async function deletedHere(target: ImportTarget, entry: CheckedEntry, result: ApplyResult): Promise<boolean> {
  const { id, createdAt } = entry.header
  const tombstone = await target.tombstones.find(id, createdAt)
  if (!tombstone) return false
  result.skipped.push({ id, reason: 'deleted', detail: `${where(id)} (created at ${createdAt}) was deleted at ${tombstone.deletedAt}`, tombstone })
  return true
}

/** Whether two copies' headers are the same (one life of the id, seeded alike). */
export const sameHeader = (a: SessionHeader, b: SessionHeader) => JSON.stringify(ordered(a)) === JSON.stringify(ordered(b))

/** A header's fields in one order, so two copies compare by value. */
function ordered(h: SessionHeader): unknown[] {
  return [h.version, h.id, h.createdAt, h.cwd, h.parentSession, h.seedLength, h.delegationDepth, h.origin, h.forkedFrom]
}

async function applyEntry(target: ImportTarget, entry: CheckedEntry, result: ApplyResult): Promise<void> {
  const { header, from, events } = entry
  const id = header.id
  const skip = (reason: SyncSkip['reason'], detail: string) => void result.skipped.push({ id, reason, detail })
  let info
  try {
    info = await target.reader.find(id)
  } catch (err) {
    if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
    return skip('damaged', err.message)
  }
  if (!info || info.header.createdAt !== header.createdAt) {
    if (await deletedHere(target, entry, result)) return
  }
  if (!info) {
    if (from > 0) return skip('gap', `${where(id)} is not here and the batch starts at seq ${from}`)
    return withWriter(target, id, skip, async (writer) => {
      const again = await target.reader.find(id)
      // Created meanwhile (another importer): compare with it as with any stored copy.
      if (again) return appendAfterCompare(target, writer, entry, again, result)
      const seed = events.slice(0, header.seedLength)
      await writer.create(header, seed)
      result.copiedSessions++
      result.copiedEvents += seed.length
      await appendRest(writer, events.slice(header.seedLength), result)
    })
  }
  if (!sameHeader(info.header, header)) {
    result.conflicts.push(conflict(id, 0, 'header', header, info.header))
    return
  }
  if (from > info.length) return skip('gap', `${where(id)} has ${info.length} events here and the batch starts at seq ${from}`)
  // Nothing to append (all of it is here already): compare without any lock, a reader's check.
  const end = from + events.length
  if (end <= info.length) {
    await sameHistory(target, entry, end, await target.chainAt(info.header, end), result)
    return
  }
  await withWriter(target, id, skip, async (writer) => {
    const again = await target.reader.find(id)
    if (!again) return skip('gap', `${where(id)} was deleted while the batch was applied`)
    await appendAfterCompare(target, writer, entry, again, result)
  })
}

/** Holding the writer: compares what was appended meanwhile, then appends the rest. */
async function appendAfterCompare(target: ImportTarget, writer: ImportWriter, entry: CheckedEntry, info: SessionInfo, result: ApplyResult): Promise<void> {
  const { header, from, events } = entry
  if (!sameHeader(info.header, header)) {
    result.conflicts.push(conflict(header.id, 0, 'header', header, info.header))
    return
  }
  if (from > info.length) {
    result.skipped.push({ id: header.id, reason: 'gap', detail: `${where(header.id)} has ${info.length} events here and the batch starts at seq ${from}` })
    return
  }
  const at = Math.min(info.length, from + events.length)
  if (!(await sameHistory(target, entry, at, await writer.chainAt(at), result))) return
  await appendRest(writer, events.slice(info.length - from), result)
}

async function appendRest(writer: ImportWriter, rest: readonly EncodedEvent[], result: ApplyResult): Promise<void> {
  if (rest.length === 0) return
  await writer.append(rest)
  result.copiedEvents += rest.length
}

/**
 * True when both sides hold the same events `[0, at)` (`from <= at <= from + events.length`):
 * the entry's chain value at `from` stepped over its events below `at` is `ours`, this store's
 * value at `at`. Else records the conflict, at the first seq the batch shows to differ (its
 * events that are here are compared), or at `from - 1` when they all match: then the
 * histories parted before the entry begins.
 */
async function sameHistory(target: ImportTarget, entry: CheckedEntry, at: number, ours: string, result: ApplyResult): Promise<boolean> {
  const { header, from, events } = entry
  const theirs = chainOver(
    entry.chain,
    events.slice(0, at - from).map((e) => e.json),
  )
  if (theirs === ours) return true
  let seq = from - 1
  if (from < at) {
    let i = from
    compare: for await (const page of target.reader.pages(header.id, { from, to: at })) {
      for (const stored of page) {
        if (encodeEvent(stored, header.id, Number.MAX_SAFE_INTEGER).json !== events[i - from]!.json) {
          seq = i
          break compare
        }
        i++
      }
    }
  }
  const info = await target.reader.find(header.id)
  result.conflicts.push({ ...conflict(header.id, Math.max(0, seq), 'event', header, info?.header ?? header), chain: { at, source: theirs, target: ours } })
  return false
}

async function withWriter(
  target: ImportTarget,
  id: SessionId,
  skip: (reason: 'locked', detail: string) => void,
  write: (writer: ImportWriter) => Promise<void>,
): Promise<void> {
  const outcome = await target.withWriter(id, write)
  if (outcome === 'locked') skip('locked', `${where(id)} is open for writing on this side, so its new events were not appended`)
}

function conflict(id: SessionId, seq: number, reason: SyncConflict['reason'], source: SessionHeader, target: SessionHeader): SyncConflict {
  return { id, seq, reason, source: witnessOf(source), target: witnessOf(target) }
}
