// The sparse offset index (INDEX_FILE): entry k is the offset (Float64 LE) of the record of
// seq k * INDEX_STRIDE. A log is opened by reading only the index and the records after its
// last entry, so opening costs O(tail), not O(log). The index is a hint, never synced and
// checked on use: a wrong or missing entry costs a longer scan, never a wrong read.
import type { SessionEvent } from '../../core/model'
import { errno } from './errors'
import { INDEX_FILE, scratchName, tmpDir } from './layout'
import type { Log } from './log'
import type { FsSettings } from './options'
import { newWindow, readRecord, type ReadAt } from './record-format'
import { Buffer, join } from './host'

/** Events per entry of the index: entry k is the offset of seq 64k. */
export const INDEX_STRIDE = 64
/** Index entries (of 64 events each) held back before writing them to the index file. */
const INDEX_BATCH = 8

type IndexedLog = Pick<Log, 'id' | 'dir' | 'index' | 'indexStored' | 'indexing'>

/** The index file's bytes for `entries`. */
export function encodeIndex(entries: readonly number[]): Buffer {
  const buf = Buffer.allocUnsafe(entries.length * 8)
  entries.forEach((o, i) => buf.writeDoubleLE(o, i * 8))
  return buf
}

/** The index of a log that is one batch from seq 0, its records at `offsets`. */
export const indexOfBatch = (offsets: readonly number[]): Buffer => encodeIndex(offsets.filter((_, i) => i % INDEX_STRIDE === 0))

/** True when a whole record of event `seq` starts at `offset`: how an entry is checked. */
export async function recordIs(read: ReadAt, offset: number, seq: number, fileSize: number): Promise<boolean> {
  if (!Number.isSafeInteger(offset) || offset < 0 || offset >= fileSize) return false
  const w = newWindow(4096)
  const record = await readRecord(read, w, offset, fileSize)
  if (record.kind !== 'ok') return false
  try {
    return (JSON.parse(w.buf.toString('utf8', record.start, record.end)) as SessionEvent).seq === seq
  } catch {
    return false
  }
}

export interface OffsetIndex {
  /** The entries stored in the index file of the session folder `dir`. */
  read(dir: string): Promise<number[]>
  /**
   * Takes the entries of a batch about to extend the log (records at `offsets` from
   * `log.size`, the first of seq `log.length`), and writes them out in the background every
   * INDEX_BATCH entries: the append does not wait for a write that costs three thread-pool
   * round trips (open, write, close).
   */
  addBatch(log: Pick<Log, 'length' | 'size'> & IndexedLog, offsets: readonly number[]): void
  /**
   * Appends unstored entries to the index file; also when a log is put away. A failure only
   * means a longer scan at the next open. Writes of one log run one after another, never at once.
   */
  store(log: IndexedLog): Promise<void>
  /** Replaces the index file with `log.index`; answers the entries now stored (0 on failure). */
  rewrite(log: IndexedLog): Promise<number>
}

export function createOffsetIndex({ fs, root, readOnly }: Pick<FsSettings, 'fs' | 'root' | 'readOnly'>): OffsetIndex {
  async function read(dir: string): Promise<number[]> {
    let buf: Buffer
    try {
      buf = await fs.readFile(join(dir, INDEX_FILE))
    } catch (err) {
      if (errno(err) === 'ENOENT') return []
      throw err
    }
    const out: number[] = []
    for (let at = 0; at + 8 <= buf.length; at += 8) out.push(buf.readDoubleLE(at))
    return out
  }

  function store(log: IndexedLog): Promise<void> {
    if (readOnly) return Promise.resolve()
    const p = (log.indexing ?? Promise.resolve()).then(() => writeEntries(log))
    log.indexing = p
    void p.then(() => {
      if (log.indexing === p) log.indexing = undefined
    })
    return p
  }

  async function writeEntries(log: IndexedLog): Promise<void> {
    const from = log.indexStored
    const to = log.index.length
    // An index of entry 0 alone tells nothing (a log starts at 0): none is written for it.
    if (to <= from || to <= 1) return
    const buf = encodeIndex(log.index.slice(from, to))
    try {
      const fh = await fs.open(join(log.dir, INDEX_FILE), 'a')
      let ours: boolean
      try {
        // The file holds what this log stored, unless another process appended to the log (its
        // entries were stored after ours, and this log read its records) or a write was cut:
        // then it is replaced whole rather than added to, which would store entries twice.
        ours = (await fh.stat()).size === from * 8
        if (ours) await fh.write(buf, 0, buf.length, null)
      } finally {
        await fh.close()
      }
      log.indexStored = ours ? to : await replace(log)
    } catch {
      // left as a hint for the next open to recompute
    }
  }

  /** Replaces the index file with `log.index`; answers the entries now stored (0 on failure). */
  async function replace(log: IndexedLog): Promise<number> {
    const buf = encodeIndex(log.index)
    const tmp = join(tmpDir(root), scratchName(log.id, 'idx'))
    try {
      await fs.open(tmp, 'w').then(async (fh) => {
        try {
          await fh.writeFile(buf)
        } finally {
          await fh.close()
        }
      })
      await fs.rename(tmp, join(log.dir, INDEX_FILE))
      return log.index.length
    } catch {
      await fs.rm(tmp, { force: true }).catch(() => {})
      return 0 // only a hint: the next open scans a little more
    }
  }

  return {
    read,
    store,
    addBatch(log, offsets) {
      for (let i = 0; i < offsets.length; i++) {
        if ((log.length + i) % INDEX_STRIDE === 0) log.index.push(log.size + offsets[i]!)
      }
      if (log.index.length - log.indexStored >= INDEX_BATCH && !log.indexing) void store(log)
    },
    async rewrite(log) {
      if (readOnly) return 0
      await log.indexing // an append's background write of entries goes first, then this replaces the file
      return replace(log)
    },
  }
}
