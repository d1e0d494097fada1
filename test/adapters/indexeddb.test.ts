// Contract: §2 data model, §4 checkpoints, §7 durability — IndexedDB: the storage suite, reconnects, quota, errors (docs/CONTRACT.md)
// idb recognises IDB objects by the global constructors, so install fake-indexeddb's globals;
// every test still gets its own fresh factory.
import 'fake-indexeddb/auto'
import { IDBFactory as FakeIDBFactory, forceCloseDatabase } from 'fake-indexeddb'
import { wrap } from 'idb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import type { StorageAdapter } from '../../src/storage/types'
import { storageConformance } from 'sessionfold/testing'
import { ev, evs, expectCode, readAll, rootHeader, snapshotStore } from '../support/helpers'

storageConformance('indexeddb (fake-indexeddb)', async () => {
  const factory = new FakeIDBFactory()
  let adapter = createIndexedDbAdapter({ indexedDB: factory, name: 'conformance' })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createIndexedDbAdapter({ indexedDB: factory, name: 'conformance' })
      return adapter
    },
    teardown: () => adapter.close(),
  }
})

/** A factory that records every connection opened through it, so a test can close them. */
function capturingFactory(): { factory: IDBFactory; dbs: IDBDatabase[] } {
  const inner = new FakeIDBFactory()
  const dbs: IDBDatabase[] = []
  const factory: IDBFactory = {
    open(name, version) {
      const request = inner.open(name, version)
      request.addEventListener('success', () => dbs.push(request.result))
      return request
    },
    deleteDatabase: (name) => inner.deleteDatabase(name),
    cmp: (a, b) => inner.cmp(a, b),
    databases: () => inner.databases(),
  }
  return { factory, dbs }
}

/** Keys in the raw events store, read through a connection of the test's own. */
async function rawEventKeys(factory: IDBFactory, name: string): Promise<IDBValidKey[]> {
  const db = (await wrap(factory.open(name)))!
  try {
    return await db.getAllKeys('events')
  } finally {
    db.close()
  }
}

describe('indexeddb adapter', () => {
  const adapters: StorageAdapter[] = []
  const make = (options: Parameters<typeof createIndexedDbAdapter>[0]) => {
    const a = createIndexedDbAdapter(options)
    adapters.push(a)
    return a
  }
  afterEach(async () => {
    vi.restoreAllMocks()
    vi.unstubAllGlobals()
    await Promise.all(adapters.splice(0).map((a) => a.close()))
  })

  it('reopens and retries when the browser closes the connection under it', async () => {
    const { factory, dbs } = capturingFactory()
    const a = make({ indexedDB: factory })
    await a.createSession(rootHeader('s'))
    await a.append('s', evs('s', 0, 3))
    expect(dbs).toHaveLength(1)

    // A forced close fires 'close' (idb's `terminated`): the next call opens a new connection
    // straight away, without first failing on the dead one.
    const transaction = vi.spyOn(IDBDatabase.prototype, 'transaction')
    forceCloseDatabase(dbs[0] as never)
    await a.append('s', [ev('s', 3)])
    expect(dbs).toHaveLength(2)
    expect(transaction.mock.results.map((r) => r.type)).toEqual(['return'])

    // A close the adapter never heard of: the transaction fails with InvalidStateError, retried once.
    dbs[1]!.close()
    expect((await readAll(a, 's')).map((e) => e.seq)).toEqual([0, 1, 2, 3])
    expect(dbs).toHaveLength(3)
    await a.append('s', [ev('s', 4)])
    expect(await a.getSession('s')).toEqual({ header: rootHeader('s'), length: 5 })
    expect((await readAll(a, 's', { from: 3 }))[1]).toEqual({ seq: 4, type: 'test/event', time: 1_700_000_000_004, data: { n: 4 } })
  })

  it('steps aside when another tab deletes the database, then carries on in a fresh one', async () => {
    const { factory } = capturingFactory()
    const a = make({ indexedDB: factory, name: 'shared' })
    await a.createSession(rootHeader('s'))
    let blocked = false
    await new Promise<void>((resolve, reject) => {
      const request = factory.deleteDatabase('shared')
      request.onblocked = () => {
        blocked = true
        resolve()
      }
      request.onsuccess = () => resolve()
      request.onerror = () => reject(request.error)
    })
    expect(blocked).toBe(false)
    expect(await a.getSession('s')).toBeUndefined()
    await a.createSession(rootHeader('t'))
    expect((await a.listSessions()).map((h) => h.id)).toEqual(['t'])
  })

  it('turns a QuotaExceededError into STORAGE_QUOTA_EXCEEDED, writes nothing, and recovers', async () => {
    const factory = new FakeIDBFactory()
    const a = make({ indexedDB: factory, name: 'quota' })
    await a.createSession(rootHeader('q'))
    await a.append('q', evs('q', 0, 2))
    const before = await snapshotStore(a)

    // The second put of the batch fails, after the first was already issued.
    const put = IDBObjectStore.prototype.put
    let calls = 0
    vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(function (this: IDBObjectStore, ...args: Parameters<typeof put>) {
      if (++calls === 2) throw new DOMException('quota reached', 'QuotaExceededError')
      return put.apply(this, args)
    })
    const err = await expectCode(a.append('q', evs('q', 2, 3)), 'STORAGE_QUOTA_EXCEEDED')
    expect(err.message).toContain('"q"')
    expect((err as Error & { cause?: unknown }).cause).toMatchObject({ name: 'QuotaExceededError' })
    vi.restoreAllMocks()

    expect(await snapshotStore(a)).toEqual(before)
    // Not even the put issued before the failure survived (the meta row would hide it).
    expect(await rawEventKeys(factory, 'quota')).toEqual([
      ['q', 0],
      ['q', 1],
    ])
    await a.append('q', evs('q', 2, 3))
    expect((await a.getSession('q'))?.length).toBe(5)
  })

  it('maps other IndexedDB failures to STORAGE_UNAVAILABLE naming the session', async () => {
    const a = make({ indexedDB: new FakeIDBFactory() })
    await a.createSession(rootHeader('u'))
    vi.spyOn(IDBObjectStore.prototype, 'get').mockImplementation(() => {
      throw new DOMException('disk on fire', 'UnknownError')
    })
    const err = await expectCode(a.append('u', [ev('u', 0)]), 'STORAGE_UNAVAILABLE')
    expect(err.message).toContain('"u"')
    expect(err.message).toContain('append')
    vi.restoreAllMocks()
    await a.append('u', [ev('u', 0)])
  })

  it('opens log writes with strict durability by default, relaxed when asked; checkpoints always relaxed', async () => {
    const spy = vi.spyOn(IDBDatabase.prototype, 'transaction')
    const writes = () => spy.mock.calls.filter((c) => c[1] === 'readwrite').map((c) => c[2])

    const strict = make({ indexedDB: new FakeIDBFactory() })
    await strict.createSession(rootHeader('d'))
    await strict.append('d', [ev('d', 0)])
    await strict.putCheckpoint('d', { witness: { version: 1, id: 'd', createdAt: 1, seedLength: 0, delegationDepth: 0 }, rows: {} })
    // Sessions and events commit strict; the checkpoint row (a cache) commits relaxed.
    expect(writes()).toEqual([{ durability: 'strict' }, { durability: 'strict' }, { durability: 'relaxed' }])

    spy.mockClear()
    const relaxed = make({ indexedDB: new FakeIDBFactory(), durability: 'relaxed' })
    await relaxed.createSession(rootHeader('d'))
    await relaxed.append('d', [ev('d', 0)])
    expect(writes()).toEqual([{ durability: 'relaxed' }, { durability: 'relaxed' }])
  })

  it('commits appends that arrive together, to one session or many, in shared transactions; each fails alone', async () => {
    const spy = vi.spyOn(IDBDatabase.prototype, 'transaction')
    const appendTxs = () => spy.mock.calls.filter((c) => c[1] === 'readwrite' && [c[0]].flat().includes('events')).length
    const a = make({ indexedDB: new FakeIDBFactory() })
    const ids = ['g0', 'g1', 'g2', 'g3', 'g4']
    for (const id of ids) await a.createSession(rootHeader(id))
    const before = appendTxs()
    await Promise.all(ids.flatMap((id) => Array.from({ length: 20 }, (_, i) => a.append(id, [ev(id, i)]))))
    expect(appendTxs() - before).toBeLessThanOrEqual(5) // 100 appends
    for (const id of ids) expect((await readAll(a, id)).map((e) => e.seq)).toEqual([...Array(20).keys()])
    // In one group: an append that does not continue its log, and one to a session that is gone.
    const results = await Promise.allSettled([
      a.append('g0', [ev('g0', 20)]),
      a.append('g1', [ev('g1', 99)]),
      a.append('nope', [ev('nope', 0)]),
      a.append('g2', [ev('g2', 20)]),
    ])
    expect(results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code: string }).code))).toEqual([
      'ok',
      'SEQ_CONFLICT',
      'SESSION_NOT_FOUND',
      'ok',
    ])
    expect((await a.getSession('g1'))?.length).toBe(20)
    expect((await a.getSession('g2'))?.length).toBe(21)
    spy.mockRestore()
  })

  it('looks up globalThis.indexedDB lazily, on first use', async () => {
    vi.stubGlobal('indexedDB', undefined)
    const none = make({})
    await expectCode(none.listSessions(), 'STORAGE_UNAVAILABLE')

    const a = make({ name: 'lazy' })
    vi.stubGlobal('indexedDB', new FakeIDBFactory())
    await a.createSession(rootHeader('x'))
    expect((await a.listSessions()).map((h) => h.id)).toEqual(['x'])
  })

  it('close waits for in-flight writes, then rejects later calls with CLOSED', async () => {
    const factory = new FakeIDBFactory()
    const a = make({ indexedDB: factory })
    await a.createSession(rootHeader('w'))
    const writing = a.append('w', evs('w', 0, 50))
    await a.close()
    await writing
    await expectCode(a.append('w', [ev('w', 50)]), 'CLOSED')
    await expectCode(readAll(a, 'w'), 'CLOSED')
    const b = make({ indexedDB: factory })
    expect((await b.getSession('w'))?.length).toBe(50)
  })
})
