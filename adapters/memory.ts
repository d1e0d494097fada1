// The reference adapter: the storage contract in its plainest form, and the test double.
import type { SessionEvent, SessionHeader, SessionId } from '../src/model'
import type { EncodedEvent } from '../src/validate'
import {
  READ_PAGE, assertContinues, assertHeader, assertSeed, assertSessionId, cancelled, closed,
  compareIds, exists, notFound, resolveList, resolveRange,
} from './common'
import type { CheckpointRow, ReadRange, SessionInfo, StorageAdapter } from './types'

interface Stored {
  header: SessionHeader
  /** Encoded events: every read parses afresh, so callers never share or mutate stored data. */
  events: string[]
  checkpoint?: string
}

export function createMemoryAdapter(): StorageAdapter {
  const sessions = new Map<SessionId, Stored>()
  let isClosed = false

  const open = () => {
    if (isClosed) throw closed('memory')
  }
  const get = (id: SessionId): Stored => {
    open()
    assertSessionId(id)
    const s = sessions.get(id)
    if (!s) throw notFound(id)
    return s
  }

  return {
    kind: 'memory',
    async createSession(header, seed = []) {
      open()
      assertHeader(header)
      assertSeed(header, seed)
      if (sessions.has(header.id)) throw exists(header.id)
      sessions.set(header.id, { header: structuredClone(header), events: seed.map((e) => e.json) })
    },
    async append(id, batch: readonly EncodedEvent[]) {
      const s = get(id)
      assertContinues(id, batch, s.events.length)
      for (const e of batch) s.events.push(e.json)
    },
    async *readEvents(id, range?: ReadRange): AsyncGenerator<SessionEvent[]> {
      const s = get(id)
      const { from, to } = resolveRange(id, range, s.events.length)
      for (let at = from; at < to; at += READ_PAGE) {
        if (range?.signal?.aborted) throw cancelled(id)
        if (sessions.get(id) !== s) throw notFound(id)
        yield s.events.slice(at, Math.min(to, at + READ_PAGE)).map((j) => JSON.parse(j) as SessionEvent)
      }
    },
    async getSession(id): Promise<SessionInfo | undefined> {
      open()
      assertSessionId(id)
      const s = sessions.get(id)
      return s && { header: structuredClone(s.header), length: s.events.length }
    },
    async listSessions(options) {
      open()
      const { after, limit } = resolveList(options)
      return [...sessions.keys()]
        .filter((id) => after === undefined || id > after)
        .sort(compareIds)
        .slice(0, limit)
        .map((id) => structuredClone(sessions.get(id)!.header))
    },
    async listIds(options) {
      open()
      const { after, limit } = resolveList(options)
      return [...sessions.keys()].filter((id) => after === undefined || id > after).sort(compareIds).slice(0, limit)
    },
    async deleteSession(id) {
      open()
      assertSessionId(id)
      sessions.delete(id)
    },
    async getCheckpoint(id) {
      const s = get(id)
      return s.checkpoint === undefined ? undefined : JSON.parse(s.checkpoint)
    },
    async putCheckpoint(id, row: CheckpointRow) {
      get(id).checkpoint = JSON.stringify(row)
    },
    async deleteCheckpoint(id) {
      delete get(id).checkpoint
    },
    async close() {
      isClosed = true
    },
  }
}
