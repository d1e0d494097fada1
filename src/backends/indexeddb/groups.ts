// Many sessions in one IndexedDB transaction: getSessions (the first walk of changesSince) and
// createSessions (an import of many small sessions). A transaction a session costs about
// 0.6 ms read-only and 4 ms strict read-write in Chromium; a session among hundreds in one, tens of µs.
import type { SessionId } from '../../core/model'
import type { NewSession, SessionRead } from '../../storage/types'
import { quiet, type Tx } from './schema'

/** Each of `ids` (undefined when not there), with all its events when it has at most `maxEvents`. */
export async function readGroup(tx: Tx<'readonly'>, ids: readonly SessionId[], maxEvents: number): Promise<(SessionRead | undefined)[]> {
  const metas = await Promise.all(ids.map((id) => tx.objectStore('sessions').get(id)))
  const read = async (id: SessionId, i: number): Promise<SessionRead | undefined> => {
    const meta = metas[i]
    if (!meta) return undefined
    const info: SessionRead = { header: meta.header, length: meta.length }
    if (meta.length > maxEvents) return info
    const events = meta.length === 0 ? [] : await tx.objectStore('events').getAll(IDBKeyRange.bound([id, 0], [id, meta.length - 1]), meta.length)
    // Rows missing or out of place: given without them, so that its own read reports it.
    return events.length === meta.length && events.every((e, k) => e.seq === k) ? { ...info, events } : info
  }
  return Promise.all(ids.map(read))
}

/** Stores each of `news` whose id is free (its row, events and feed entry); true for each stored, in order. */
export async function createGroup(tx: Tx<'readwrite'>, news: readonly NewSession[]): Promise<boolean[]> {
  const sessions = tx.objectStore('sessions')
  const taken = await Promise.all(news.map(({ header }) => sessions.getKey(header.id)))
  const writes: Promise<unknown>[] = []
  news.forEach(({ header, events }, i) => {
    if (taken[i] !== undefined) return
    const id = header.id
    writes.push(quiet(sessions.add({ header, length: events.length }, id)), quiet(tx.objectStore('feed').add({ id, from: 0, to: events.length })))
    for (const e of events) writes.push(quiet(tx.objectStore('events').put(e.event, [id, e.event.seq])))
  })
  // Committed once the writes are asked for, as the appends' group is: one round trip less. A failed put still aborts it.
  tx.commit()
  await Promise.all(writes)
  return taken.map((k) => k === undefined)
}
