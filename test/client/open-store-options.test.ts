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
import { NODE_BACKENDS, nodePlatform } from '../../src/backends/node'
import type { BackendEntry } from '../../src/backends/platform'
import { memoryStorage } from '../../src/backends/memory/registration'
import { browserConnectors } from '../../src/client/connect-browser'
import { connectInThread } from '../../src/client/connect-in-thread'
import { nodeConnectors } from '../../src/client/connect-node'
import type { AppDefinitions } from '../../src/host/engine-source'
import { openStoreWith } from '../../src/client/open-store'
import { notes } from '../fixtures/notes-units'
import { expectCode, until } from '../support/helpers'

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

describe("openStore: worker as a function that starts the engine's worker (browsers), refused where it cannot apply", () => {
  /** Browsers' connectors where a Worker can start (the checks run before any is used). */
  const browser = { ...browserConnectors, canStartWorker: () => true }
  const idb = () => `fn-${Math.random()}`
  /** A worker function that counts its calls, returning what `made` gives. */
  const counted = (made: () => unknown = () => ({})) => {
    const fn = Object.assign(() => (fn.calls++, made()), { calls: 0 })
    return fn
  }

  it('in Node, naming workerUrl: the function is never called', async () => {
    const start = counted()
    await refused(openStore({ dir, worker: start as never }), ['worker', 'function', 'in Node', 'workerUrl'])
    await refused(openStore({ storage: 'memory', worker: start as never }), ['workerUrl'])
    expect(start.calls).toBe(0)
  })

  it('with workerUrl, saying which to keep', async () => {
    const start = counted()
    for (const connectors of [nodeConnectors, browser]) {
      await refused(openStoreWith(connectors, { name: idb(), storage: 'indexeddb', workerUrl: notesWorker, worker: start as never }), [
        'workerUrl',
        'keep one',
        'in browsers',
        'in Node',
      ])
    }
    expect(start.calls).toBe(0)
  })

  it('with projections, and where no Worker can start', async () => {
    const start = counted()
    await refused(openStoreWith(browser, { name: idb(), worker: start as never, projections: [notes] }), ['projections', 'serveEngine', 'worker: false'])
    // browserConnectors as they are in Node: no Worker constructor.
    expect(browserConnectors.canStartWorker()).toBe(false)
    await refused(openStoreWith(browserConnectors, { name: idb(), worker: start as never }), ['worker', 'no Worker can start', 'worker: false'])
    expect(start.calls).toBe(0)
  })

  it('a function that throws: its message, as the cause, and nothing made', async () => {
    const start = counted(() => {
      throw new TypeError('Failed to construct Worker: bad URL')
    })
    const err = await expectCode(openStoreWith(browser, { name: idb(), worker: start as never }), 'INVALID_ARGUMENT')
    expect(err.message).toContain('worker')
    expect(err.message).toContain('threw: Failed to construct Worker: bad URL')
    expect((err.cause as Error).message).toBe('Failed to construct Worker: bad URL')
    await refused(openStoreWith(browser, { name: idb(), worker: start as never }), ['threw'])
    expect(start.calls).toBe(2)
  })

  it('a function that returns no Worker: refused, and what it returned ended where it can be', async () => {
    let terminated = 0
    let closed = 0
    for (const [made, words] of [
      [undefined, ['a Worker or a SharedWorker', 'undefined']],
      ['worker.ts', ['a Worker or a SharedWorker', 'worker.ts']],
      [{}, ['a Worker or a SharedWorker', 'Object']],
      // A Worker's name, without what a Worker does: ended all the same.
      [{ terminate: () => terminated++ }, ['a Worker or a SharedWorker']],
      [{ postMessage() {}, terminate: () => terminated++ }, ['a Worker or a SharedWorker']],
      // A SharedWorker whose port cannot carry messages.
      [{ port: { close: () => closed++ } }, ['a Worker or a SharedWorker']],
    ] as const) {
      await refused(openStoreWith(browser, { name: idb(), worker: (() => made) as never }), ['worker', ...words])
    }
    expect({ terminated, closed }).toEqual({ terminated: 2, closed: 1 })
  })

  it('an async function: refused, and the Worker it resolves with is terminated', async () => {
    let terminated = 0
    const worker = { postMessage() {}, addEventListener() {}, terminate: () => terminated++ }
    await refused(openStoreWith(browser, { name: idb(), worker: (async () => worker) as never }), ['not a Promise', 'async'])
    await until(() => terminated === 1)
  })

  it('worker of any other kind names the function form', async () => {
    await refused(openStore({ dir, worker: 'dedicated' as never }), ['worker', "'shared'", 'function'])
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

describe('openStore: a backend is its folder and one row in its platform list (src/backends/node.ts, browser.ts)', () => {
  /**
   * A backend of a test's own: a row and nothing else (its code is memory's). Listing it is all
   * that openStore, the option checks and the engine need: no other file names it.
   */
  const scratch: BackendEntry<{ storage: 'scratch'; name: string }, { name?: string; shelf?: string }> = {
    storage: 'scratch',
    options: ['name', 'shelf'],
    is: 'a scratch store is its `shelf`',
    config: (options) => ({ storage: 'scratch', name: options.shelf ?? 'default' }),
    load: async () => {
      const memory = await memoryStorage.load()
      return { open: (config, purpose, platform) => memory.open({ storage: 'memory', name: config.name }, purpose, platform) }
    },
  }
  const rows = [...NODE_BACKENDS, scratch]
  const withScratch = {
    ...nodeConnectors,
    backends: rows,
    inThread: (app: AppDefinitions) => connectInThread(app, async () => ({ ...nodePlatform, backends: rows })),
  }

  it('opens a store of a backend listed by one row, which keeps and reads sessions', async () => {
    const store = await openStoreWith(withScratch, { storage: 'scratch', shelf: 'a', worker: false } as never)
    const session = await store.createSession({ id: 's' })
    await session.append([{ type: 'turn/start' }, { type: 'turn/end' }])
    expect(session.projections.get('subagentTiming')?.turns).toBe(1)
    expect((await store.listSessions()).map((h) => h.id)).toEqual(['s'])
    await store.close()
  })

  it("refuses the row's options for another storage, and other rows' options for it, naming the owner", async () => {
    await refused(openStoreWith(withScratch, { dir, shelf: 'a', worker: false } as OpenStoreOptions), ['shelf', "'scratch'", "'fs'", 'dir'])
    await refused(openStoreWith(withScratch, { storage: 'scratch', dir, worker: false } as never), ['dir', "'fs'", "'scratch'", 'shelf'])
  })

  it("refuses a storage the platform does not list, naming those it does (Node's fs in a browser)", async () => {
    await refused(openStoreWith(browserConnectors, { storage: 'fs', dir, worker: false }), ['"fs"', "'indexeddb'", "'memory'", 'in browsers'])
    await refused(openStoreWith(withScratch, { storage: 'floppy', worker: false } as never), ['"floppy"', "'scratch'", "'postgres'", 'in Node'])
    await refused(openStoreWith(browserConnectors, { url: pgUrl, worker: false } as OpenStoreOptions), ['url', 'in browsers'])
  })
})
