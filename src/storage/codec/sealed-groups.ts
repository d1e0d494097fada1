// getSessions and createSessions of a sealed store (sealed-storage.ts): the inner adapter's, each
// session opened as getSession and readEvents open it, or sealed as createSession seals it, so a
// walk or an import of many small sealed sessions keeps its one round trip for many of them.
import type { SessionEvent, SessionHeader, SessionId } from '../../core/model'
import type { EncodedEvent } from '../../core/validate'
import { assertNewSessions } from '../guard'
import type { LogStore, NewSession, ReadRange, SessionRead } from '../types'
import type { Keyring } from './keyring'

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

interface Sealing {
  /** The store's keys where it is encrypted: their record is read again (another process may have rotated the key). */
  keyring: Pick<Keyring, 'refresh'> | undefined
  sealHeader(header: SessionHeader): Promise<SessionHeader>
  encodeEvents(id: SessionId, createdAt: number, events: readonly EncodedEvent[]): Promise<readonly EncodedEvent[]>
  lives: Map<SessionId, number>
}

/**
 * The inner adapter's createSessions of `sessions` sealed (each one's events in one block, as an
 * append of them would be). No writer lock is taken for them, so the key record is read again
 * here, as a writer's lock reads it (src/host/open-engine.ts): sealed under a data key that a
 * rotation elsewhere dropped, they could never be read again.
 */
export async function createSealed(
  inner: Pick<LogStore, 'createSessions'>,
  sessions: readonly NewSession[],
  { keyring, sealHeader, encodeEvents, lives }: Sealing,
): Promise<boolean[]> {
  assertNewSessions(sessions)
  await keyring?.refresh()
  const sealed = await Promise.all(
    sessions.map(async ({ header, events }) => ({ header: await sealHeader(header), events: await encodeEvents(header.id, header.createdAt, events) })),
  )
  const created = await inner.createSessions!(sealed)
  created.forEach((made, i) => made && lives.set(sessions[i]!.header.id, sessions[i]!.header.createdAt))
  return created
}
