// Group commit: appends to a session queue behind its flush in progress and go out together
// in one write and one fdatasync; sessions flush in parallel. A torn tail left by a crash is
// cut before anything is written after it.
import type { EncodedEvent } from '../../core/validate'
import { assertContinues } from '../../storage/guard'
import type { RepairReport } from '../../storage/types'
import { storageError } from './errors'
import { LOG_FILE } from './layout'
import type { Log } from './log'
import type { OffsetIndex } from './offset-index'
import type { FsSettings } from './options'
import { encodeBatch } from './record-format'
import type { WriterHandles } from './writer-handles'
import type { FeedFile } from './feed'
import { join } from './host'
import { nextTask } from '../../core/next-task'

export interface GroupCommit {
  /**
   * Queues `batch` (SEQ_CONFLICT unless it continues what is queued) and resolves once it is
   * written, and in strict durability synced, with the group it went out in.
   */
  append(log: Log, batch: readonly EncodedEvent[]): Promise<void>
}

const afterIo = () => new Promise<void>((resolve) => nextTask(resolve))

export function createGroupCommit(
  { fs, strict, onRepair }: Pick<FsSettings, 'fs' | 'strict' | 'onRepair'>,
  handles: Pick<WriterHandles, 'open'>,
  index: Pick<OffsetIndex, 'addBatch'>,
  feed: Pick<FeedFile, 'record'>,
  /** The store's calls under way (this append's among them). */
  inFlight: () => number,
): GroupCommit {
  /** Logs with a flush in progress (see writeGroup: a lone one syncs on this thread). */
  let flushingLogs = 0

  async function flushLoop(log: Log): Promise<void> {
    flushingLogs++
    try {
      while (log.queue.length > 0) {
        // One task of the event loop before each group: appends that have already arrived (a
        // worker's messages still queued on its port, callers a flush just woke) queue now and
        // join it, instead of each paying an fdatasync of its own. A lone append pays only the
        // turn, a few microseconds.
        await afterIo()
        const group = log.queue.splice(0)
        try {
          await writeGroup(log, group.length === 1 ? group[0]!.batch : group.flatMap((p) => p.batch))
          for (const p of group) p.resolve()
        } catch (err) {
          // Batches queued behind this group were numbered after it: none of them can land.
          const rest = log.queue.splice(0)
          log.queued = log.length
          const e = storageError(err, log.id, 'append')
          for (const p of [...group, ...rest]) p.reject(e)
        }
      }
    } finally {
      flushingLogs--
      log.flushing = undefined
    }
  }

  async function writeGroup(log: Log, events: readonly EncodedEvent[]): Promise<void> {
    const fh = await handles.open(log)
    if (log.fileSize > log.size) {
      // A torn tail (a crash mid-write): cut it before anything is written after it.
      await fh.truncate(log.size)
      await fh.datasync()
      const report: RepairReport = { sessionId: log.id, file: join(log.dir, LOG_FILE), offset: log.size, bytes: log.fileSize - log.size }
      log.fileSize = log.size
      onRepair?.(report)
    }
    const { buf, offsets } = encodeBatch(events)
    // The feed's record goes first: a crash may leave a record whose events are not there (a
    // reader checks the log), never acknowledged events the feed does not name (a machine crash
    // can lose the record from the page cache; the feed then starts over, see feed.ts).
    await feed.record([{ id: log.id, from: log.length, to: log.length + events.length }])
    try {
      let done = 0
      while (done < buf.length) done += fs.writeSync(fh.fd, buf, done, buf.length - done, log.size + done)
      if (strict) {
        // A lone flush syncs on this thread, as better-sqlite3 does: cheaper than the thread
        // pool's round trip. While anything else of the store is under way (other sessions
        // flushing, records written: a Durable Streams server's many streams), the sync goes to
        // the pool, so that they go on meanwhile rather than wait behind it (on 50 streams at
        // once, the thread spent a third of its time in fdatasync).
        if (flushingLogs === 1 && inFlight() <= 1 && fs.fdatasyncSync) fs.fdatasyncSync(fh.fd)
        else await fh.datasync()
      }
    } catch (err) {
      // Nothing of the group counts. If the cut fails too, the next write cuts first.
      log.fileSize = log.size + buf.length
      await fh.truncate(log.size).then(
        () => {
          log.fileSize = log.size
        },
        () => {},
      )
      throw err
    }
    index.addBatch(log, offsets)
    log.size += buf.length
    log.fileSize = log.size
    log.length += events.length
  }

  return {
    append(log, batch) {
      assertContinues(log.id, batch, log.queued)
      log.queued += batch.length
      const done = new Promise<void>((resolve, reject) => log.queue.push({ batch, resolve, reject }))
      log.flushing ??= flushLoop(log)
      log.lastDone = done.catch(() => {})
      return done
    },
  }
}
