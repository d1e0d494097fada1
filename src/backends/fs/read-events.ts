// Reading events from a log: the offset index finds the record to start from (rebuilt by one
// full scan when it is wrong), then records are read in large windows and parsed from `from`
// on, each checked for its checksum and its seq.
import type { FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { SessionEvent } from '../../core/model'
import { cancelled, notFound, resolveRange, type Guard } from '../../storage/guard'
import { READ_PAGE, type ReadRange } from '../../storage/types'
import { corrupt, errno, storageError } from './errors'
import { LOG_FILE } from './layout'
import type { Log } from './log'
import { INDEX_STRIDE, recordIs, type OffsetIndex } from './offset-index'
import type { FsSettings } from './options'
import { newWindow, readRecord, readerOf } from './record-format'
import { scanLog } from './scan'

const READ_CHUNK = 256 * 1024

/** Events `range` of `log`, in pages of READ_PAGE. */
export type ReadEvents = (log: Log, range: ReadRange | undefined) => AsyncGenerator<SessionEvent[]>

export function createEventReader({ fs }: Pick<FsSettings, 'fs'>, index: Pick<OffsetIndex, 'rewrite'>, guard: Pick<Guard, 'check'>): ReadEvents {
  async function* readRange(log: Log, fh: FileHandle, from: number, to: number, signal?: AbortSignal): AsyncGenerator<SessionEvent[]> {
    let rebuilt = false
    for (;;) {
      const block = Math.floor(from / INDEX_STRIDE)
      const start = log.index[block]
      if (start !== undefined && (await recordIs(readerOf(fh), start, block * INDEX_STRIDE, log.size))) {
        yield* readFrom(log, fh, start, block * INDEX_STRIDE, from, to, signal)
        return
      }
      if (rebuilt) throw corrupt(log, start ?? 0, `the record of seq ${block * INDEX_STRIDE} cannot be found`, block * INDEX_STRIDE)
      // The index is wrong (damaged or stale): rebuild it from a full scan, once.
      const scan = await scanLog(readerOf(fh), 0, 0, log.size)
      if (scan.end < log.size) throw corrupt(log, scan.damagedAt ?? scan.end, 'a record with a bad checksum', scan.length)
      log.index = scan.indexed
      log.indexStored = await index.rewrite(log)
      rebuilt = true
    }
  }

  async function* readFrom(log: Log, fh: FileHandle, at: number, seq: number, from: number, to: number, signal?: AbortSignal): AsyncGenerator<SessionEvent[]> {
    const w = newWindow(READ_CHUNK)
    const read = readerOf(fh)
    let page: SessionEvent[] = []
    while (seq < to) {
      const record = await readRecord(read, w, at, log.size)
      if (record.kind !== 'ok') throw corrupt(log, at, 'a record with a bad checksum or length', seq)
      if (seq >= from) {
        let event: SessionEvent
        try {
          event = JSON.parse(w.buf.toString('utf8', record.start, record.end)) as SessionEvent
        } catch {
          throw corrupt(log, at, 'a record that is not JSON', seq)
        }
        if (event?.seq !== seq) throw corrupt(log, at, `a record of seq ${String(event?.seq)} where ${seq} belongs`, seq)
        page.push(event)
        if (page.length === READ_PAGE) {
          if (signal?.aborted) throw cancelled(log.id)
          guard.check()
          yield page
          page = []
        }
      }
      at = w.pos + record.end
      seq++
    }
    if (page.length > 0) {
      if (signal?.aborted) throw cancelled(log.id)
      yield page
    }
  }

  return async function* readEvents(log, range) {
    const id = log.id
    const { from, to } = resolveRange(id, range, log.length)
    if (from >= to) return
    if (range?.signal?.aborted) throw cancelled(id)
    let fh: FileHandle
    try {
      fh = await fs.open(join(log.dir, LOG_FILE), 'r')
    } catch (err) {
      throw errno(err) === 'ENOENT' ? notFound(id) : storageError(err, id, 'read')
    }
    try {
      for await (const page of readRange(log, fh, from, to, range?.signal)) yield page
    } catch (err) {
      throw storageError(err, id, 'read')
    } finally {
      await fh.close()
    }
  }
}
