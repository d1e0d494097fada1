// A record put again and again durably (PutOptions.often: a Durable Stream's record, once an
// append) is kept in a file of two copies, written over in place: the new value goes into the
// copy not holding the current one, with a higher generation and a checksum, and one
// fdatasync makes it durable. Replacing the file instead takes a temp file synced, a rename and
// the folder synced: two syncs and ten calls against one and five.
//
//   "\0SF2" | slot size u32 LE | slot 0 | slot 1      slot: gen u32 | length u32 | crc u32 | value (UTF-8)
//
// A reader takes the whole copy of the higher generation: a copy torn by a crash mid-write
// fails its checksum, and the other (the value before that put) is read. Files of one value
// (every other record, and these before their first such put) are read as they are.
import type { FsPromises } from './options'
import { Buffer, crc32 } from './host'

const MAGIC = Buffer.from('\0SF2', 'latin1')
const HEAD = 8
const SLOT_HEAD = 12
const MIN_SLOT = 4096
const LAST_GEN = 0xffff_ffff

/** Whether a record file's bytes are of two copies. */
export const isSlotted = (file: Buffer): boolean => file.length >= HEAD && file.subarray(0, 4).equals(MAGIC)

/** The value of a file of two copies: the whole one of the higher generation. Throws when neither is whole. */
export function slottedValue(file: Buffer): string {
  const current = currentSlot(file)
  if (!current) throw new Error('a record file of two copies with no whole copy')
  return file.toString('utf8', current.start, current.end)
}

/** A new file of two copies holding `value` (generation 1 in the first, the second empty). */
export function slottedFile(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8')
  let size = MIN_SLOT
  while (size < 2 * (SLOT_HEAD + bytes.length)) size *= 2 // room for the value to grow
  const file = Buffer.alloc(HEAD + 2 * size)
  MAGIC.copy(file, 0)
  file.writeUInt32LE(size, 4)
  slot(bytes, 1).copy(file, HEAD)
  return file
}

/**
 * Writes `value` over the file at `path` in place, as its next generation, and syncs it: false
 * (nothing written) when there is no such file, it is not of two copies, or `value` outgrew its
 * copies; the caller then replaces the file with a new one. With the fs's synchronous calls
 * (options.ts) only the fdatasync leaves the thread.
 */
export async function overwriteSlotted(fs: FsPromises, path: string, value: string): Promise<boolean> {
  const { openSync, fstatSync, readSync, closeSync, fdatasync } = fs
  if (!openSync || !fstatSync || !readSync || !closeSync || !fdatasync) return overwriteThroughHandle(fs, path, value)
  let fd: number
  try {
    fd = openSync(path, 'r+')
  } catch {
    return false
  }
  try {
    const { size } = fstatSync(fd)
    if (!sizeFits(size)) return false
    const file = Buffer.alloc(size)
    if (readSync(fd, file, 0, size, 0) !== size) return false
    const next = nextCopy(file, value)
    if (!next) return false
    for (let done = 0; done < next.bytes.length; ) done += fs.writeSync(fd, next.bytes, done, next.bytes.length - done, next.at + done)
    await new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())))
    return true
  } finally {
    closeSync(fd)
  }
}

/** overwriteSlotted through `open`'s file handle (an fs without the synchronous calls). */
async function overwriteThroughHandle(fs: FsPromises, path: string, value: string): Promise<boolean> {
  let fh: Awaited<ReturnType<FsPromises['open']>>
  try {
    fh = await fs.open(path, 'r+')
  } catch {
    return false
  }
  try {
    const { size } = await fh.stat()
    if (!sizeFits(size)) return false
    const file = Buffer.alloc(size)
    const { bytesRead } = await fh.read(file, 0, size, 0)
    if (bytesRead !== size) return false
    const next = nextCopy(file, value)
    if (!next) return false
    const { bytesWritten } = await fh.write(next.bytes, 0, next.bytes.length, next.at)
    if (bytesWritten !== next.bytes.length) throw new Error(`a record copy written short (${bytesWritten} of ${next.bytes.length} bytes)`)
    await fh.datasync()
    return true
  } finally {
    await fh.close()
  }
}

const sizeFits = (size: number): boolean => size >= HEAD && size <= HEAD + 2 * 64 * 1024 * 1024

/** The copy that puts `value` over `file`'s current one, and where it goes; undefined when it cannot. */
function nextCopy(file: Buffer, value: string): { bytes: Buffer; at: number } | undefined {
  if (!isSlotted(file)) return undefined
  const current = currentSlot(file)
  const bytes = Buffer.from(value, 'utf8')
  const slotSize = file.readUInt32LE(4)
  if (!current || current.gen === LAST_GEN || SLOT_HEAD + bytes.length > slotSize) return undefined
  return { bytes: slot(bytes, current.gen + 1), at: HEAD + (1 - current.index) * slotSize }
}

/** A copy's bytes: its header and `bytes`. */
function slot(bytes: Buffer, gen: number): Buffer {
  const out = Buffer.alloc(SLOT_HEAD + bytes.length)
  out.writeUInt32LE(gen, 0)
  out.writeUInt32LE(bytes.length, 4)
  bytes.copy(out, SLOT_HEAD)
  out.writeUInt32LE(crcOf(out), 8)
  return out
}

const crcOf = (s: Buffer): number => crc32(s.subarray(SLOT_HEAD), crc32(s.subarray(0, 8)))

/** The whole copy of the higher generation: which, its generation, and where its value lies. */
function currentSlot(file: Buffer): { index: number; gen: number; start: number; end: number } | undefined {
  const size = file.readUInt32LE(4)
  if (size < MIN_SLOT || file.length !== HEAD + 2 * size) return undefined
  let best: { index: number; gen: number; start: number; end: number } | undefined
  for (const index of [0, 1]) {
    const at = HEAD + index * size
    const gen = file.readUInt32LE(at)
    const length = file.readUInt32LE(at + 4)
    if (gen === 0 || SLOT_HEAD + length > size) continue
    const s = file.subarray(at, at + SLOT_HEAD + length)
    if (crcOf(s) !== file.readUInt32LE(at + 8)) continue
    if (!best || gen > best.gen) best = { index, gen, start: at + SLOT_HEAD, end: at + SLOT_HEAD + length }
  }
  return best
}
