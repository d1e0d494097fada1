// Contract: §8 changesSince/applyChanges, §12 the change feed (docs/CONTRACT.md)
// The fs change feed's records are not synced on their own: a lone append pays one fdatasync
// (its log's), and a machine crash that loses the feed's last records from the page cache
// gives the feed a new identity at the next boot, so cursors made before it walk again.
import { fdatasyncSync, writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsAdapter, type FsPromises } from '../../src/backends/fs'
import { BOOT_ID_FILE, sameBoot } from '../../src/backends/fs/boot'
import { createMemoryAdapter } from '../../src/backends/memory'
import { Engine } from '../../src/engine'
import type { ChangeCursor } from '../../src/core/changes'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-feed-boot-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** node:fs with a settable boot identity and a count of fdatasync calls per file name. */
function countingFs(boot: { id: string }): { fs: FsPromises; syncs: Map<string, number> } {
  const syncs = new Map<string, number>()
  const names = new Map<number, string>()
  const count = (name: string) => syncs.set(name, (syncs.get(name) ?? 0) + 1)
  const fs: FsPromises = {
    ...nodeFs,
    writeSync,
    readFile: (async (path: Parameters<typeof nodeFs.readFile>[0], options?: Parameters<typeof nodeFs.readFile>[1]) => {
      if (String(path) === BOOT_ID_FILE) return `${boot.id}\n`
      return nodeFs.readFile(path, options)
    }) as typeof nodeFs.readFile,
    open: (async (path: string, flags?: string) => {
      const fh = await nodeFs.open(path, flags)
      names.set(fh.fd, basename(String(path)))
      const datasync = fh.datasync.bind(fh)
      fh.datasync = async () => {
        count(basename(String(path)))
        return datasync()
      }
      return fh
    }) as typeof nodeFs.open,
    fdatasyncSync: (fd: number) => {
      count(names.get(fd) ?? '?')
      fdatasyncSync(fd)
    },
  }
  return { fs, syncs }
}

/** The feed identity a changesSince walk from nothing names. */
const feedOf = async (engine: Engine): Promise<string> => ((await engine.changesSince(null, {})).cursor as { feed: string }).feed

/**
 * A store with one session written in boot 'boot-1', then the machine "restarted": `boot` is
 * 'boot-2' from here. Returns the feed identity of the first boot.
 */
async function crashedStore(boot: { id: string }): Promise<string> {
  boot.id = 'boot-1'
  const a = new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
  await a.createSession({ id: 's1' })
  const before = await feedOf(a)
  await a.close()
  boot.id = 'boot-2'
  return before
}

/** Every session with its events, as a fresh changesSince walk sees them. */
async function everything(engine: Engine): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {}
  const c = await engine.changesSince(null, { maxEvents: 10_000 })
  expect(c.done).toBe(true)
  for (const e of c.batch.sessions) out[e.header.id] = e.events.map((ev) => [ev.seq, ev.type])
  return out
}

/** Pulls from `a` into `b` from `cursor` until done; returns the new cursor. */
async function pump(a: Engine, b: Engine, cursor: ChangeCursor | null): Promise<ChangeCursor> {
  for (let calls = 0; calls < 1000; calls++) {
    const c = await a.changesSince(cursor, {})
    if (c.batch.sessions.length > 0) expect((await b.applyChanges(c.batch)).conflicts).toEqual([])
    cursor = c.cursor
    if (c.done) return cursor
  }
  throw new Error('pump did not finish')
}

describe('fs change feed: records without a sync of their own', () => {
  it("a lone append pays one fdatasync, its log's; the feed is marked with this boot once", async () => {
    const boot = { id: (await readFile(BOOT_ID_FILE, 'utf8').catch(() => 'test-boot')).trim() }
    const { fs, syncs } = countingFs(boot)
    const engine = new Engine({ storage: createFsAdapter({ dir, fs }) })
    try {
      const { id } = await engine.createSession({ id: 's' })
      syncs.clear()
      for (let i = 0; i < 20; i++) await engine.append(id, [{ type: 'app/a', data: { i } }, { type: 'app/b' }])
      expect(syncs.get('events.log')).toBe(20)
      expect(syncs.get('feed.log') ?? 0).toBe(0)
      expect((await readFile(join(dir, 'feed.boot'), 'utf8')).trim()).toBe(boot.id)
      // Every append is named, in order.
      const feed = (await readFile(join(dir, 'feed.log'), 'latin1')).split('\n').filter(Boolean)
      expect(feed.slice(1)).toEqual(Array.from({ length: 20 }, (_, i) => `s ${i * 2} ${i * 2 + 2}.`))
    } finally {
      await engine.close()
    }
  })

  it("after a machine crash lost the feed's last records, a cursor made before it walks again and misses nothing", async () => {
    const boot = { id: 'boot-1' }
    const source = () => new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
    const dest = new Engine({ storage: createMemoryAdapter() })
    let a = source()
    try {
      await a.createSession({ id: 's1' })
      await a.createSession({ id: 's2' })
      await a.append('s1', [{ type: 'app/a' }, { type: 'app/b' }])
      let cursor = await pump(a, dest, null)
      const feedId = await a.changesSince(cursor, {}).then((c) => (c.cursor as { feed: string }).feed)
      // Acknowledged (their logs synced) but their feed records still only in the page cache...
      const synced = (await stat(join(dir, 'feed.log'))).size
      await a.append('s1', [{ type: 'app/c' }, { type: 'app/d' }, { type: 'app/e' }])
      await a.createSession({ id: 's3' })
      await a.append('s3', { type: 'app/f' })
      // ... read by the other side, whose cursor now points past them.
      cursor = await pump(a, dest, cursor)
      await a.close()
      // The machine goes down: the feed's unsynced tail is lost, the logs are whole.
      await truncate(join(dir, 'feed.log'), synced)
      boot.id = 'boot-2'
      a = source()
      await a.openSession('s2')
      await a.append('s2', { type: 'app/g' }) // its record lands where the lost ones were
      cursor = await pump(a, dest, cursor)
      expect(await everything(dest)).toEqual(await everything(a))
      expect(await everything(dest)).toMatchObject({ s2: [[0, 'app/g']] })
      expect((cursor as { feed: string }).feed).not.toBe(feedId)
      expect((await readFile(join(dir, 'feed.boot'), 'utf8')).trim()).toBe('boot-2')
      // Later calls go on from the new feed's positions, as before.
      await a.openSession('s3')
      await a.append('s3', { type: 'app/h' })
      const next = await a.changesSince(cursor, {})
      expect(next.batch.sessions.map((e) => [e.header.id, e.events.map((ev) => ev.type)])).toEqual([['s3', ['app/h']]])
    } finally {
      await a.close()
      await dest.close()
    }
  })

  it("a process that died (the same boot) keeps the feed's identity; a feed of an older version, with no mark, keeps it too", async () => {
    const boot = { id: 'boot-1' }
    let a = new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
    await a.createSession({ id: 's1' })
    const first = await feedOf(a)
    await a.close()
    a = new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
    expect(await feedOf(a)).toBe(first)
    await a.close()
    await rm(join(dir, 'feed.boot')) // as an older sessionfold left it: every record synced
    boot.id = 'boot-2'
    a = new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
    try {
      await a.openSession('s1')
      await a.append('s1', { type: 'app/a' })
      expect(await feedOf(a)).toBe(first)
      expect((await readFile(join(dir, 'feed.boot'), 'utf8')).trim()).toBe('boot-2')
    } finally {
      await a.close()
    }
  })

  it('processes that settle the feed at once after a machine crash agree on its new identity', async () => {
    const boot = { id: '' }
    const before = await crashedStore(boot)
    const first = new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
    let second: Engine | undefined
    try {
      const id = await feedOf(first)
      expect(id).not.toBe(before)
      // A second process that read the old mark before the first one replaced it settles too.
      await writeFile(join(dir, 'feed.boot'), 'boot-1')
      second = new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs }) })
      expect(await feedOf(second)).toBe(id)
      expect(await feedOf(first)).toBe(id)
    } finally {
      await first.close()
      await second?.close()
    }
  })

  it('opened read-only after a machine crash: writes nothing, and names a feed of its own until a writer settles it', async () => {
    const boot = { id: '' }
    const before = await crashedStore(boot)
    const readers = [0, 1].map(() => new Engine({ storage: createFsAdapter({ dir, fs: countingFs(boot).fs, readOnly: true }) }))
    try {
      const ids = await Promise.all(readers.map(feedOf))
      expect(ids[0]).not.toBe(before)
      expect(ids[1]).not.toBe(ids[0])
      expect((await readFile(join(dir, 'feed.boot'), 'utf8')).trim()).toBe('boot-1')
      expect((await readFile(join(dir, 'feed.id'), 'utf8')).trim()).toBe(before)
    } finally {
      for (const r of readers) await r.close()
    }
  })

  it("processes that make a new store's feed identity at once all name the one that stays", async () => {
    // Each process finds no identity, makes one, and puts it in place; here the three puts wait
    // until all three are made, then go one by one, each process reading the file back before
    // the next puts its own. One put over another would leave them naming different ones.
    const boot = { id: 'boot-1' }
    const N = 3
    let arrived = 0
    let release!: () => void
    const all = new Promise<void>((resolve) => {
      release = resolve
    })
    const gated = (put: (from: string, to: string) => Promise<void>) => async (from: string, to: string) => {
      if (basename(String(to)) !== 'feed.id') return put(from, to)
      const turn = arrived++
      if (arrived === N) release()
      await all
      await new Promise((resolve) => setTimeout(resolve, 40 * turn))
      return put(from, to)
    }
    const engines = Array.from({ length: N }, () => {
      const fs = countingFs(boot).fs
      return new Engine({
        storage: createFsAdapter({ dir, fs: { ...fs, rename: gated(fs.rename) as typeof fs.rename, link: gated(fs.link!) as typeof nodeFs.link } }),
      })
    })
    try {
      const ids = await Promise.all(engines.map(feedOf))
      expect(arrived).toBe(N)
      expect(new Set(ids).size).toBe(1)
      expect((await readFile(join(dir, 'feed.id'), 'utf8')).trim()).toBe(ids[0])
    } finally {
      for (const e of engines) await e.close()
    }
  })

  it('on a file system without hard links the identity is made by rename, and kept', async () => {
    const boot = { id: 'boot-1' }
    const noLinks = (): FsPromises => ({
      ...countingFs(boot).fs,
      link: (async () => {
        throw Object.assign(new Error('operation not permitted'), { code: 'EPERM' })
      }) as typeof nodeFs.link,
    })
    const a = new Engine({ storage: createFsAdapter({ dir, fs: noLinks() }) })
    const id = await feedOf(a)
    await a.close()
    expect((await readFile(join(dir, 'feed.id'), 'utf8')).trim()).toBe(id)
    const b = new Engine({ storage: createFsAdapter({ dir, fs: noLinks() }) })
    try {
      expect(await feedOf(b)).toBe(id)
    } finally {
      await b.close()
    }
  })

  it('boot identities from start times allow for the rounding of two readings', () => {
    expect(sameBoot('t:1700000000', 't:1700000002')).toBe(true)
    expect(sameBoot('t:1700000000', 't:1700000060')).toBe(false)
    expect(sameBoot('0f9c-a', '0f9c-a')).toBe(true)
    expect(sameBoot('0f9c-a', 't:1700000000')).toBe(false)
  })
})
