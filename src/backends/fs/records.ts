// Key-value records on files (StorageAdapter.kv): one file per key, exactly its value, written
// to a temp file and renamed into place (not synced: records are caches, see KeyValueStore), so
// a reader finds the old value or the new one. A session's records are in its folder's kv/, so
// deleting the session (its folder renamed to the trash at once) takes them with it; the store's
// own are in <root>/kv/.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { compareIds } from '../../storage/types'
import type { SessionId } from '../../core/model'
import { assertKey, assertValue, flat, notFoundForKey, resolveKeyRange, sessionOfKey, takeRange } from '../../storage/kv'
import type { KeyValueStore, RecordKey } from '../../storage/types'
import { errno } from './errors'
import { partsOfRecordName, recordName, recordsDir, sessionRecordsDir, tmpDir } from './layout'
import type { FsSettings } from './options'

export function createRecordFiles(
  { fs, root }: Pick<FsSettings, 'fs' | 'root'>,
  sessionExists: (id: SessionId) => Promise<boolean>,
  idsAfter: (after: SessionId | undefined) => Promise<SessionId[]>,
): KeyValueStore {
  /** The folder and file name of a key: a session's key in its folder, without its first two parts. */
  const placeOf = (key: RecordKey): { dir: string; name: string; owner?: SessionId } => {
    const owner = sessionOfKey(key)
    return owner === undefined
      ? { dir: recordsDir(root), name: recordName(key) }
      : { dir: sessionRecordsDir(root, owner), name: recordName(key.slice(2)), owner }
  }

  /** The keys stored in `dir`, `base` being the parts its names leave out. */
  async function keysIn(dir: string, base: readonly string[]): Promise<string[]> {
    let names: string[]
    try {
      names = await fs.readdir(dir)
    } catch (err) {
      if (errno(err) === 'ENOENT') return []
      throw err
    }
    const keys: string[] = []
    for (const name of names) {
      const parts = partsOfRecordName(name)
      if (parts) keys.push(flat([...base, ...parts]))
    }
    return keys
  }

  return {
    async get(key) {
      assertKey(key)
      const { dir, name } = placeOf(key)
      try {
        return await fs.readFile(join(dir, name), 'utf8')
      } catch (err) {
        if (errno(err) === 'ENOENT') return undefined
        throw err
      }
    },
    async put(key, value) {
      assertKey(key)
      assertValue(key, value)
      const { dir, name, owner } = placeOf(key)
      if (owner !== undefined && !(await sessionExists(owner))) throw notFoundForKey(owner, key)
      const tmp = join(tmpDir(root), `rec.${randomBytes(6).toString('hex')}`)
      try {
        // A session's kv/ is made inside its folder only while that folder is there (not recursively:
        // that would make a deleted session's folder again).
        await fs.mkdir(dir, { recursive: owner === undefined }).catch((err: unknown) => {
          if (errno(err) !== 'EEXIST') throw err
        })
        const fh = await fs.open(tmp, 'w')
        try {
          await fh.writeFile(value)
        } finally {
          await fh.close()
        }
        await fs.rename(tmp, join(dir, name))
      } catch (err) {
        await fs.rm(tmp, { force: true }).catch(() => {})
        throw owner !== undefined && errno(err) === 'ENOENT' ? notFoundForKey(owner, key) : err
      }
    },
    async delete(key) {
      assertKey(key)
      const { dir, name } = placeOf(key)
      try {
        await fs.unlink(join(dir, name))
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err
      }
    },
    async list(prefix, range) {
      const r = resolveKeyRange(prefix, range)
      const owner = prefix.length >= 2 ? sessionOfKey([...prefix.slice(0, 2), 'x']) : undefined
      let keys: string[]
      if (owner !== undefined) {
        keys = await keysIn(sessionRecordsDir(root, owner), ['session', owner])
      } else {
        // A prefix that names no one session: the store's records and every session's.
        keys = await keysIn(recordsDir(root), [])
        if (prefix.length === 0 || prefix[0] === 'session') {
          for (const id of await idsAfter(undefined)) keys.push(...await keysIn(sessionRecordsDir(root, id), ['session', id]))
        }
      }
      return takeRange(keys.sort(compareIds), r)
    },
  }
}
