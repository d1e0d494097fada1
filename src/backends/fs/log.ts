// What this process knows of one session's log: where its whole batches end, its offset
// index, its writer handle and the appends queued behind a flush. The log cache keeps these,
// group commit writes through them, and reads walk the file with them.
import type { FileHandle } from 'node:fs/promises'
import type { SessionfoldError } from '../../core/errors'
import type { SessionHeader, SessionId } from '../../core/model'
import type { EncodedEvent } from '../../core/validate'

/** An append waiting for its group to be written. */
export interface QueuedBatch {
  batch: readonly EncodedEvent[]
  resolve: () => void
  reject: (err: unknown) => void
}

export interface Log {
  id: SessionId
  /** The session's folder. */
  dir: string
  header: SessionHeader
  ino: number
  /** End of the last whole batch. */
  size: number
  /** Bytes in the file as last seen: more than `size` means a torn tail to cut before writing. */
  fileSize: number
  length: number
  /** index[k]: offset of the record of seq k * INDEX_STRIDE. */
  index: number[]
  /** Index entries known to be in the index file. */
  indexStored: number
  /** The write of index entries in progress (one at a time per log; appends never wait for it). */
  indexing?: Promise<void>
  /** Damage found while opening: every later use fails with it. */
  damage?: SessionfoldError
  /** The writer handle, while open (see writer-handles.ts). */
  fh?: FileHandle
  queue: QueuedBatch[]
  /** Length including queued batches: what the next append must continue. */
  queued: number
  flushing?: Promise<void>
  /** Settles with the last queued batch: getSession waits for it, so a length it returns is not about to be overtaken. */
  lastDone?: Promise<void>
}

/** True while appends of this process are queued or being written to the log. */
export const writing = (log: Log): boolean => log.flushing !== undefined || log.queue.length > 0
