// Storage: the session index's keys (['_index', 'state'] and entries ['_index', L, T, id],
// src/storage/records/keys.ts) on every backend's raw records (the KeyValueStore composeStorage
// receives): lists of them agree with the same list taken from a plain sorted array, whatever
// the prefix, cursor and limit, among app keys, the store's rows and other keys of the index.
// On fs, where they have a folder tree of their own (layout.ts), a first page costs the same
// few folder reads over 500 entries as over 5,000, a delete leaves no empty folder, and two
// stores writing the same folders at once never fail.
import 'fake-indexeddb/auto'
import { fdatasyncSync, writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { IDBFactory as FakeIDBFactory } from 'fake-indexeddb'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createFsAdapter, type FsPromises } from '../../src/backends/fs'
import { FOLDER_CAP } from '../../src/backends/fs/index-files'
import { folderOf, recordName } from '../../src/backends/fs/layout'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import { createMemoryAdapter } from '../../src/backends/memory'
import { createPostgresAdapter } from '../../src/backends/postgres'
import { recordsRangeSql } from '../../src/backends/postgres/records'
import { composeStorage, recordsOf } from '../../src/storage/records'
import { INDEX_LISTS, indexEntryKey, indexStateKey, type IndexList, summaryKey } from '../../src/storage/records/keys'
import type { KeyValueStore, RecordKey, StorageAdapter } from '../../src/storage/types'
import { rootHeader } from '../support/helpers'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'

/** A seeded generator of numbers in [0, 1) (mulberry32): every run puts the same keys. */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const flatOf = (key: RecordKey) => key.join('+')
/** An id as the fs backend names it in a file name. */
const recordNameOf = (id: string) => recordName([id])

/** The list a KeyValueStore must give, from a plain sorted array of flat keys. */
function expected(keys: Iterable<string>, prefix: RecordKey, after: RecordKey | undefined, limit: number): string[][] {
  const p = prefix.length === 0 ? '' : `${flatOf(prefix)}+`
  const a = after && flatOf(after)
  return [...keys]
    .filter((k) => k.startsWith(p) && (a === undefined || k > a))
    .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
    .slice(0, limit)
    .map((k) => k.split('+'))
}

const IDS = ['a', 'A', 'b', 'B0', 'ab', 'aB', 'Ab', 'x-y', 'x_y', '-', '_', '0', '9z', 'Zz', 'zZ', `L${'q'.repeat(120)}`]
const BASE = 1_760_000_000_000
/** Times in bursts (many within a few ms, as an import writes them) and a few far apart, the extremes among them. */
function times(rand: () => number): number[] {
  const out = [0, 2 ** 48 - 1, BASE - 86_400_000 * 400, BASE + 3_600_000]
  for (const start of [BASE, BASE + 1_000, BASE + 70_000, BASE + 5_000_000]) for (let i = 0; i < 24; i++) out.push(start + Math.floor(rand() * 40))
  return out
}

/** Keys of the index that are neither its state nor an entry, stored as they are. */
const T = '0123456789ab'
const OTHER_INDEX_KEYS: RecordKey[] = [
  ['_index', 'ar'],
  ['_index', 'ar', 'zz'],
  ['_index', 'ar', T],
  ['_index', 'ar', T, 'a', 'x'],
  ['_index', 'zz'],
  ['_index', 'state', 'x'],
  ['_index', 'AR', T, 'a'],
  ['_index', 'ar', 'ABCDEF012345', 'a'],
  ['_index', 'cx', 'fffffffffffff', 'a'],
]
/** Keys that are not the index's: an app's, one part '_index' alone, a meta row, a session's record and rows. */
const APP_KEYS: [RecordKey, string][] = [
  [['app', 'x'], 'v'],
  [['_index'], 'v'],
  [['_indexx', 'a'], 'v'],
  [['Z'], 'v'],
  [['_meta', 'cursor'], 'c'],
  [['session', 's1', 'chain', '000'], 'm'],
  [['session', 's1', '_checkpoint'], '{"witness":1}'],
]

interface Opened {
  kv: KeyValueStore
  adapter: StorageAdapter
  close(): Promise<void>
}

/** Puts a few hundred entries in the four lists, the state, the other keys and the app keys; deletes some; checks lists. */
async function exercise({ kv, adapter }: Opened): Promise<void> {
  const rand = random(7)
  const stored = new Map<string, RecordKey>()
  const put = async (key: RecordKey, value = '') => {
    await kv.put(key, value)
    stored.set(flatOf(key), key)
  }
  await adapter.createSession(rootHeader('s1'))
  for (const [key, value] of APP_KEYS) await put(key, value)
  await put(indexStateKey, '{"v":1}')
  for (const key of OTHER_INDEX_KEYS) await put(key, 'o')
  const entries: RecordKey[] = []
  for (const list of INDEX_LISTS) {
    for (const t of times(rand)) {
      const key = indexEntryKey(list, t, IDS[Math.floor(rand() * IDS.length)]!)
      entries.push(key)
      await put(key)
    }
  }
  await put(entries[0]!) // again: still one key
  expect(await kv.get(entries[1]!)).toBe('')
  expect(await kv.get(indexStateKey)).toBe('{"v":1}')
  expect(await kv.get(OTHER_INDEX_KEYS[6]!)).toBe('o')
  // Some deleted (every third entry, one other key), and one never there.
  for (const key of [...entries.filter((_, i) => i % 3 === 0), OTHER_INDEX_KEYS[2]!, indexEntryKey('ar', 5, 'none')]) {
    await kv.delete(key)
    stored.delete(flatOf(key))
  }
  expect(await kv.get(entries[0]!)).toBeUndefined()
  const keys = [...stored.keys()]
  expect(stored.size).toBeGreaterThan(200)

  const check = async (prefix: RecordKey, after: RecordKey | undefined, limit: number) => {
    const got = await kv.list(prefix, { limit, ...(after ? { after } : {}) })
    expect(got, `list ${flatOf(prefix)} after ${after && flatOf(after)} limit ${limit}`).toEqual(expected(keys, prefix, after, limit))
  }
  const prefixes: RecordKey[] = [
    [],
    ['_index'],
    ...INDEX_LISTS.map((l) => ['_index', l]),
    ['_index', 'ar', T],
    ['_index', 'a'],
    ['_index', 'state'],
    ['_indexx'],
  ]
  for (const prefix of prefixes) {
    const all = expected(keys, prefix, undefined, 10_000)
    // At keys, between them (deleted ones, one part longer), before and past them all.
    const afters: (RecordKey | undefined)[] = [undefined, ['0'], ['zzz'], ['_index', 'a'], ['_index', 'zz', 'z'], ['_index', 'ar', 'ffffffffffff', 'z']]
    for (const i of [0, 1, Math.floor(all.length / 2), all.length - 2, all.length - 1]) {
      const at = all[i]
      if (at) afters.push(at, at.length < 6 ? [...at, '0'] : undefined)
    }
    for (let i = 0; i < 12; i++) afters.push(entries[Math.floor(rand() * entries.length)]!)
    for (const after of afters) for (const limit of [1, 2, 3, 50, all.length, all.length + 1]) await check(prefix, after, Math.max(1, limit))
    // Every limit from the start, and pages of 7 through it all.
    if (prefix.length <= 2) for (let limit = 1; limit <= all.length + 1; limit++) await check(prefix, undefined, limit)
    const paged: string[][] = []
    for (let after: RecordKey | undefined; ; ) {
      const page = await kv.list(prefix, { limit: 7, ...(after ? { after } : {}) })
      paged.push(...page)
      if (page.length < 7) break
      after = page[page.length - 1]
    }
    expect(paged).toEqual(all)
  }
}

describe('the session index keys, listed on every backend as a sorted array lists them', () => {
  it('memory', async () => {
    const adapter = createMemoryAdapter()
    await exercise({ kv: recordsOf(adapter)!, adapter, close: () => adapter.close() })
    await adapter.close()
  })

  it('fs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-index-'))
    try {
      const adapter = createFsAdapter({ dir })
      await exercise({ kv: recordsOf(adapter)!, adapter, close: () => adapter.close() })
      await adapter.close()
      // And once more through a new adapter: nothing of it is in memory.
      const again = createFsAdapter({ dir })
      expect(await recordsOf(again)!.list(['_index', 'ar'], { limit: 3 })).toHaveLength(3)
      await again.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('IndexedDB (fake-indexeddb)', async () => {
    const adapter = createIndexedDbAdapter({ indexedDB: new FakeIDBFactory(), name: 'index-keys' })
    await exercise({ kv: recordsOf(adapter)!, adapter, close: () => adapter.close() })
    await adapter.close()
  })

  describe.skipIf(!postgresBin())('PostgreSQL', () => {
    let cluster: PgCluster
    let url: string
    beforeAll(async () => {
      cluster = await startCluster({ settings: { fsync: 'off' } })
      url = await cluster.createDatabase('index_keys')
    }, 120_000)
    afterAll(async () => {
      await cluster?.stop()
    })

    it('lists', async () => {
      const adapter = createPostgresAdapter({ url, schema: 'lists' })
      await exercise({ kv: recordsOf(adapter)!, adapter, close: () => adapter.close() })
      await adapter.close()
    }, 120_000)

    it("a list of the index's keys reads the records table's primary key index, from the range's start", async () => {
      const adapter = createPostgresAdapter({ url, schema: 'plan' })
      await adapter.listIds() // the schema made
      await adapter.close()
      // 40,000 entries in the four lists, as 10,000 sessions make them, and statistics of them.
      await cluster.psql(
        `INSERT INTO plan.records (key, value) SELECT '_index+' || l || '+' || lpad(to_hex(i), 12, '0') || '+s' || i, '' FROM generate_series(1, 10000) AS i, unnest(array['ar', 'ax', 'cr', 'cx']) AS l; ANALYZE plan.records`,
        'index_keys',
      )
      // Planned for these values, and as the driver's prepared statement is planned once reused.
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        const plan = await cluster.psql(
          `SET plan_cache_mode = ${mode}; PREPARE page(text, text, int) AS ${recordsRangeSql('"plan".records')}; EXPLAIN EXECUTE page('_index+ax+', '_index+ax,', 50); EXPLAIN EXECUTE page('_index+ax+000000001000+s4096', '_index+ax,', 50)`,
          'index_keys',
        )
        expect(plan.match(/Index (Only )?Scan using records_pkey/g), plan).toHaveLength(2)
        expect(plan).not.toMatch(/Seq Scan|Sort/)
      }
    }, 120_000)
  })
})

describe("the public records pass over the store's own", () => {
  it("in a step: a list of an app's keys among 4,000 entries of the index reads a few pages, not 400", async () => {
    const adapter = createMemoryAdapter()
    const raw = recordsOf(adapter)!
    let pages = 0
    const counted: KeyValueStore = { ...raw, list: (prefix, range) => (pages++, raw.list(prefix, range)) }
    const kv = composeStorage(adapter, counted).kv!
    await adapter.createSession(rootHeader('s1'))
    for (let i = 0; i < 1000; i++) for (const list of INDEX_LISTS) await raw.put(indexEntryKey(list, BASE + i, `s${i}`), '')
    await raw.put(indexStateKey, '{}')
    for (let at = 1; at <= 30; at++) await adapter.history!.put('s1', at, { witness: { createdAt: 1, seedLength: 0 }, rows: {} } as never)
    for (const key of [['A'], ['_a'], ['a'], ['session', 's1', 'chain'], ['session', 's1', 'z']]) await kv.put(key, 'v')
    // A page of the app's keys and the index's, then one after the index: 'a' and the history rows, then one after those.
    const pagesOf = async (prefix: RecordKey, range: { limit: number; after?: RecordKey }) => {
      pages = 0
      const keys = await kv.list(prefix, range)
      return { keys, pages }
    }
    expect(await pagesOf([], { limit: 10 })).toEqual({ keys: [['A'], ['_a'], ['a'], ['session', 's1', 'chain'], ['session', 's1', 'z']], pages: 3 })
    expect(await pagesOf(['_index'], { limit: 10 })).toEqual({ keys: [], pages: 2 })
    expect(await pagesOf([], { limit: 2, after: ['_a'] })).toEqual({ keys: [['a'], ['session', 's1', 'chain']], pages: 3 })
    expect(await pagesOf(['session', 's1'], { limit: 1 })).toEqual({ keys: [['session', 's1', 'chain']], pages: 2 })
    await adapter.close()
  })
})

/** node:fs with a count of folder reads and of the names they gave. */
function countingFs(): { fs: FsPromises; reads: () => { folders: number; names: number } } {
  const reads = { folders: 0, names: 0 }
  const fs: FsPromises = {
    ...nodeFs,
    writeSync,
    fdatasyncSync,
    readdir: (async (...args: Parameters<typeof nodeFs.readdir>) => {
      reads.folders++
      const names = await nodeFs.readdir(...args)
      reads.names += names.length
      return names
    }) as typeof nodeFs.readdir,
  }
  return { fs, reads: () => ({ ...reads }) }
}
const since = (a: { folders: number; names: number }, b: { folders: number; names: number }) => ({ folders: b.folders - a.folders, names: b.names - a.names })

/** Every folder under `dir` (itself included) that holds nothing. */
async function emptyFolders(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[])
  const out = names.length === 0 ? [dir] : []
  for (const name of names) if ((await stat(join(dir, name))).isDirectory()) out.push(...(await emptyFolders(join(dir, name))))
  return out
}

describe('fs: the session index in folders of its own', () => {
  let dir: string
  const adapters: StorageAdapter[] = []
  const open = (options: Parameters<typeof createFsAdapter>[0] = {}) => {
    const adapter = createFsAdapter({ dir, ...options })
    adapters.push(adapter)
    return adapter
  }
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sessionfold-index-fs-'))
  })
  afterEach(async () => {
    for (const a of adapters.splice(0)) await a.close()
    await rm(dir, { recursive: true, force: true })
    dir = await mkdtemp(join(tmpdir(), 'sessionfold-index-fs-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('keeps the state and an entry where layout.ts says, and none of them in kv/', async () => {
    const kv = recordsOf(open())!
    await kv.put(indexStateKey, '{}')
    await kv.put(indexEntryKey('ax', 2 ** 48 - 1 - 0xfedcba987654, 'Agent'), '')
    await kv.put(['app'], 'v')
    expect((await stat(join(dir, 'index', 'state'))).isFile()).toBe(true)
    // A list's first entries lie in its own folder, named by the whole time part.
    expect((await stat(join(dir, 'index', 'ax', 'fedcba987654+agent.1'))).isFile()).toBe(true)
    expect(await readdir(join(dir, 'kv'))).toEqual(['app'])
  })

  it("keeps a session's row in its folder's summary.json (no kv/ folder for it); one an earlier version left in kv/_summary is read until the row is written again", async () => {
    const adapter = open()
    const kv = recordsOf(adapter)!
    const key = summaryKey('s1')
    await adapter.createSession(rootHeader('s1'))
    await kv.put(key, 'row 1')
    const folder = join(dir, 'sessions', folderOf('s1'))
    expect(await nodeFs.readFile(join(folder, 'summary.json'), 'utf8')).toBe('row 1')
    expect(await readdir(folder)).not.toContain('kv')
    expect(await kv.list(['session', 's1'])).toEqual([key])
    // A store of the earlier layout (opened anew): the row in kv/_summary only.
    await nodeFs.rm(join(folder, 'summary.json'))
    await nodeFs.mkdir(join(folder, 'kv'))
    await nodeFs.writeFile(join(folder, 'kv', '_summary'), 'old row')
    const later = recordsOf(open())!
    await later.put(['session', 's1', 'mine'], 'v') // the session's own record beside it
    expect(await later.get(key)).toBe('old row')
    expect(await later.list(['session', 's1'])).toEqual([key, ['session', 's1', 'mine']])
    // Written again: in summary.json, and gone from kv/ (which keeps the session's own record).
    await later.put(key, 'row 2')
    expect(await later.get(key)).toBe('row 2')
    expect(await readdir(join(folder, 'kv'))).toEqual(['mine'])
    expect(await later.list(['session', 's1'])).toEqual([key, ['session', 's1', 'mine']])
    // Both copies there (a process of the earlier version wrote meanwhile): the new one is read, and a delete removes both.
    await nodeFs.writeFile(join(folder, 'kv', '_summary'), 'old row')
    expect(await later.get(key)).toBe('row 2')
    expect(await later.list(['session', 's1'], { limit: 10 })).toEqual([key, ['session', 's1', 'mine']])
    await recordsOf(open())!.delete(key)
    expect(await later.get(key)).toBeUndefined()
    expect(await later.list(['session', 's1'])).toEqual([['session', 's1', 'mine']])
  })

  it("fills a list's folder up to FOLDER_CAP entries, then a level down: sessions written hours apart cost no folder each", async () => {
    const kv = recordsOf(open())!
    const keys = Array.from({ length: FOLDER_CAP + 300 }, (_, i) => indexEntryKey('ar', BASE + i * 3_600_000, `s${i}`))
    for (const key of keys) await kv.put(key, '')
    const top = await readdir(join(dir, 'index', 'ar'))
    expect(top.filter((n) => n.includes('+'))).toHaveLength(FOLDER_CAP)
    const folders = top.filter((n) => !n.includes('+'))
    // The other 300, an hour apart, by the first three digits of their time part (about 800 days a folder).
    expect(folders.length).toBeGreaterThan(0)
    expect(folders.length).toBeLessThanOrEqual(2)
    expect(await kv.list(['_index', 'ar'])).toEqual(expected(keys.map(flatOf), ['_index', 'ar'], undefined, 10_000))
    for (const [i, key] of keys.entries()) expect(await kv.get(key), `entry ${i}`).toBe('')
    // Pages from cursors anywhere agree with the whole list.
    const all = keys.map(flatOf)
    const rand = random(5)
    for (let n = 0; n < 20; n++) {
      const after = keys[Math.floor(rand() * keys.length)]!
      const limit = 1 + Math.floor(rand() * 120)
      expect(await kv.list(['_index', 'ar'], { after, limit })).toEqual(expected(all, ['_index', 'ar'], after, limit))
    }
    for (const key of keys) await kv.delete(key)
    expect(await readdir(join(dir, 'index'))).toEqual([])
  })

  it('lists entries at any level each once (a store of the last version kept them all at the deepest), and deletes a copy at a time', async () => {
    const kv = recordsOf(open())!
    const rand = random(9)
    const keys = times(rand).map((t, i) => indexEntryKey('cx', t, IDS[i % IDS.length]!))
    // Half at the deepest level, where the last version put every entry: <list>/<3>/<2>/<2>/<2>/<2>/<last digit>+<id>.
    const deep = keys.filter((_, i) => i % 2 === 0)
    for (const key of deep) {
      const t = key[2]!
      const folder = join(dir, 'index', 'cx', t.slice(0, 3), t.slice(3, 5), t.slice(5, 7), t.slice(7, 9), t.slice(9, 11))
      await nodeFs.mkdir(folder, { recursive: true })
      await nodeFs.writeFile(join(folder, `${t.slice(11)}+${recordNameOf(key[3]!)}`), '')
    }
    for (const key of keys.filter((_, i) => i % 2 === 1)) await kv.put(key, '')
    // And two of the deep ones again in the list's folder, as two puts at once may leave them.
    for (const key of deep.slice(0, 2)) {
      await nodeFs.writeFile(join(dir, 'index', 'cx', `${key[2]}+${recordNameOf(key[3]!)}`), '')
    }
    const all = [...new Set(keys.map(flatOf))] // a time and an id may come twice
    expect(await kv.list(['_index', 'cx'])).toEqual(expected(all, ['_index', 'cx'], undefined, 10_000))
    for (let n = 0; n < 20; n++) {
      const after = keys[Math.floor(rand() * keys.length)]!
      const limit = 1 + Math.floor(rand() * 30)
      expect(await kv.list(['_index', 'cx'], { after, limit })).toEqual(expected(all, ['_index', 'cx'], after, limit))
    }
    for (const key of keys) expect(await kv.get(key)).toBe('')
    // A copy at a time: the one in the list's folder first, then the deep one.
    await kv.delete(deep[0]!)
    expect(await kv.get(deep[0]!)).toBe('')
    await kv.delete(deep[0]!)
    expect(await kv.get(deep[0]!)).toBeUndefined()
    for (const key of keys) await kv.delete(key)
    await kv.delete(deep[1]!)
    expect(await kv.list(['_index', 'cx'])).toEqual([])
    expect(await emptyFolders(join(dir, 'index'))).toEqual([join(dir, 'index')])
  })

  it('a first page of 50 reads a few folders, as many over 5,000 entries as over 500', async () => {
    const readsFor = async (count: number) => {
      const counting = countingFs()
      const adapter = open({ dir: join(dir, String(count)), fs: counting.fs })
      const kv = recordsOf(adapter)!
      // Sessions written three a millisecond (an import): times clustered.
      for (let i = 0; i < count; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => kv.put(indexEntryKey('ax', BASE + Math.floor((i + j) / 3), `s${i + j}`), '')))
      }
      await kv.put(indexEntryKey('ar', BASE, 'other-list'), '')
      const before = counting.reads()
      const first = await kv.list(['_index', 'ax'], { limit: 50 })
      const firstReads = since(before, counting.reads())
      expect(first).toEqual(expected(first.map(flatOf), ['_index', 'ax'], undefined, 50))
      expect(first).toHaveLength(50)
      // A page from the middle: the folders down to its cursor, then its own.
      const all: string[][] = []
      for (let after: RecordKey | undefined; ; ) {
        const page = await kv.list(['_index', 'ax'], { limit: 1000, ...(after ? { after } : {}) })
        all.push(...page)
        if (page.length < 1000) break
        after = page[page.length - 1]
      }
      expect(all).toHaveLength(count)
      const mid = counting.reads()
      const middle = await kv.list(['_index', 'ax'], { limit: 50, after: all[Math.floor(count / 2)]! })
      expect(middle).toEqual(all.slice(Math.floor(count / 2) + 1, Math.floor(count / 2) + 51))
      return { first: firstReads, middle: since(mid, counting.reads()) }
    }
    const small = await readsFor(500)
    const large = await readsFor(5000)
    // The index's folder, the list's, at most its five levels down to the first entries and a
    // last folder or two (8 here); each of at most FOLDER_CAP entries and 256 folders but the last
    // ones (48 entries here).
    for (const reads of [small.first, small.middle, large.first, large.middle]) {
      expect(reads.folders).toBeLessThanOrEqual(10)
      expect(reads.names).toBeLessThan(6 * (FOLDER_CAP + 256) + 3 * 48)
    }
    // A small store reads fewer (its entries in fewer levels); a big one no more than the levels.
    expect(small.first.folders).toBeLessThanOrEqual(large.first.folders)
  })

  it("keeps a folder's names while its mtime stands (once it was 2 s old), and reads it again when another store changed it", async () => {
    const counting = countingFs()
    const kv = recordsOf(open({ fs: counting.fs }))!
    const other = recordsOf(open())!
    const keys = Array.from({ length: FOLDER_CAP + 200 }, (_, i) => indexEntryKey('ax', BASE + Math.floor(i / 3), `s${i}`))
    for (const key of keys) await kv.put(key, '')
    const all = keys.map(flatOf)
    const page = async () => {
      const before = counting.reads()
      const got = await kv.list(['_index', 'ax'], { limit: 50 })
      return { got, folders: since(before, counting.reads()).folders }
    }
    // Sets the mtime of every folder under `at`.
    const touch = async (at: string, time: Date): Promise<void> => {
      for (const name of await readdir(at)) if ((await stat(join(at, name))).isDirectory()) await touch(join(at, name), time)
      await nodeFs.utimes(at, time, time)
    }
    // Just written: a change within the same timestamp tick could go unseen, so each list reads again. (The folders
    // are touched now: on a loaded machine the writes above can take over 2 s, and the first folders written are quiet.)
    await touch(join(dir, 'index'), new Date())
    const fresh = await page()
    expect(fresh.folders).toBeGreaterThan(1)
    expect((await page()).folders).toBe(fresh.folders)
    // Aged: the second list reads no folder.
    await touch(join(dir, 'index'), new Date(Date.now() - 10_000))
    expect((await page()).folders).toBe(fresh.folders)
    const kept = await page()
    expect(kept.folders).toBe(0)
    expect(kept.got).toEqual(expected(all, ['_index', 'ax'], undefined, 50))
    // Another store adds an entry that sorts first, and removes one on the page: both are seen.
    const first = indexEntryKey('ax', BASE + 10_000, 'newest')
    await other.put(first, '')
    await other.delete(keys[keys.length - 1]!)
    const changed = all.filter((k) => k !== flatOf(keys[keys.length - 1]!)).concat(flatOf(first))
    const after = await page()
    expect(after.folders).toBeGreaterThan(0)
    expect(after.got).toEqual(expected(changed, ['_index', 'ax'], undefined, 50))
    expect(after.got[0]).toEqual(first)
    // A folder removed and made again (a new inode) is read again too.
    for (const key of keys) await other.delete(key)
    await other.put(keys[0]!, '')
    expect((await page()).got).toEqual(expected([flatOf(first), flatOf(keys[0]!)], ['_index', 'ax'], undefined, 50))
  })

  it('a delete removes the folders it leaves empty', async () => {
    const kv = recordsOf(open())!
    const rand = random(3)
    const keys = INDEX_LISTS.flatMap((list) => times(rand).map((t, i) => indexEntryKey(list, t, `s${i}`)))
    for (const key of keys) await kv.put(key, '')
    await kv.put(indexStateKey, '{}')
    for (const key of keys.filter((_, i) => i % 2 === 0)) await kv.delete(key)
    expect(await emptyFolders(join(dir, 'index'))).toEqual([])
    for (const key of keys) await kv.delete(key)
    expect(await emptyFolders(join(dir, 'index'))).toEqual([])
    expect(await readdir(join(dir, 'index'))).toEqual(['state'])
  })

  it('a put whose folder another process removes meanwhile makes it again', async () => {
    let removed = 0
    const fs: FsPromises = {
      ...nodeFs,
      writeSync,
      rename: (async (from: string, to: string) => {
        // As another process's delete would, between this put's mkdir and its rename: its folders emptied and removed.
        if (String(to).includes(`${join('index', 'cr')}`) && removed < 3) {
          removed++
          await nodeFs.rm(join(dir, 'index', 'cr'), { recursive: true })
        }
        return nodeFs.rename(from, to)
      }) as typeof nodeFs.rename,
    }
    const kv = recordsOf(open({ fs }))!
    await kv.put(indexEntryKey('cr', BASE, 'a'), '', { durability: 'durable' })
    expect(removed).toBe(3)
    expect(await kv.list(['_index', 'cr'])).toEqual([['_index', 'cr', indexEntryKey('cr', BASE, 'a')[2]!, 'a']])
  })

  it('two stores on one folder put and delete entries in the same folders at once, and never fail', async () => {
    const stores = [recordsOf(open())!, recordsOf(open())!]
    const lists: IndexList[] = ['ax', 'cx']
    // Few folders, many entries coming and going in each: every delete may empty one, every put remake it.
    const keyOf = (n: number) => indexEntryKey(lists[n % 2]!, BASE + (n % 5) * 20_000, `s${n % 7}`)
    const rand = random(11)
    const work = (kv: KeyValueStore, seed: number) =>
      (async () => {
        for (let i = 0; i < 400; i++) {
          const key = keyOf(Math.floor(rand() * 1000) + seed)
          if (rand() < 0.5) await kv.put(key, '')
          else await kv.delete(key)
          if (i % 25 === 0) await kv.list(['_index', lists[i % 2]!], { limit: 10 })
        }
      })()
    await Promise.all([work(stores[0]!, 0), work(stores[0]!, 1), work(stores[1]!, 2), work(stores[1]!, 3)])
    // Whatever is left lists the same from both, and deleting it leaves nothing.
    const left = await stores[0]!.list(['_index'])
    expect(await stores[1]!.list(['_index'])).toEqual(left)
    await Promise.all(left.map((key, i) => stores[i % 2]!.delete(key)))
    expect(await stores[1]!.list(['_index'])).toEqual([])
    expect(await emptyFolders(join(dir, 'index'))).toEqual([join(dir, 'index')])
  })
})
