// Key-value records on files (StorageAdapter.kv and the store's rows over it): one file per key,
// exactly its value, written to a temp file and renamed into place (synced first for a 'whole'
// put, and its folder after for a 'durable' one), so a reader finds the old value or the new
// one; a key put often and durably is a file of two copies written over in place (slotted.ts). A session's records are in its folder's kv/, so deleting the session (its folder renamed
// to the trash at once) takes them with it; the store's own are in <root>/kv/. The store's rows
// (src/storage/records) stay where stores of 0.1 keep them: a session's checkpoint row in its
// checkpoint.json, its history rows in history/<at>.json, meta records in <root>/meta/<key>; its
// session index row is in its summary.json (formerly kv/_summary, read there while no new one is).
// The session index's keys are in <root>/index/ (index-files.ts), where a list reads its page.
import { compareIds } from '../../storage/types'
import type { SessionId } from '../../core/model'
import { assertKey, flat, getEach, notFoundForKey, resolveKeyRange, sessionOfKey, takeRange, unflat, writeEach } from '../../storage/kv'
import { CHECKPOINT_PART, HISTORY_PART, INDEX_PART, META_PART, positionOf, positionPart, SUMMARY_PART } from '../../storage/records/keys'
import type { KeyValueStore, PutDurability, RecordKey } from '../../storage/types'
import { replaceDurable, writeDurable } from './durable'
import { isSlotted, overwriteSlotted, slottedFile, slottedValue } from './slotted'
import { errno, namesIn } from './errors'
import { createIndexFiles, isIndexKey } from './index-files'
import { createListings } from './listings'
import {
  CHECKPOINT_FILE,
  HISTORY_DIR,
  metaDir,
  partsOfRecordName,
  recordName,
  recordsDir,
  scratchName,
  SUMMARY_FILE,
  sessionDir,
  sessionRecordsDir,
  tmpDir,
} from './layout'
import type { FsSettings } from './options'
import { join, randomHex } from './host'

const ROW_NAME = /^([1-9]\d{0,15})\.json$/
const META_NAME = /^[A-Za-z0-9_-]{1,128}$/
/** History folders whose listing is kept (sessions read as of a point lately). */
const MAX_LISTED = 256

export function createRecordFiles(
  { fs, root }: Pick<FsSettings, 'fs' | 'root'>,
  sessionExists: (id: SessionId) => Promise<boolean>,
  idsAfter: (after: SessionId | undefined) => Promise<SessionId[]>,
): KeyValueStore {
  const index = createIndexFiles({ fs, root })
  /** The folder and file name of a key: a session's key in its folder, without its first two parts. */
  const placeOf = (key: RecordKey): { dir: string; name: string; owner?: SessionId; row?: true; legacy?: string } => {
    const owner = sessionOfKey(key)
    if (owner === undefined) {
      return key.length === 2 && key[0] === META_PART ? { dir: metaDir(root), name: key[1]! } : { dir: recordsDir(root), name: recordName(key) }
    }
    if (key.length === 3 && key[2] === CHECKPOINT_PART) return { dir: sessionDir(root, owner), name: CHECKPOINT_FILE, owner, row: true }
    if (key.length === 3 && key[2] === SUMMARY_PART) {
      const legacy = join(sessionRecordsDir(root, owner), recordName([SUMMARY_PART]))
      return { dir: sessionDir(root, owner), name: SUMMARY_FILE, owner, row: true, legacy }
    }
    const at = key.length === 4 && key[2] === HISTORY_PART ? positionOf(key[3]) : undefined
    if (at !== undefined) return { dir: join(sessionDir(root, owner), HISTORY_DIR), name: `${at}.json`, owner, row: true }
    return { dir: sessionRecordsDir(root, owner), name: recordName(key.slice(2)), owner }
  }

  /**
   * History folders' listings, kept while they stand (listings.ts): a read of a long log's
   * history stats the folder rather than list its hundreds of rows (a put or delete here forgets it).
   */
  const listed = createListings(fs, MAX_LISTED)
  const historyNames = async (dir: string) => (await listed.get(dir)).names

  const names = (dir: string) => namesIn(fs, dir)

  /** Paths of legacy rows (kv/_summary of an earlier version) known gone, so a put or delete of their session's row looks there no more. */
  const noLegacy = new Set<string>()
  /**
   * A row's copy where an earlier version kept it (kv/_summary). Its kv/ folder stays, even
   * empty: a put of the session's records may be between its mkdir and its rename there.
   */
  async function removeLegacy(path: string): Promise<void> {
    if (noLegacy.has(path)) return
    try {
      await fs.unlink(path)
    } catch (err) {
      if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') throw err
    }
    knownGone(path)
  }
  function knownGone(path: string): void {
    if (noLegacy.size >= 4096) noLegacy.clear()
    noLegacy.add(path)
  }

  /** The keys stored in `dir`, `base` being the parts its names leave out (none of the index: its are in their own folder). */
  async function keysIn(dir: string, base: readonly string[]): Promise<string[]> {
    const keys: string[] = []
    for (const name of await names(dir)) {
      const parts = partsOfRecordName(name)
      if (parts && (base.length > 0 || !isIndexKey(parts))) keys.push(flat([...base, ...parts]))
    }
    return keys
  }

  /** Session `id`'s keys (those under `part`, its third, when given): its records, checkpoint and history rows. */
  async function sessionKeys(id: SessionId, part: string | undefined): Promise<string[]> {
    const keys = part === undefined || (part !== CHECKPOINT_PART && part !== HISTORY_PART) ? await keysIn(sessionRecordsDir(root, id), ['session', id]) : []
    if (part === undefined || part === CHECKPOINT_PART || part === SUMMARY_PART) {
      const here = await names(sessionDir(root, id))
      if (part !== SUMMARY_PART && here.includes(CHECKPOINT_FILE)) keys.push(flat(['session', id, CHECKPOINT_PART]))
      const summary = flat(['session', id, SUMMARY_PART])
      if (part !== CHECKPOINT_PART && here.includes(SUMMARY_FILE) && !keys.includes(summary)) keys.push(summary)
    }
    if (part === undefined || part === HISTORY_PART) {
      for (const name of await historyNames(join(sessionDir(root, id), HISTORY_DIR))) {
        const m = ROW_NAME.exec(name)
        if (m) keys.push(flat(['session', id, HISTORY_PART, positionPart(Number(m[1]))]))
      }
    }
    return keys
  }

  async function write(tmp: string, path: string, value: string | Buffer, durability: PutDurability): Promise<void> {
    if (durability === 'durable') return replaceDurable(fs, tmp, path, value)
    if (durability === 'whole') {
      await writeDurable(fs, tmp, value)
    } else {
      const fh = await fs.open(tmp, 'w')
      try {
        await fh.writeFile(value)
      } finally {
        await fh.close()
      }
    }
    await fs.rename(tmp, path)
  }

  const store: KeyValueStore = {
    async get(key) {
      assertKey(key)
      if (isIndexKey(key)) return index.get(key)
      const { dir, name, legacy } = placeOf(key)
      for (const path of legacy === undefined ? [join(dir, name)] : [join(dir, name), legacy]) {
        try {
          const file = await fs.readFile(path)
          return isSlotted(file) ? slottedValue(file) : file.toString('utf8')
        } catch (err) {
          if (errno(err) !== 'ENOENT') throw err
        }
      }
      if (legacy !== undefined) knownGone(legacy) // (a put of the row need not look for it again)
      return undefined
    },
    async put(key, value, options) {
      assertKey(key)
      if (isIndexKey(key)) return index.put(key, value, options?.durability ?? 'cache')
      const { dir, name, owner, row, legacy } = placeOf(key)
      const durability = options?.durability ?? 'cache'
      // Put often and durably: written over in place (slotted.ts) once its file is of two copies.
      const slotted = options?.often === true && durability === 'durable' && !row && legacy === undefined
      if (slotted && (await overwriteSlotted(fs, join(dir, name), value))) return
      if (owner !== undefined && !(await sessionExists(owner))) throw notFoundForKey(owner, key)
      // A row's temp file is named as the session's checkpoint in the making (layout.ts).
      const tmp = join(tmpDir(root), row ? scratchName(owner!, 'ckpt') : `rec.${randomHex(6)}`)
      try {
        // A session's folders are made inside its folder only while that folder is there (not recursively:
        // that would make a deleted session's folder again); a row in the folder itself needs none.
        if (owner === undefined || dir !== sessionDir(root, owner)) {
          await fs.mkdir(dir, { recursive: owner === undefined }).catch((err: unknown) => {
            if (errno(err) !== 'EEXIST') throw err
          })
        }
        await write(tmp, join(dir, name), slotted ? slottedFile(value) : value, durability)
        listed.forget(dir)
        if (legacy !== undefined) await removeLegacy(legacy)
      } catch (err) {
        await fs.rm(tmp, { force: true }).catch(() => {})
        throw owner !== undefined && errno(err) === 'ENOENT' ? notFoundForKey(owner, key) : err
      }
    },
    async delete(key) {
      assertKey(key)
      if (isIndexKey(key)) return index.remove(key)
      const { dir, name, legacy } = placeOf(key)
      listed.forget(dir)
      try {
        await fs.unlink(join(dir, name))
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err
      }
      if (legacy !== undefined) await removeLegacy(legacy)
    },
    async list(prefix, range) {
      const r = resolveKeyRange(prefix, range)
      if (prefix[0] === INDEX_PART) return (await index.list(r)).map(unflat)
      const owner = prefix.length >= 2 ? sessionOfKey([...prefix.slice(0, 2), 'x']) : undefined
      let keys: string[]
      if (owner !== undefined) {
        keys = await sessionKeys(owner, prefix[2])
      } else {
        // A prefix that names no one session: the store's records and meta, and every session's.
        keys = await keysIn(recordsDir(root), [])
        if (prefix.length === 0 || prefix[0] === META_PART) {
          for (const name of await names(metaDir(root))) if (META_NAME.test(name)) keys.push(flat([META_PART, name]))
        }
        if (prefix.length === 0 || prefix[0] === 'session') {
          for (const id of await idsAfter(undefined)) keys.push(...(await sessionKeys(id, undefined)))
        }
        if (prefix.length === 0) keys.push(...(await index.list(r)))
      }
      return takeRange(keys.sort(compareIds), r)
    },
    // A few at a time (kv.ts): a file's calls go through the thread pool, where the store's other work waits behind them.
    getMany: (keys) => getEach(store, keys),
    writeMany: (writes, options) => writeEach(store, writes, options),
  }
  return store
}
