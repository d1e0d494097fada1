// Reading a session as of a point of its log (store.observe(id, { at }), listChildren of such a
// view, the CLI's --at): folded once from the nearest row that can be trusted, the latest row or
// a history row (history.ts), then the events up to the point. Never writes; the last few points
// read are kept (the slots are only read by their users: snapshots and catalogs are copies).
import { observeAtInputSchema, parseInput } from '../core/inputs'
import type { HistoryRows } from '../storage/types'
import { SessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { ProjectionDefinition } from '../core/projection'
import { foldEvent, restoreSlots, type UnitSlot } from './units'
import { catalogEntries, type CatalogReader } from './list-children'
import type { StoreReader } from './reader'

/** What reading at a point needs of the engine. */
export interface AtReader {
  reader: StoreReader
  history: HistoryRows | undefined
  defs: readonly ProjectionDefinition[]
  /** The last few points read (a view as of a point asks for its values, then for its children). */
  recent?: Map<string, { header: string; slots: UnitSlot[] }>
}

/** Points kept in AtReader.recent. */
const RECENT = 4

/**
 * The session folded over its first `at` events: from the latest row or the newest history row
 * at or before `at`, whichever lets it fold fewer events, then the events up to `at`.
 * INVALID_ARGUMENT when `at` is not in `0..length`. Never writes.
 */
export async function readAt(
  { reader, history, defs, recent }: AtReader,
  id: SessionId,
  at: number,
  signal?: AbortSignal,
): Promise<{ header: SessionHeader; length: number; slots: UnitSlot[] }> {
  const info = await reader.info(id)
  if (!Number.isSafeInteger(at) || at < 0 || at > info.length) {
    throw new SessionfoldError('INVALID_ARGUMENT', `${where(id)} has ${info.length} events: at must be an integer in 0..${info.length}, got ${String(at)}`, {
      sessionId: id,
    })
  }
  // A prefix of a log never changes while its session lives (the header says which life).
  const key = `${id}\n${at}`
  const header = JSON.stringify(info.header)
  const hit = recent?.get(key)
  if (hit && hit.header === header) return { header: info.header, length: at, slots: hit.slots }
  // Both rows at once (any doubt about one: ignore it); the one that leaves fewer events wins.
  const [latest, row] = await Promise.all([
    reader.checkpoint(id).catch(() => undefined),
    history && at > 0 ? history.get(id, at).catch(() => undefined) : undefined,
  ])
  let best = restoreSlots(defs, info.header, latest, at)
  // A history row that cannot be used (cut by a crash, another version): the one before it, a few at most.
  for (let tries = 0, found = row; found && best.from < at && tries < 3; tries++) {
    const other = restoreSlots(defs, info.header, found.row, at)
    if (other.kept > 0) {
      if (best.kept === 0 || other.from > best.from) best = other
      break
    }
    found = found.at > 1 ? await history!.get(id, found.at - 1).catch(() => undefined) : undefined
  }
  if (best.kept === 0) best = restoreSlots(defs, info.header, undefined, at)
  if (best.from < at) {
    for await (const page of reader.pages(id, { from: best.from, to: at, signal })) {
      for (const e of page) foldEvent(best.slots, e)
    }
  }
  if (recent) {
    recent.set(key, { header, slots: best.slots })
    while (recent.size > RECENT) recent.delete(recent.keys().next().value!)
  }
  return { header: info.header, length: at, slots: best.slots }
}

/** The `at` of observe's options: INVALID_ARGUMENT unless `{ at }` with a whole number `at >= 0` (readAt checks it against the log). */
export function atOption(id: SessionId, options: unknown): number {
  return parseInput(observeAtInputSchema, options, 'observe options', id).at
}

/** Catalogs for listChildren of session `id` as of `at`: its catalog as it was then, every other (its children's) as it is now. */
export function catalogsAt(now: CatalogReader, source: AtReader, id: SessionId, at: number): CatalogReader {
  return {
    catalogOf: async (cid, signal) => {
      if (cid !== id) return now.catalogOf(cid, signal)
      const { header, slots } = await readAt(source, id, at, signal)
      return { header, entries: catalogEntries(slots) }
    },
    locks: now.locks,
  }
}
