// Log files open for writing, at most maxOpenFiles of them: beyond it, the least recently
// used one that is not flushing is closed (its index entries stored first and, in relaxed
// durability, its writes synced).
import type { FileHandle } from 'node:fs/promises'
import { LOG_FILE } from './layout'
import type { Log } from './log'
import type { OffsetIndex } from './offset-index'
import type { FsSettings } from './options'
import { join } from './host'

export interface WriterHandles {
  /** The log's writer handle, opened if need be; now the most recently used. */
  open(log: Log): Promise<FileHandle>
  /** Closes the log's handle, if open, without waiting. */
  drop(log: Log): void
  /** Closes every handle (syncing first in relaxed durability). */
  closeAll(): Promise<void>
}

export function createWriterHandles(
  { fs, strict, maxOpenFiles }: Pick<FsSettings, 'fs' | 'strict' | 'maxOpenFiles'>,
  index: Pick<OffsetIndex, 'store'>,
): WriterHandles {
  /** Least recently used first. */
  const handles = new Map<Log, FileHandle>()

  return {
    async open(log) {
      if (log.fh) {
        handles.delete(log)
        handles.set(log, log.fh)
        return log.fh
      }
      const fh = await fs.open(join(log.dir, LOG_FILE), 'r+')
      log.fh = fh
      handles.set(log, fh)
      for (const [other, h] of handles) {
        if (handles.size <= maxOpenFiles) break
        if (other === log || other.flushing) continue
        handles.delete(other)
        other.fh = undefined
        await index.store(other)
        if (!strict) await h.datasync().catch(() => {})
        await h.close().catch(() => {})
      }
      return fh
    },
    drop(log) {
      const fh = log.fh
      handles.delete(log)
      log.fh = undefined
      if (fh) void fh.close().catch(() => {})
    },
    async closeAll() {
      for (const [log, fh] of handles) {
        if (!strict) await fh.datasync().catch(() => {})
        await fh.close().catch(() => {})
        log.fh = undefined
      }
      handles.clear()
    },
  }
}
