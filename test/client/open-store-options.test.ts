// Contract: §6 client API — an openStore option that cannot apply where the store runs is INVALID_ARGUMENT, and nothing is created (docs/CONTRACT.md)
// Each combination is refused with a message naming the option and why, before anything
// starts: the fs folder is not made, no IndexedDB database (fake-indexeddb) appears, no
// PostgreSQL server is dialled. The combinations that do apply still open and work.
import 'fake-indexeddb/auto'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions } from 'sessionfold'
import { nodeConnectors } from '../../src/client/connect-node'
import { openStoreWith } from '../../src/client/open-store'
import { notes } from '../fixtures/notes-units'
import { expectCode } from '../support/helpers'

const notesWorker = new URL('../fixtures/notes-worker.ts', import.meta.url)
/** A port nothing listens on: a store that dialled it would fail with STORAGE_UNAVAILABLE, not INVALID_ARGUMENT. */
const pgUrl = 'postgres://app:hunter2@127.0.0.1:1/app'
/** Node's connectors as they are where no Worker can start (a service worker, an extension's background). */
const noWorkers = { ...nodeConnectors, canStartWorker: () => false }

let root: string
let dir: string
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sessionfold-options-'))
  dir = join(root, 'store')
})
afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

const databases = async () => (await indexedDB.databases()).map((d) => d.name).sort()

/** INVALID_ARGUMENT, with every one of `words` in its message, and nothing made under root nor in IndexedDB. */
async function refused(open: Promise<unknown>, words: string[]): Promise<void> {
  const before = await databases()
  const err = await expectCode(open, 'INVALID_ARGUMENT')
  for (const w of words) expect(err.message).toContain(w)
  expect(err.message).not.toContain('hunter2')
  expect(existsSync(dir)).toBe(false)
  expect(await readdir(root)).toEqual([])
  expect(await databases()).toEqual(before)
}

describe('openStore: an option that cannot apply is refused, and nothing is created', () => {
  it("workerUrl with worker: false (the engine would run here, without the worker file's units)", async () => {
    await refused(openStore({ dir, worker: false, workerUrl: notesWorker }), ['workerUrl', 'worker: false', 'projections'])
    await refused(openStore({ dir, worker: false, workerUrl: notesWorker.href }), ['workerUrl', 'worker: false'])
    await refused(openStore({ storage: 'memory', worker: false, workerUrl: notesWorker }), ['workerUrl', 'worker: false'])
  })

  it('workerUrl where no Worker can start (worker: true then means this thread)', async () => {
    for (const worker of [undefined, true, 'shared'] as const) {
      await refused(openStoreWith(noWorkers, { dir, workerUrl: notesWorker, ...(worker === undefined ? {} : { worker }) }), [
        'workerUrl',
        'no Worker can start',
        'worker: false',
      ])
    }
  })

  it('projections with the engine in a worker', async () => {
    for (const worker of [undefined, true, 'shared'] as const) {
      await refused(openStore({ dir, projections: [notes], ...(worker === undefined ? {} : { worker }) }), ['projections', 'worker: false', 'serveEngine'])
    }
    await refused(openStore({ dir, workerUrl: notesWorker, projections: [notes] }), ['projections'])
  })

  it('name with fs or postgres storage, whose data it would not name', async () => {
    await refused(openStore({ dir, name: 'mine' }), ['name', "'fs'", 'dir'])
    await refused(openStore({ storage: 'fs', dir, name: 'mine', worker: false }), ['name', "'fs'"])
    await refused(openStore({ storage: 'postgres', url: pgUrl, name: 'mine' }), ['name', "'postgres'", 'schema'])
  })

  it('dir with indexeddb or postgres storage', async () => {
    for (const worker of [false, true]) {
      await refused(openStore({ storage: 'indexeddb', name: `idb-${Math.random()}`, dir, worker }), ['dir', "'indexeddb'", 'name'])
    }
    await refused(openStore({ storage: 'postgres', url: pgUrl, dir }), ['dir', "'postgres'", 'url'])
  })

  it('an option given as undefined is not given', async () => {
    const store = await openStore({ dir, worker: false, workerUrl: undefined, name: undefined, projections: undefined } as OpenStoreOptions)
    await (await store.createSession({ id: 's' })).append({ type: 'app/e' })
    await store.close()
    expect(await readdir(dir)).toContain('sessions')
  })
})

describe('openStore: what does apply still opens', () => {
  it("workerUrl with the engine in a worker: the worker file's units fold", async () => {
    const store = await openStore({ dir, workerUrl: notesWorker })
    const s = await store.createSession({ id: 'w' })
    await s.append({ type: 'app/note', data: { n: 1 } })
    expect(s.projections.get('notes' as never)).toEqual([{ n: 1 }])
    await store.close()
  })

  it('projections with worker: false, also where no Worker can start', async () => {
    for (const [label, open] of [
      ['node', (o: OpenStoreOptions) => openStore(o)],
      ['no workers', (o: OpenStoreOptions) => openStoreWith(noWorkers, o)],
    ] as const) {
      const store = await open({ dir: join(root, label), worker: false, projections: [notes] })
      const s = await store.createSession({ id: 'p' })
      await s.append({ type: 'app/note', data: { n: 2 } })
      expect(s.projections.get('notes' as never), label).toEqual([{ n: 2 }])
      await store.close()
    }
  })

  it('where no Worker can start, worker: true runs the engine in this thread, without a workerUrl', async () => {
    const store = await openStoreWith(noWorkers, { dir, worker: true })
    await (await store.createSession({ id: 't' })).append({ type: 'app/e' })
    await store.close()
    expect(await readdir(join(dir, 'sessions'))).not.toEqual([])
  })

  it('memory takes name and dir (it keeps nothing anywhere), and makes nothing', async () => {
    const before = await databases()
    for (const worker of [true, false]) {
      const store = await openStore({ storage: 'memory', name: 'mem', dir, worker })
      await (await store.createSession({ id: 'm' })).append({ type: 'app/e' })
      await store.close()
    }
    expect(existsSync(dir)).toBe(false)
    expect(await databases()).toEqual(before)
  })

  it('name with indexeddb, dir with fs', async () => {
    const name = `idb-${Math.random()}`
    const idb = await openStore({ storage: 'indexeddb', name, worker: false })
    await (await idb.createSession({ id: 'i' })).append({ type: 'app/e' })
    await idb.close()
    expect(await databases()).toContain(name)
    const fs = await openStore({ storage: 'fs', dir, worker: false })
    await fs.close()
    expect(existsSync(join(dir, 'sessions'))).toBe(true)
  })
})
