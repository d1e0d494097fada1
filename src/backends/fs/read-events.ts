// Reading events from a log: the offset index finds the record to start from (rebuilt by one
// full scan when it is wrong), then records are read in large windows and parsed from `from`
// on, each checked for its checksum and its seq.
import type { SessionEvent } from '../../core/model'
import { seqEnd } from '../../core/validate'
import { cancelled, notFound, resolveRange, type Guard } from '../../storage/guard'
import { READ_PAGE, type ReadRange, type SkipTexts } from '../../storage/types'
import { corrupt, errno, storageError } from './errors'
import { LOG_FILE } from './layout'
import type { Log } from './log'
import { INDEX_STRIDE, recordIs, type OffsetIndex } from './offset-index'
import type { FsSettings } from './options'
import { openForReading, type ReadableFile } from './quick-reads'
import { newWindow, RECORD_HEADER, readRecord, recordAt, type ReadAt } from './record-format'
import { scanLog } from './scan'
import { join } from './host'

const READ_CHUNK = 256 * 1024

/** Events `range` of `log`, in pages of READ_PAGE, each as `as` makes it of its record's text. */
export type ReadEvents = <T>(log: Log, range: ReadRange | undefined, as: RecordAs<T>) => AsyncGenerator<T[]>

/** What a record of seq `seq` is read as, from its payload `buf[start, end)` (checksummed already); throws why it is not that seq's event. */
export type RecordAs<T> = (buf: Buffer, start: number, end: number, seq: number) => T

/** The event, parsed. */
export const asEvent: RecordAs<SessionEvent> = (buf, start, end, seq) => parsed(buf.toString('utf8', start, end), seq)

function parsed(text: string, seq: number): SessionEvent {
  let event: SessionEvent
  try {
    event = JSON.parse(text) as SessionEvent
  } catch {
    throw new Error('a record that is not JSON')
  }
  if (event?.seq !== seq) throw new Error(`a record of seq ${String(event?.seq)} where ${seq} belongs`)
  return event
}

/** The event's text as it was appended (encodeEvent's, `seq` first), unparsed; one written otherwise is parsed and written so. */
export const asText: RecordAs<string> = (buf, start, end, seq) => textOf(buf.toString('utf8', start, end), seq)

function textOf(text: string, seq: number): string {
  const at = seqEnd(text, seq)
  if (at > 0 && text.charCodeAt(at) === 44) return text
  const { type, time, data } = parsed(text, seq)
  return JSON.stringify({ seq, type, time, data })
}

/** As asText, '' for the records `skip` says the reader will not look at (no text made of them). A read's own: it counts. */
export function textsSkipping(skip: SkipTexts): RecordAs<string> {
  let skipped = 0 // records still to skip
  return (buf, start, end, seq) => {
    if (skipped > 0) {
      skipped--
      return ''
    }
    const text = asText(buf, start, end, seq)
    skipped = skip(text, seq)
    return text
  }
}

export function createEventReader({ fs }: Pick<FsSettings, 'fs'>, index: Pick<OffsetIndex, 'rewrite'>, guard: Pick<Guard, 'check'>): ReadEvents {
  async function* readRange<T>(log: Log, read: ReadAt, from: number, to: number, as: RecordAs<T>, signal?: AbortSignal): AsyncGenerator<T[]> {
    let rebuilt = false
    for (;;) {
      const block = Math.floor(from / INDEX_STRIDE)
      const start = log.index[block]
      if (start !== undefined && (await recordIs(read, start, block * INDEX_STRIDE, log.size))) {
        yield* readFrom(log, read, start, block * INDEX_STRIDE, from, to, as, signal)
        return
      }
      if (rebuilt) throw corrupt(log, start ?? 0, `the record of seq ${block * INDEX_STRIDE} cannot be found`, block * INDEX_STRIDE)
      // The index is wrong (damaged or stale): rebuild it from a full scan, once.
      const scan = await scanLog(read, 0, 0, log.size)
      if (scan.end < log.size) throw corrupt(log, scan.damagedAt ?? scan.end, 'a record with a bad checksum', scan.length)
      log.index = scan.indexed
      log.indexStored = await index.rewrite(log)
      rebuilt = true
    }
  }

  async function* readFrom<T>(
    log: Log,
    read: ReadAt,
    at: number,
    seq: number,
    from: number,
    to: number,
    as: RecordAs<T>,
    signal?: AbortSignal,
  ): AsyncGenerator<T[]> {
    const w = newWindow(Math.min(READ_CHUNK, Math.max(RECORD_HEADER, log.size - at))) // no larger than what is left (scan.ts)
    let page: T[] = []
    while (seq < to) {
      // The window holds most records whole: read the file only for one it does not.
      let record = at >= w.pos ? recordAt(w.buf, at - w.pos, w.end) : undefined
      if (record?.kind !== 'ok') record = await readRecord(read, w, at, log.size)
      if (record.kind !== 'ok') throw corrupt(log, at, 'a record with a bad checksum or length', seq)
      if (seq >= from) {
        let item: T
        try {
          item = as(w.buf, record.start, record.end, seq)
        } catch (err) {
          throw corrupt(log, at, (err as Error).message, seq)
        }
        page.push(item)
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

  return async function* readEvents<T>(log: Log, range: ReadRange | undefined, as: RecordAs<T>): AsyncGenerator<T[]> {
    const id = log.id
    const { from, to } = resolveRange(id, range, log.length)
    if (from >= to) return
    if (range?.signal?.aborted) throw cancelled(id)
    let file: ReadableFile
    try {
      file = await openForReading(fs, join(log.dir, LOG_FILE))
    } catch (err) {
      throw errno(err) === 'ENOENT' ? notFound(id) : storageError(err, id, 'read')
    }
    try {
      for await (const page of readRange(log, file.read, from, to, as, range?.signal)) yield page
    } catch (err) {
      throw storageError(err, id, 'read')
    } finally {
      await file.close()
    }
  }
}
