// Contract: §15 deletes across stores — tombstones in changesSince, applyChanges and sync() (docs/CONTRACT.md)
// A delete is a change like an append: recorded in the change feed, carried as a tombstone by
// changesSince (walk and feed cursors, and session-map cursors), applied by applyChanges and
// sync(), kept so that a stale copy of that life is refused; on memory, fs and IndexedDB, in
// this thread and in worker_threads, plain and encrypted.
import 'fake-indexeddb/auto'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, sync, type OpenStoreOptions, type Store } from 'sessionfold'
import { drain, expectBadTombstoneRefused, expectDeletesTravel, idsOf } from '../support/tombstones'

let dir: string
const open: Store[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-tombstones-'))
})
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

const key = new Uint8Array(32).fill(7)
const modes: [string, (name: string) => OpenStoreOptions][] = [
  ['memory', () => ({ storage: 'memory', worker: false })],
  ['fs, in this thread', (name) => ({ storage: 'fs', dir: join(dir, name), worker: false })],
  ['fs, worker_threads', (name) => ({ storage: 'fs', dir: join(dir, name), worker: true })],
  ['fs, encrypted, in this thread', (name) => ({ storage: 'fs', dir: join(dir, name), worker: false, encryption: { key } })],
  ['indexeddb, in this thread', (name) => ({ storage: 'indexeddb', name: `tomb-${name}-${Math.random()}`, worker: false })],
]

async function stores(options: (name: string) => OpenStoreOptions, ...names: string[]): Promise<Store[]> {
  const made = []
  for (const name of names) {
    const s = await openStore(options(name))
    open.push(s)
    made.push(s)
  }
  return made
}

describe('deletes travel as tombstones', () => {
  for (const [mode, options] of modes) {
    it(`a delete reaches the other stores, a stale copy is refused and then deleted, and the id can be used again (${mode})`, async () => {
      const [a, b, c] = await stores(options, 'a', 'b', 'c')
      await expectDeletesTravel(a!, b!, c!)
    })

    it(`a bad tombstone is INVALID_ARGUMENT and writes nothing (${mode})`, async () => {
      const [a, b] = await stores(options, 'a', 'b')
      await expectBadTombstoneRefused(a!, b!)
    })
  }

  it('a copy open for writing on the receiving side is skipped as locked, and deleted by the next sync once let go', async () => {
    const [a, b] = await stores((name) => ({ storage: 'fs', dir: join(dir, name), worker: false }), 'a', 'b')
    await (await a!.createSession({ id: 's' })).close()
    await sync(a!, b!)
    const writer = await b!.openSession('s')
    await a!.deleteSession('s')
    const held = await sync(a!, b!)
    expect(held.deletedSessions).toBe(0)
    expect(held.skipped).toMatchObject([{ id: 's', reason: 'locked' }])
    expect(await idsOf(b!)).toEqual(['s'])
    await writer.close()
    expect(await sync(a!, b!)).toMatchObject({ deletedSessions: 1, skipped: [] })
    expect(await idsOf(b!)).toEqual([])
  })

  it('the tombstones of an encrypted store outlive a key rotation (they are not sealed: ids and times only)', async () => {
    const first = (name: string) => ({ storage: 'fs' as const, dir: join(dir, name), worker: false, encryption: { key } })
    const [a] = await stores(first, 'a')
    for (const id of ['gone', 'kept']) await (await a!.createSession({ id })).close()
    await a!.deleteSession('gone')
    const newKey = new Uint8Array(32).fill(9)
    await a!.rotateKey(newKey)
    await a!.close()
    const [again] = await stores((name) => ({ ...first(name), encryption: { key: newKey } }), 'a')
    const walked = await drain(again!, null)
    expect([walked.deleted.map((t) => t.id), walked.sessions]).toEqual([['gone'], ['kept']])
  })

  it('what a tombstone costs on fs: one small record per deleted id, kept after the session is gone', async () => {
    const [a] = await stores((name) => ({ storage: 'fs', dir: join(dir, name), worker: false }), 'a')
    for (let i = 0; i < 20; i++) await (await a!.createSession({ id: `s${i}` })).close()
    for (let i = 0; i < 20; i++) await a!.deleteSession(`s${i}`)
    const { deleted } = await drain(a!, null)
    expect(deleted.map((t) => t.id).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `s${i}`).sort())
    // The records: one file each, about 50 bytes of JSON.
    const files = await readdir(join(dir, 'a', 'kv'))
    const tombs = files.filter((f) => f.includes('_deleted'))
    expect(tombs).toHaveLength(20)
    const sizes = await Promise.all(tombs.map(async (f) => (await readFile(join(dir, 'a', 'kv', f))).length))
    expect(Math.max(...sizes)).toBeLessThan(100)
  })
})

// An interrupted delete: the tombstone is written, then the process dies before the session
// goes. The session is still whole and named by its tombstone; the same delete again finishes it.
describe('a delete cut between its two steps', () => {
  it('leaves the session whole, its tombstone kept; the delete again removes it, with one tombstone', async () => {
    const { Engine } = await import('../../src/engine')
    const { createMemoryAdapter } = await import('../../src/backends/memory')
    const { deleteSessions } = await import('../../src/engine/delete-tree')
    const engine = new Engine({ storage: createMemoryAdapter() })
    const header = await engine.createSession({ id: 'cut' })
    await engine.append('cut', [{ type: 'app/a' }, { type: 'app/b' }])
    await engine.release('cut', 'writer')
    const died = new Error('the process died')
    await expect(
      deleteSessions(
        {
          reader: engine.reader,
          locks: engine.locks,
          listChildren: (id, o) => engine.listChildren(id, o),
          index: undefined,
          sessions: { delete: () => Promise.reject(died) },
          onDelete: undefined,
          tombstones: engine.tombstones,
        },
        ['cut'],
      ),
    ).rejects.toBe(died)
    expect((await engine.reader.info('cut')).length).toBe(2)
    expect(await engine.tombstones.find('cut', header.createdAt)).toMatchObject({ id: 'cut', createdAt: header.createdAt })
    // The lock was let go: the same delete again.
    expect(await engine.deleteSessions(['cut'])).toEqual(['cut'])
    expect(await engine.reader.find('cut')).toBeUndefined()
    expect((await engine.tombstones.of('cut')).length).toBe(1)
    await engine.close()
  })
})
