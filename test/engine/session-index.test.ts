// Contract: §14 the session index behind store.sessions() — a cache: rebuilt when missing, a
// damaged row written again, entries a delete elsewhere left settled, checked by verify, kept
// through replication (sync between stores); a bad query writes nothing (docs/CONTRACT.md)
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, sync, type SessionList, type SessionQuery, type Store } from 'sessionfold'
import { folderOf } from '../../src/backends/fs/layout'
import { filesOf } from '../support/files'
import { until } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-index-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const open = (name = 'store') => openStore({ storage: 'fs', dir: join(dir, name), worker: false })

/** The rows of a list once loaded, as `id:title:length`. */
async function rows(store: Store, query?: SessionQuery): Promise<string[]> {
  const list = store.sessions(query)
  try {
    await until(() => list.loaded)
    return list.items.map((s) => `${s.id}:${s.title ?? ''}:${s.length}`)
  } finally {
    list.close()
  }
}

/** A store of three sessions: a titled root written twice, a tagged root, a subagent. */
async function populate(store: Store): Promise<void> {
  const a = await store.createSession({ id: 'a', title: 'Alpha' })
  await new Promise((r) => setTimeout(r, 3))
  const b = await store.createSession({ id: 'b', tags: ['x'] })
  await new Promise((r) => setTimeout(r, 3))
  await (await a.spawn({ mode: 'one-shot', id: 'kid', title: 'Kid' })).close()
  await new Promise((r) => setTimeout(r, 3))
  await a.setMeta({ title: 'Alpha 2' })
  for (const s of [a, b]) await s.close()
}

const EXPECTED = ['a:Alpha 2:3', 'b::1']

describe('the session index', () => {
  it('is rebuilt from the logs when it is missing (a store written before it, or its folder removed)', async () => {
    const store = await open()
    await populate(store)
    expect(await rows(store)).toEqual(EXPECTED)
    await store.close()
    await rm(join(dir, 'store', 'index'), { recursive: true })
    for (const id of ['a', 'b', 'kid']) await rm(join(dir, 'store', 'sessions', folderOf(id), 'summary.json'), { force: true })
    const again = await open()
    expect(await rows(again)).toEqual(EXPECTED)
    // kid: its descriptor and its meta
    expect(await rows(again, { roots: false, order: 'created' })).toEqual(['kid:Kid:2', 'b::1', 'a:Alpha 2:3'])
    expect((await again.verify()).damaged).toEqual([])
    await again.close()
  })

  it('writes a damaged row again, and verify reports it until then', async () => {
    const store = await open()
    await populate(store)
    await store.close()
    await writeFile(join(dir, 'store', 'sessions', folderOf('a'), 'summary.json'), 'p{"v":1,"garbage":')
    const again = await open()
    const report = await again.verify()
    expect(report.damaged).toEqual([expect.objectContaining({ id: 'a', code: 'CORRUPT_CHECKPOINT', detail: expect.stringContaining('session index') })])
    // The first page meets the entry whose row cannot be read: the session is there, so its row is written again.
    await rows(again)
    await until(async () => (await again.verify()).damaged.length === 0)
    expect(await rows(again)).toEqual(EXPECTED)
    await again.close()
  })

  it("settles the entries of a session another store deleted, and shows another store's writes", async () => {
    const one = await open()
    await populate(one)
    const two = await open()
    const list: SessionList = one.sessions()
    await until(() => list.loaded)
    await two.deleteSession('b')
    const c = await two.createSession({ id: 'c', title: 'Charlie' })
    await until(() => list.items.map((s) => s.id).join() === 'c,a')
    await c.append({ type: 'app/x' })
    await until(() => list.items[0]?.length === 2)
    await c.close()
    list.close()
    expect((await one.verify()).damaged).toEqual([])
    await two.close()
    await one.close()
  })

  it('lists what a replication brought (sync between stores)', async () => {
    const source = await open('source')
    await populate(source)
    const target = await open('target')
    const list = target.sessions()
    await until(() => list.loaded)
    expect(list.items).toEqual([])
    await sync(source, target)
    // The list may show a session made before its events (b at length 0) for a moment: wait for the whole of it.
    const shown = () => list.items.map((s) => `${s.id}:${s.title ?? ''}:${s.length}`)
    await until(() => shown().join() === EXPECTED.join())
    expect(shown()).toEqual(EXPECTED)
    list.close()
    await source.close()
    await target.close()
  })

  it('a bad query is INVALID_ARGUMENT and writes nothing', async () => {
    const store = await open()
    await populate(store)
    await rows(store) // the index has caught up
    const before = await filesOf(join(dir, 'store'))
    for (const bad of [{ limit: 1.5 }, { search: 'x'.repeat(201) }, { roots: null }, { order: 'activity', tag: 7 }])
      expect(() => store.sessions(bad as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    await new Promise((r) => setTimeout(r, 100))
    const after = await filesOf(join(dir, 'store'))
    const changed = Object.keys(after).filter((k) => after[k] !== before[k] && !k.includes('locks') && !k.startsWith('/tmp'))
    expect(changed).toEqual([])
    await store.close()
  })
})
