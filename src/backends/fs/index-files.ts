// The session index's records on files (layout.ts, <root>/index/): its state, its entries in
// folders by their time part, and any other key of it in a folder of its own. An entry goes in
// its list's folder while that holds fewer than FOLDER_CAP entries, else one level down (a
// folder named by the next digits of its time part), and so on; the last level takes any. So a
// store of sessions written days apart keeps its entries in four folders (an empty file costs no
// block, a folder one), and a store written in a burst grows folders where it is dense. A list
// of a sorted list walks the folders in order from its cursor, merging each folder's entries with
// its subfolders', reading the folders on the way to it and then as many as its page fills, never
// the list whole; so a page costs the same with 500 entries or 400,000. A folder's names, once
// read, are kept while its inode and mtime stand, so a page read again costs a stat a folder.
// Processes write the same folders at once: a delete removes the folders it empties (quietly when
// another process did, or wrote in one meanwhile) and a put makes them again; two puts of one
// entry at once may leave it at two levels, which a list shows once and a delete removes one at a
// time.
import { flat, SEPARATOR } from '../../storage/kv'
import { INDEX_LISTS, INDEX_PART, TIME_DIGITS } from '../../storage/records/keys'
import type { PutDurability, RecordKey } from '../../storage/types'
import { syncDir, writeDurable } from './durable'
import { errno, namesIn } from './errors'
import { createListings, type Listing as FolderListing } from './listings'
import { INDEX_LEVELS, INDEX_OTHER_DIR, INDEX_STATE_FILE, partsOfRecordName, recordName, sessionIndexDir, tmpDir } from './layout'
import type { FsSettings } from './options'
import { dirname, join, randomHex, relative, sep } from './host'

/** A list's range, as resolveKeyRange gives it. */
type Range = { prefix: string; after: string | undefined; limit: number }

/** Where a key of the index is: its folder and file name, and for an entry its list's folder. */
export interface IndexPlace {
  dir: string
  name: string
  /** An entry's list folder: the delete of an entry removes the folders it empties up to this one. */
  list?: string
}

/** A folder's listing (listings.ts), and what an entry folder's names say (entryFolder). */
interface Listing extends FolderListing {
  folder?: EntryFolder
}
/** An entry folder's entries (by time part, its name's digits of it) and subfolders, sorted. */
interface EntryFolder {
  entries: { t: string; name: string }[]
  subs: string[]
}

const TIME = /^[0-9a-f]{12}$/
/** The lists, in the order of their keys. */
const LISTS: readonly string[] = [...INDEX_LISTS].sort()
/** A mkdir and rename that meet a folder removed meanwhile by another process's delete are tried again, up to this many times. */
const ATTEMPTS = 50
/** Entries a folder takes before new ones go a level down (the last level takes any): about as many as a page reads. */
export const FOLDER_CAP = 256
/**
 * How long a put takes a folder's names as it read them, with this process's puts and deletes
 * since (a full one stays full that long: entries leave the activity lists as sessions move up),
 * and how many folders it keeps so. Another process's puts meanwhile may take a folder past
 * FOLDER_CAP by what they add in that time: the cap only spreads entries, any level takes any.
 */
const SEEN_MS = 5000
const MAX_SEEN = 1024
/** Folders whose names are kept while they stand (listings.ts). */
const MAX_LISTINGS = 256

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
/** Per level (0: the list's folder), the digits of the time part its entries' names hold. */
const NAME_DIGITS = [0, ...INDEX_LEVELS].map((_, level) => TIME_DIGITS - INDEX_LEVELS.slice(0, level).reduce((a, b) => a + b, 0))
const NAME_TIMES = NAME_DIGITS.map((n) => new RegExp(`^[0-9a-f]{${n}}$`))
const FOLDER_NAMES = INDEX_LEVELS.map((n) => new RegExp(`^[0-9a-f]{${n}}$`))

/**
 * Whether a folder whose keys all start with `base` (and are longer) may hold keys of range `r`:
 * false when none of its keys has the prefix, or each is at or before the cursor.
 */
function mayHold(base: string, r: Range): boolean {
  if (!base.startsWith(r.prefix) && !r.prefix.startsWith(base)) return false
  return r.after === undefined || r.after < base || r.after.startsWith(base)
}

/** Two sorted lists as one, each key once. */
function mergeUnique(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0, j = 0; i < a.length || j < b.length; ) {
    const k = j >= b.length || (i < a.length && a[i]! <= b[j]!) ? a[i++]! : b[j++]!
    if (out[out.length - 1] !== k) out.push(k)
  }
  return out
}

export function createIndexFiles({ fs, root }: Pick<FsSettings, 'fs' | 'root'>) {
  const top = sessionIndexDir(root)
  const other = join(top, INDEX_OTHER_DIR)

  /** Folders as last read, kept while they stand. */
  const listings = createListings<Listing>(fs, MAX_LISTINGS)
  const listing = (dir: string) => listings.get(dir)
  const names = async (dir: string) => (await listing(dir)).names

  /** An entry folder at `level`: its entries by time part and its subfolders, each sorted (kept with its listing). */
  async function entryFolder(dir: string, level: number): Promise<EntryFolder> {
    const l = await listing(dir)
    if (l.folder) return l.folder
    const digits = NAME_DIGITS[level]!
    const folder: EntryFolder = { entries: [], subs: [] }
    for (const name of l.names) {
      if (FOLDER_NAMES[level]?.test(name)) folder.subs.push(name)
      else {
        const t = name.slice(0, digits)
        if (name.length > digits + 1 && name[digits] === '+' && NAME_TIMES[level]!.test(t)) folder.entries.push({ t, name })
      }
    }
    folder.entries.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : 0))
    folder.subs.sort()
    l.folder = folder
    return folder
  }

  /** Where `key` may be: an entry at each level, shallowest first; any other key in one place. */
  function placesOf(key: RecordKey): IndexPlace[] {
    if (key.length === 2 && key[1] === INDEX_STATE_FILE) return [{ dir: top, name: INDEX_STATE_FILE }]
    const [, list = '', time = '', id = ''] = key
    if (key.length === 4 && LISTS.includes(list) && TIME.test(time)) {
      const listDir = join(top, list)
      const folders = timeFolders(time)
      return NAME_DIGITS.map((digits, level) => ({
        dir: join(listDir, ...folders.slice(0, level)),
        name: recordName([time.slice(TIME_DIGITS - digits), id]),
        list: listDir,
      }))
    }
    return [{ dir: other, name: recordName(key.slice(1)) }]
  }

  /** Folders as puts read them lately (see SEEN_MS): their names, and how many are entries. */
  const seen = new Map<string, { at: number; names: Set<string>; entries: number }>()
  /** Folders being read for a put (puts at once share the read). */
  const reading = new Map<string, Promise<{ at: number; names: Set<string>; entries: number }>>()
  async function folderNow(dir: string, level: number) {
    const had = seen.get(dir)
    if (had && Date.now() - had.at < SEEN_MS) return had
    let read = reading.get(dir)
    if (!read) {
      read = namesIn(fs, dir).then((names) => {
        const folder = { at: Date.now(), names: new Set(names), entries: names.filter((n) => !FOLDER_NAMES[level]?.test(n)).length }
        seen.delete(dir)
        if (seen.size >= MAX_SEEN) seen.delete(seen.keys().next().value!)
        seen.set(dir, folder)
        return folder
      })
      reading.set(dir, read)
      read.then(
        () => reading.delete(dir),
        () => reading.delete(dir),
      )
    }
    return read
  }

  /** Where a put of `key` goes: the first of its places that has it or has room (the last one else). */
  async function placeFor(key: RecordKey): Promise<IndexPlace> {
    const places = placesOf(key)
    for (let level = 0; level < places.length - 1; level++) {
      const { dir, name } = places[level]!
      const here = await folderNow(dir, level)
      if (here.names.has(name)) return places[level]!
      if (here.entries < FOLDER_CAP) {
        here.names.add(name)
        here.entries++
        return places[level]!
      }
    }
    return places[places.length - 1]!
  }

  /** The value of `key`, wherever it is (undefined: none). */
  async function get(key: RecordKey): Promise<string | undefined> {
    for (const { dir, name } of placesOf(key)) {
      try {
        return await fs.readFile(join(dir, name), 'utf8')
      } catch (err) {
        if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') throw err
      }
    }
    return undefined
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

  /** Makes the empty file `name` in `dir` (an entry: empty, so whole once made), and its folders where missing. */
  async function putEmpty(dir: string, name: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await (await fs.open(join(dir, name), 'w')).close()
        return
      } catch (err) {
        if ((errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') || attempt >= ATTEMPTS) throw err
      }
      await fs.mkdir(dir, { recursive: true }).catch((err: unknown) => {
        if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') throw err // a folder on the way removed meanwhile: again
      })
    }
  }

  async function put(key: RecordKey, value: string, durability: PutDurability): Promise<void> {
    const { dir, name } = await placeFor(key)
    if (value === '' && durability === 'cache') return putEmpty(dir, name)
    const tmp = join(tmpDir(root), `rec.${randomHex(6)}`)
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

  /** Deletes `key` where it is first found, shallowest first (a copy left at another level goes at its next delete). */
  async function remove(key: RecordKey): Promise<void> {
    for (const place of placesOf(key)) {
      try {
        await fs.unlink(join(place.dir, place.name))
      } catch (err) {
        if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') continue
        throw err
      }
      const here = seen.get(place.dir)
      if (here?.names.delete(place.name)) here.entries--
      return removeEmptied(place)
    }
  }

  /** After a delete in `dir`: the folders it left empty, from `dir` up to its list's. */
  async function removeEmptied({ dir, list }: IndexPlace): Promise<void> {
    if (list === undefined || !fs.rmdir) return
    // The folders this delete left empty, from the entry's up to its list's. A folder that is not
    // empty (another entry, or a put meanwhile) ends it; one already gone is passed over.
    for (let at = dir; ; at = dirname(at)) {
      try {
        await fs.rmdir(at)
      } catch (err) {
        if (errno(err) !== 'ENOENT') return
      }
      seen.delete(at)
      if (at === list) return
    }
  }

  /**
   * The first `limit` keys of range `r` in folder `dir` (its keys start with `base`), level
   * `level`, in order and each once: its own entries merged with its subfolders'.
   */
  async function walk(dir: string, base: string, level: number, r: Range, limit: number): Promise<string[]> {
    const here = await entryFolder(dir, level)
    // This folder's entries in range, by their time part: only the first `limit` of them (and
    // those of the same time as the last) can be on the page, so only they are decoded.
    const own: string[] = []
    let lastTime: string | undefined
    for (const { t, name } of here.entries) {
      if (own.length >= limit && t !== lastTime) break
      const head = `${base}${t}${SEPARATOR}`
      if (!(head.startsWith(r.prefix) || r.prefix.startsWith(head))) continue
      if (r.after !== undefined && head < r.after.slice(0, head.length)) continue // before the cursor, whatever its id
      const parts = partsOfRecordName(name)
      if (parts?.length !== 2) continue
      const k = `${base}${t}${SEPARATOR}${parts[1]}`
      if (k.startsWith(r.prefix) && (r.after === undefined || k > r.after)) {
        own.push(k)
        lastTime = t
      }
    }
    own.sort()
    const out: string[] = []
    const add = (k: string) => {
      if (out[out.length - 1] !== k) out.push(k)
    }
    let i = 0
    for (const name of here.subs) {
      if (out.length >= limit) return out
      const sub = base + name
      // This folder's keys before the subfolder's (every key with its prefix sorts after them).
      while (i < own.length && own[i]! < sub && out.length < limit) add(own[i++]!)
      if (out.length >= limit) return out
      const mine: string[] = []
      while (i < own.length && own[i]!.startsWith(sub)) mine.push(own[i++]!)
      if (!mayHold(sub, r)) {
        for (const k of mine) add(k)
        continue
      }
      // The subfolder's first keys merged with this folder's in its range, up to the last key read
      // of it when it may hold more (a key of this folder after that one may not come next).
      for (let want = limit - out.length; ; ) {
        const inner = await walk(join(dir, name), sub, level + 1, r, want)
        const complete = inner.length < want
        const merged = mergeUnique(inner, complete ? mine : mine.filter((k) => k <= inner[inner.length - 1]!))
        if (complete || merged.length >= limit - out.length) {
          for (const k of merged.slice(0, limit - out.length)) add(k)
          break
        }
        want += limit - out.length - merged.length // copies at two levels fell out: read as many more
      }
    }
    while (i < own.length && out.length < limit) add(own[i++]!)
    return out
  }

  /** The index's keys in range `r` (whose prefix is the index's or shorter), flat, in order, at most `r.limit`. */
  async function list(r: Range): Promise<string[]> {
    const here = await names(top)
    const entries: string[] = []
    for (const l of LISTS) {
      const base = `${INDEX_PART}${SEPARATOR}${l}${SEPARATOR}`
      if (entries.length < r.limit && here.includes(l) && mayHold(base, r)) entries.push(...(await walk(join(top, l), base, 0, r, r.limit - entries.length)))
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

  return { get, put, remove, list }
}
