// Scanning a log for its whole batches: where the last one ends, and whether what follows is
// a torn tail (a crash mid-write, cut before the next write) or damage (a bad record with
// whole ones after it, which no crash makes).
import { INDEX_STRIDE } from './offset-index'
import { FLAG_COMMIT, MAX_RECORD, RECORD_HEADER, WINDOW_BYTES, checksumHolds, newWindow, readRecord, type ReadAt } from './record-format'
import { Buffer } from './host'

export interface ScanResult {
  /** Offset just past the last COMMIT record: the end of the whole log. */
  end: number
  /** Events before `end`. */
  length: number
  /** Offsets of records with seq % INDEX_STRIDE === 0, from the scan's start. */
  indexed: number[]
  /** Offset where a bad record was met, with whole records after it (damage, not a torn tail). */
  damagedAt?: number
}

/**
 * Walks records from `start` (the offset of seq `seq`) to `fileSize`, checking each checksum,
 * and finds the end of the last whole batch. Bytes after it are a torn tail, unless a whole
 * record can be found after a bad one, in which case the log is damaged at that offset.
 */
export async function scanLog(read: ReadAt, start: number, seq: number, fileSize: number): Promise<ScanResult> {
  const result: ScanResult = { end: start, length: seq, indexed: [] }
  // A window no larger than what there is to read: a pass over many small logs allocated a
  // megabyte for each, and spent more time collecting them than reading.
  const w = newWindow(Math.min(WINDOW_BYTES, Math.max(RECORD_HEADER, fileSize - start)))
  let at = start
  let pending: number[] = [] // index entries of the batch in progress
  while (at < fileSize) {
    const record = await readRecord(read, w, at, fileSize)
    if (record.kind === 'short') break // runs past the end: torn
    if (record.kind === 'bad') {
      if (await wholeRecordAfter(read, at + 1, fileSize)) result.damagedAt = at
      break
    }
    if (seq % INDEX_STRIDE === 0) pending.push(at)
    at = w.pos + record.end
    seq++
    if (record.flags & FLAG_COMMIT) {
      result.end = at
      result.length = seq
      result.indexed.push(...pending)
      pending = []
    }
  }
  return result
}

/** True when some whole, checksummed record starts at or after `from`. */
async function wholeRecordAfter(read: ReadAt, from: number, fileSize: number): Promise<boolean> {
  const buf = Buffer.allocUnsafe(Math.min(WINDOW_BYTES, Math.max(0, fileSize - from)))
  for (let pos = from; pos + RECORD_HEADER <= fileSize; pos += buf.length - RECORD_HEADER) {
    const n = await read(buf, pos)
    for (let i = 0; i + RECORD_HEADER <= n; i++) {
      const len = buf.readUInt32LE(i + 4)
      if (len === 0 || len > MAX_RECORD || pos + i + RECORD_HEADER + len > fileSize) continue
      if (buf[i + 8]! > FLAG_COMMIT || buf[i + RECORD_HEADER] !== 0x7b /* { */) continue
      const rec = i + RECORD_HEADER + len <= n ? buf.subarray(i, i + RECORD_HEADER + len) : await readExact(read, pos + i, RECORD_HEADER + len)
      if (checksumHolds(rec)) return true
    }
    if (pos + n >= fileSize || n < buf.length) break
  }
  return false
}

async function readExact(read: ReadAt, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length)
  const n = await read(buf, position)
  return buf.subarray(0, n)
}
