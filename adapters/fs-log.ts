// The fs adapter's log record format, and scanning a log for whole records.
//
// A record is  crc32 u32 LE | length u32 LE | flags u8 | payload (UTF-8 JSON of one event),
// the crc covering length, flags and payload. A batch is its records written in one go, the
// last one flagged COMMIT: after a crash, records after the last COMMIT are an incomplete
// batch and are cut with the torn tail, which is what makes a batch all-or-nothing.
import { crc32 } from 'node:zlib'
import type { EncodedEvent } from '../src/validate'

export const RECORD_HEADER = 9
export const FLAG_COMMIT = 1
/** Events per entry of the sparse offset index (events.idx): entry k is the offset of seq 64k. */
export const INDEX_STRIDE = 64
/** Larger records than this are never written (events are limited well below it). */
export const MAX_RECORD = 64 * 1024 * 1024

/** Encodes a batch of events as records in one buffer, COMMIT on the last. */
export function encodeBatch(events: readonly EncodedEvent[]): { buf: Buffer; offsets: number[] } {
  let total = 0
  const lengths = events.map((e) => {
    const n = Buffer.byteLength(e.json)
    total += RECORD_HEADER + n
    return n
  })
  const buf = Buffer.allocUnsafe(total)
  const offsets: number[] = []
  let at = 0
  events.forEach((e, i) => {
    const n = lengths[i]!
    offsets.push(at)
    buf.writeUInt32LE(n, at + 4)
    buf[at + 8] = i === events.length - 1 ? FLAG_COMMIT : 0
    buf.write(e.json, at + RECORD_HEADER, n, 'utf8')
    buf.writeUInt32LE(crc32(buf.subarray(at + 4, at + RECORD_HEADER + n)), at)
    at += RECORD_HEADER + n
  })
  return { buf, offsets }
}

export type Frame =
  | { kind: 'ok'; flags: number; start: number; end: number } // payload is buf[start, end)
  | { kind: 'short'; need: number } // the buffer ends inside the record: read `need` bytes from `at`
  | { kind: 'bad' } // a checksum or length that cannot be right

/** Reads the record at `at` of `buf` without parsing its payload. */
export function frameAt(buf: Buffer, at: number, bufEnd = buf.length): Frame {
  if (bufEnd - at < RECORD_HEADER) return { kind: 'short', need: RECORD_HEADER }
  const len = buf.readUInt32LE(at + 4)
  const flags = buf[at + 8]!
  if (len > MAX_RECORD || (flags & ~FLAG_COMMIT) !== 0) return { kind: 'bad' }
  if (bufEnd - at < RECORD_HEADER + len) return { kind: 'short', need: RECORD_HEADER + len }
  if (crc32(buf.subarray(at + 4, at + RECORD_HEADER + len)) !== buf.readUInt32LE(at)) return { kind: 'bad' }
  return { kind: 'ok', flags, start: at + RECORD_HEADER, end: at + RECORD_HEADER + len }
}

/** Positioned reads of a file, as much as is there. */
export interface ReadAt {
  (buf: Buffer, position: number): Promise<number>
}

/** A buffered view of a file for walking records: buf[0] is file offset `pos`, bytes to `end`. */
export interface Window {
  buf: Buffer
  pos: number
  end: number
}

const CHUNK = 1 << 20

export function newWindow(size = CHUNK): Window {
  return { buf: Buffer.allocUnsafe(size), pos: 0, end: 0 }
}

/**
 * The record at file offset `at`, reading as needed but never past `limit`. Offsets of an
 * 'ok' frame are into `w.buf`. 'short' means the record runs past `limit`.
 */
export async function readFrame(read: ReadAt, w: Window, at: number, limit: number): Promise<Frame> {
  let frame = at >= w.pos ? frameAt(w.buf, at - w.pos, w.end) : ({ kind: 'short', need: RECORD_HEADER } as Frame)
  // Two reads at most: one for the header (and usually the record), one for a record larger than the buffer.
  for (let attempt = 0; attempt < 2 && frame.kind === 'short' && at + frame.need <= limit; attempt++) {
    if (frame.need > w.buf.length) w.buf = Buffer.allocUnsafe(Math.max(frame.need, CHUNK))
    w.pos = at
    w.end = await read(w.buf.subarray(0, Math.min(w.buf.length, limit - at)), at)
    frame = frameAt(w.buf, 0, w.end)
  }
  return frame
}

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
  const w = newWindow()
  let at = start
  let pending: number[] = [] // index entries of the batch in progress
  while (at < fileSize) {
    const frame = await readFrame(read, w, at, fileSize)
    if (frame.kind === 'short') break // runs past the end: torn
    if (frame.kind === 'bad') {
      if (await wholeRecordAfter(read, at + 1, fileSize)) result.damagedAt = at
      break
    }
    if (seq % INDEX_STRIDE === 0) pending.push(at)
    at = w.pos + frame.end
    seq++
    if (frame.flags & FLAG_COMMIT) {
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
  const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(0, fileSize - from)))
  for (let pos = from; pos + RECORD_HEADER <= fileSize; pos += buf.length - RECORD_HEADER) {
    const n = await read(buf, pos)
    for (let i = 0; i + RECORD_HEADER <= n; i++) {
      const len = buf.readUInt32LE(i + 4)
      if (len === 0 || len > MAX_RECORD || pos + i + RECORD_HEADER + len > fileSize) continue
      if (buf[i + 8]! > FLAG_COMMIT || buf[i + RECORD_HEADER] !== 0x7b /* { */) continue
      const rec = i + RECORD_HEADER + len <= n ? buf.subarray(i, i + RECORD_HEADER + len) : await readExact(read, pos + i, RECORD_HEADER + len)
      if (crc32(rec.subarray(4)) === rec.readUInt32LE(0)) return true
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
