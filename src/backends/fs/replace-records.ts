// replaceRecords on files. The log is copied into a temp file with the replaced records written
// in (each as long as the one it replaces, so every offset, the offset index and the log's
// length stay as they are), synced, and renamed over events.log; a new header likewise, first.
// A crash leaves each file whole, old or new. A reader that opened the old file reads it to its
// end; the next one, in any process, finds a new file (another inode) and loads it afresh.
import type { FileHandle } from 'node:fs/promises'
import type { SessionEvent } from '../../core/model'
import { checkReplacement, sameLength } from '../../storage/guard'
import type { EncodedEvent } from '../../core/validate'
import type { RecordReplacement } from '../../storage/types'
import { syncDir, writeDurable } from './durable'
import { corrupt } from './errors'
import { HEADER_FILE, LOG_FILE, scratchName, tmpDir } from './layout'
import type { Log } from './log'
import type { FsSettings } from './options'
import { RECORD_HEADER, encodeRecord, newWindow, readRecord, readerOf } from './record-format'
import { Buffer, join } from './host'

/** Bytes gathered before a write to the temp file. */
const WRITE_BYTES = 1 << 20

/** Copies the whole batches of `log` from `src` to `out`, with `records` in place of theirs. */
async function copyReplacing(log: Log, src: FileHandle, out: FileHandle, records: Map<number, EncodedEvent>): Promise<void> {
  const w = newWindow()
  const read = readerOf(src)
  let chunks: Buffer[] = []
  let gathered = 0
  let at = 0
  let seq = 0
  for (; at < log.size; seq++) {
    const record = await readRecord(read, w, at, log.size)
    if (record.kind !== 'ok') throw corrupt(log, at, 'a record with a bad checksum or length', seq)
    const stored = record.end - record.start
    const r = records.get(seq)
    let bytes: Buffer
    if (r) {
      sameLength(log.id, seq, stored, r.json)
      let was: SessionEvent | undefined
      try {
        was = JSON.parse(w.buf.toString('utf8', record.start, record.end)) as SessionEvent
      } catch {
        // reported below
      }
      if (was?.seq !== seq) throw corrupt(log, at, `a record of seq ${String(was?.seq)} where ${seq} belongs`, seq)
      bytes = encodeRecord(r.json, record.flags)
    } else {
      bytes = Buffer.from(w.buf.subarray(record.start - RECORD_HEADER, record.end)) // the window is reused
    }
    chunks.push(bytes)
    gathered += bytes.length
    at += RECORD_HEADER + stored
    if (gathered >= WRITE_BYTES) {
      await out.write(Buffer.concat(chunks))
      chunks = []
      gathered = 0
    }
  }
  if (seq !== log.length) throw corrupt(log, at, `${seq} records where the log holds ${log.length}`, seq)
  if (gathered > 0) await out.write(Buffer.concat(chunks))
}

/**
 * Replaces records of `log` (and its header) on disk. The caller holds the session's writer
 * lock and forgets `log` afterwards (its writer handle is on the old file).
 */
export async function replaceInLog({ fs, root }: Pick<FsSettings, 'fs' | 'root'>, log: Log, replacement: RecordReplacement): Promise<void> {
  const header = checkReplacement(log.id, replacement, { header: log.header, length: log.length })
  const records = new Map(replacement.records.map((r) => [r.event.seq, r]))
  const tmpLog = join(tmpDir(root), scratchName(log.id, 'log'))
  const tmpHeader = join(tmpDir(root), scratchName(log.id, 'hdr'))
  try {
    const src = await fs.open(join(log.dir, LOG_FILE), 'r')
    try {
      const out = await fs.open(tmpLog, 'w')
      try {
        await copyReplacing(log, src, out, records)
        await out.datasync()
      } finally {
        await out.close()
      }
    } finally {
      await src.close()
    }
    // The header first: a process that finds the new log (another inode) loads the new header with it.
    if (header) {
      await writeDurable(fs, tmpHeader, JSON.stringify(header))
      await fs.rename(tmpHeader, join(log.dir, HEADER_FILE))
    }
    await fs.rename(tmpLog, join(log.dir, LOG_FILE))
  } catch (err) {
    await Promise.all([fs.rm(tmpLog, { force: true }), fs.rm(tmpHeader, { force: true })]).catch(() => {})
    throw err
  }
  await syncDir(fs, log.dir)
}
