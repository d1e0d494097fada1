// The session index's records on files (layout.ts, <root>/index/): its state, its entries in
// folders by their time part, and any other key of it in a folder of its own. A list of a sorted
// list walks the folders in order from its cursor, reading the folders on the way to it and then
// as many as its page fills, never the list whole; so a page costs the same with 500 entries or
// 400,000. Processes write the same folders at once: a delete removes the folders it empties
// (quietly when another process did, or wrote in one meanwhile) and a put makes them again.
import { randomBytes } from 'node:crypto'
import { dirname, join, relative, sep } from 'node:path'
import { flat, SEPARATOR } from '../../storage/kv'
import { INDEX_LISTS, INDEX_PART } from '../../storage/records/keys'
import type { PutDurability, RecordKey } from '../../storage/types'
import { syncDir, writeDurable } from './durable'
import { errno, namesIn } from './errors'
import { INDEX_LEVELS, INDEX_OTHER_DIR, INDEX_STATE_FILE, partsOfRecordName, recordName, sessionIndexDir, tmpDir } from './layout'
import type { FsSettings } from './options'

/** A list's range, as resolveKeyRange gives it. */
type Range = { prefix: string; after: string | undefined; limit: number }

/** Where a key of the index is: its folder and file name, and for an entry its list's folder. */
export interface IndexPlace {
  dir: string
  name: string
  /** An entry's list folder: the delete of an entry removes the folders it empties up to this one. */
  list?: string
}

const TIME = /^[0-9a-f]{12}$/
/** The lists, in the order of their keys. */
const LISTS: readonly string[] = [...INDEX_LISTS].sort()
/** A mkdir and rename that meet a folder removed meanwhile by another process's delete are tried again, up to this many times. */
const ATTEMPTS = 50

/** Whether `key` is the session index's (stored under <root>/index/): `_index` and at least one part more. */
export const isIndexKey = (key: RecordKey): boolean => key.length >= 2 && key[0] === INDEX_PART

/** The time part's digits that name the folders of an entry, level by level. */
function timeFolders(time: string): string[] {
  const out: string[] = []
  let at = 0
  for (const n of INDEX_LEVELS) {
    out.push(time.slice(at, at + n))
    at += n
  }
  return out
}
const FOLDER_DIGITS = INDEX_LEVELS.reduce((a, b) => a + b, 0)
const FOLDER_NAMES = INDEX_LEVELS.map((n) => new RegExp(`^[0-9a-f]{${n}}$`))

/**
 * Whether a folder whose keys all start with `base` (and are longer) may hold keys of range `r`:
 * false when none of its keys has the prefix, or each is at or before the cursor.
 */
function mayHold(base: string, r: Range): boolean {
  if (!base.startsWith(r.prefix) && !r.prefix.startsWith(base)) return false
  return r.after === undefined || r.after < base || r.after.startsWith(base)
}

export function createIndexFiles({ fs, root }: Pick<FsSettings, 'fs' | 'root'>) {
  const top = sessionIndexDir(root)
  const other = join(top, INDEX_OTHER_DIR)

  const names = (dir: string) => namesIn(fs, dir)

  function placeOf(key: RecordKey): IndexPlace {
    if (key.length === 2 && key[1] === INDEX_STATE_FILE) return { dir: top, name: INDEX_STATE_FILE }
    const [, list = '', time = '', id = ''] = key
    if (key.length === 4 && LISTS.includes(list) && TIME.test(time)) {
      const listDir = join(top, list)
      return { dir: join(listDir, ...timeFolders(time)), name: recordName([time.slice(FOLDER_DIGITS), id]), list: listDir }
    }
    return { dir: other, name: recordName(key.slice(1)) }
  }

  /** Syncs the folders from the store's root down to `dir`: each one's entry in its parent, made by this put or another's. */
  async function syncFolders(dir: string): Promise<void> {
    const down = relative(root, dir).split(sep)
    for (let i = 0; i <= down.length; i++) {
      await syncDir(fs, join(root, ...down.slice(0, i))).catch((err: unknown) => {
        if (errno(err) !== 'ENOENT') throw err // removed meanwhile: emptied by a delete, so nothing of this put is in it
      })
    }
  }

  async function put(key: RecordKey, value: string, durability: PutDurability): Promise<void> {
    const { dir, name } = placeOf(key)
    const tmp = join(tmpDir(root), `rec.${randomBytes(6).toString('hex')}`)
    try {
      if (durability === 'cache') {
        const fh = await fs.open(tmp, 'w')
        try {
          await fh.writeFile(value)
        } finally {
          await fh.close()
        }
      } else {
        await writeDurable(fs, tmp, value)
      }
      // Another process's delete may remove a folder between the mkdir and the rename, or
      // during the mkdir (which then says ENOENT, or ENOTDIR when one it met is gone): again.
      for (let attempt = 1; ; attempt++) {
        try {
          await fs.mkdir(dir, { recursive: true })
          await fs.rename(tmp, join(dir, name))
          break
        } catch (err) {
          if ((errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') || attempt >= ATTEMPTS) throw err
        }
      }
    } catch (err) {
      await fs.rm(tmp, { force: true }).catch(() => {})
      throw err
    }
    if (durability === 'durable') await syncFolders(dir)
  }

  async function remove(key: RecordKey): Promise<void> {
    const { dir, name, list } = placeOf(key)
    try {
      await fs.unlink(join(dir, name))
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err
    }
    if (list === undefined || !fs.rmdir) return
    // The folders this delete left empty, from the entry's up to its list's. A folder that is not
    // empty (another entry, or a put meanwhile) ends it; one already gone is passed over.
    for (let at = dir; ; at = dirname(at)) {
      try {
        await fs.rmdir(at)
      } catch (err) {
        if (errno(err) !== 'ENOENT') return
      }
      if (at === list) return
    }
  }

  /** The entries of range `r` in folder `dir` (its keys start with `base`), level `level`, appended to `out` until it is `r.limit` long. */
  async function walk(dir: string, base: string, level: number, r: Range, out: string[]): Promise<void> {
    if (level === INDEX_LEVELS.length) {
      const keys: string[] = []
      for (const name of await names(dir)) {
        const parts = partsOfRecordName(name)
        if (parts?.length !== 2 || !/^[0-9a-f]$/.test(parts[0]!)) continue
        const k = `${base}${parts[0]}${SEPARATOR}${parts[1]}`
        if (k.startsWith(r.prefix) && (r.after === undefined || k > r.after)) keys.push(k)
      }
      keys.sort()
      for (const k of keys) {
        if (out.length >= r.limit) return
        out.push(k)
      }
      return
    }
    const pattern = FOLDER_NAMES[level]!
    for (const name of (await names(dir)).filter((n) => pattern.test(n)).sort()) {
      if (out.length >= r.limit) return
      if (mayHold(base + name, r)) await walk(join(dir, name), base + name, level + 1, r, out)
    }
  }

  /** The index's keys in range `r` (whose prefix is the index's or shorter), flat, in order, at most `r.limit`. */
  async function list(r: Range): Promise<string[]> {
    const here = await names(top)
    const entries: string[] = []
    for (const l of LISTS) {
      const base = `${INDEX_PART}${SEPARATOR}${l}${SEPARATOR}`
      if (entries.length < r.limit && here.includes(l) && mayHold(base, r)) await walk(join(top, l), base, 0, r, entries)
    }
    const rest: string[] = []
    if (here.includes(INDEX_STATE_FILE)) rest.push(flat([INDEX_PART, INDEX_STATE_FILE]))
    if (here.includes(INDEX_OTHER_DIR)) {
      for (const name of await names(other)) {
        const parts = partsOfRecordName(name)
        if (parts) rest.push(flat([INDEX_PART, ...parts]))
      }
    }
    const more = rest.filter((k) => k.startsWith(r.prefix) && (r.after === undefined || k > r.after))
    return more.length === 0 ? entries : [...entries, ...more].sort().slice(0, r.limit)
  }

  return { placeOf, put, remove, list }
}
