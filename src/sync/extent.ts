// What a replication knows each side holds of a session (src/sync/loop.ts): pushes and pulls
// leave out what the other side is known to have, so nothing goes twice.
import { CHAIN_ZERO, chainOver, eventJson } from '../core/chain'
import type { ChangeBatch } from '../core/changes'
import type { SessionId } from '../core/model'

/** How much of a session (of the one created at `createdAt`) a side holds. */
export interface Extent {
  createdAt: number
  length: number
}

/** Records that a side holds session `id` (the one created at `createdAt`) up to `length`, when that is more than known. */
export function extend(map: Map<SessionId, Extent>, id: SessionId, createdAt: number, length: number): void {
  const had = map.get(id)
  if (!had || had.createdAt !== createdAt || had.length < length) map.set(id, { createdAt, length })
}

/**
 * `map` extended by what `batch` holds: the server's, before an import of it lands here (the
 * live loop and the push rounds run side by side: a round while it lands would send it back,
 * and for a token that may only read, that push is refused, a flip to `error`).
 */
export function extendBy(map: Map<SessionId, Extent>, batch: ChangeBatch): void {
  for (const e of batch.sessions) extend(map, e.header.id, e.header.createdAt, e.from + e.events.length)
}

/** The batch without the part of each session `known` says is there already. */
export function trimKnown(batch: ChangeBatch, known: ReadonlyMap<SessionId, Extent>): ChangeBatch {
  const sessions = []
  for (const e of batch.sessions) {
    const has = known.get(e.header.id)
    if (!has || has.createdAt !== e.header.createdAt || has.length <= e.from) {
      sessions.push(e)
      continue
    }
    const end = e.from + e.events.length
    if (end <= has.length) continue
    // Sent from further on: the witness of the prefix is the chain stepped over what is cut.
    const cut = e.events.slice(0, has.length - e.from)
    const chain = chainOver(e.chain ?? CHAIN_ZERO, cut.map(eventJson))
    sessions.push({ ...e, from: has.length, events: e.events.slice(has.length - e.from), chain })
  }
  return { v: 1, sessions, ...(batch.deleted ? { deleted: batch.deleted } : {}) }
}
