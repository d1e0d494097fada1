// getSessions of a sealed store (sealed-storage.ts): the inner adapter's, each session opened as
// getSession and readEvents open it, so a walk over many small sealed sessions keeps its one
// round trip for many of them.
import type { SessionEvent, SessionHeader, SessionId } from '../../core/model'
import type { LogStore, ReadRange, SessionRead } from '../types'

interface Opening {
  openHeader(stored: SessionHeader): Promise<SessionHeader>
  /** Lives by id (sealed-storage.ts): a session's createdAt, which its sealed records are bound to (openHeader notes it). */
  lives: Map<SessionId, number>
  /** readEvents of the sealed store over records already read. */
  readEvents(id: SessionId, range: ReadRange | undefined, given: SessionEvent[]): AsyncIterable<SessionEvent[]>
}

export async function openSessions(
  inner: Pick<LogStore, 'getSessions'>,
  ids: readonly SessionId[],
  maxEvents: number,
  { openHeader, lives, readEvents }: Opening,
): Promise<(SessionRead | undefined)[]> {
  const reads = await inner.getSessions!(ids, maxEvents)
  return Promise.all(
    reads.map(async (read, i) => {
      if (!read) return void lives.delete(ids[i]!)
      const header = await openHeader(read.header)
      if (!read.events) return { header, length: read.length }
      const events: SessionEvent[] = []
      for await (const page of readEvents(header.id, undefined, read.events)) events.push(...page)
      return { header, length: read.length, events }
    }),
  )
}
