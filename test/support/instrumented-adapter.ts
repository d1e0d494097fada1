// Support: a storage adapter wrapped to count reads and inject faults, for cost and failure tests
import type { CheckpointRow, ReadRange, StorageAdapter } from '../../src/storage/types'
import type { SessionId } from '../../src/core/model'
import type { EncodedEvent } from '../../src/core/validate'

export interface Counts {
  reads: { id: SessionId; from: number; to: number | undefined }[]
  eventsRead: number
  checkpointReads: number
  checkpointWrites: CheckpointRow[]
  readsInFlight: number
  maxReadsInFlight: number
}

export interface Faults {
  append?: (id: SessionId, batch: readonly EncodedEvent[]) => Error | undefined
  putCheckpoint?: (id: SessionId) => Error | undefined
  /** Called as each read (of events or of a checkpoint) starts. */
  onRead?: (id: SessionId) => void
  /** Throws after this many events of a read. */
  readFailsAfter?: number
  /** Called at each checkpoint write with the inner adapter, to check invariants. */
  onPutCheckpoint?: (id: SessionId, row: CheckpointRow, inner: StorageAdapter) => Promise<void>
}

export function instrument(inner: StorageAdapter): { adapter: StorageAdapter; counts: Counts; faults: Faults; reset: () => void } {
  const counts: Counts = { reads: [], eventsRead: 0, checkpointReads: 0, checkpointWrites: [], readsInFlight: 0, maxReadsInFlight: 0 }
  const faults: Faults = {}
  const adapter: StorageAdapter = {
    kind: `instrumented ${inner.kind}`,
    createSession: (h, seed) => inner.createSession(h, seed),
    listIds: (o) => inner.listIds(o),
    async append(id, batch) {
      const err = faults.append?.(id, batch)
      if (err) throw err
      return inner.append(id, batch)
    },
    async *readEvents(id, range?: ReadRange) {
      counts.reads.push({ id, from: range?.from ?? 0, to: range?.to })
      faults.onRead?.(id)
      counts.readsInFlight++
      counts.maxReadsInFlight = Math.max(counts.maxReadsInFlight, counts.readsInFlight)
      try {
        let n = 0
        for await (const page of inner.readEvents(id, range)) {
          n += page.length
          counts.eventsRead += page.length
          if (faults.readFailsAfter !== undefined && n > faults.readFailsAfter) throw new Error('injected read failure')
          yield page
        }
      } finally {
        counts.readsInFlight--
      }
    },
    getSession: (id) => inner.getSession(id),
    listSessions: (o) => inner.listSessions(o),
    deleteSession: (id) => inner.deleteSession(id),
    async getCheckpoint(id) {
      counts.checkpointReads++
      faults.onRead?.(id)
      return inner.getCheckpoint(id)
    },
    async putCheckpoint(id, row) {
      const err = faults.putCheckpoint?.(id)
      if (err) throw err
      await faults.onPutCheckpoint?.(id, row, inner)
      await inner.putCheckpoint(id, row)
      counts.checkpointWrites.push(row)
    },
    deleteCheckpoint: (id) => inner.deleteCheckpoint(id),
    ...(inner.history ? { history: inner.history } : {}),
    ...(inner.kv ? { kv: inner.kv } : {}),
    close: () => inner.close(),
  }
  const reset = () => {
    counts.reads = []
    counts.eventsRead = 0
    counts.checkpointReads = 0
    counts.checkpointWrites = []
    counts.maxReadsInFlight = 0
  }
  return { adapter, counts, faults, reset }
}
