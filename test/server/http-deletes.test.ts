// Contract: §15 deletes across devices over HTTP — tombstones pushed and pulled (docs/CONTRACT.md)
// Devices are fs stores in this process connected with store.connect; the server is a real
// node:http server on 127.0.0.1 over a real store, fs and PostgreSQL. A delete on one device
// reaches the server and every other device (an open tail there hears it), a new device never
// sees the session, a device that was away and wrote to its copy is refused and deletes its copy,
// a tombstone needs write access (and reaches only readers of its session), and the id can be used again.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { dumpStore, expectCode, until } from '../support/helpers'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'
import { connect as connectTo, serve, type Cleanups } from '../support/sync-server'
import { append } from '../support/splice'

let dir: string
const cleanups: Cleanups = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-http-deletes-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function open(name: string, options: { worker?: false } = {}): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name), ...options })
  cleanups.push(() => store.close())
  return store
}
const connect = (store: Store, url: string, options: Parameters<Store['connect']>[1] = {}) => connectTo(store, url, 'user1', cleanups, options)
const ids = async (store: Store) => (await store.listSessions()).map((h) => h.id).sort()

/** The tests, against a server over `server` (fs or PostgreSQL). */
function deletesOver(serverStore: () => Promise<Store>) {
  it('a delete reaches the server and the other device (a tail there hears it), a new device never sees it, and the id can be used again', async () => {
    const server = await serverStore()
    const http = await serve(server, cleanups)
    const [a, b] = [await open('a'), await open('b')]
    const ra = connect(a, http.url, { live: true })
    const rb = connect(b, http.url, { live: true })
    const x = await a.createSession({ id: 'u1-x' })
    await x.append({ type: 'msg', data: { text: 'hello' } })
    await (await x.spawn({ mode: 'one-shot', id: 'u1-xk' })).close()
    await x.close()
    await (await a.createSession({ id: 'u1-y' })).close()
    await ra.whenSynced()
    await until(async () => (await ids(b)).length === 3, 10_000)
    const view = await b.observe('u1-x')
    const tail = expectCode(
      (async () => {
        for await (const _ of view.events({ follow: true })) {
        }
      })(),
      'SESSION_NOT_FOUND',
    )

    await a.deleteSession('u1-x', { tree: true })
    await ra.whenSynced()
    expect(await ids(server)).toEqual(['u1-y'])
    await until(async () => (await ids(b)).join() === 'u1-y', 10_000)
    await tail
    await view.close().catch(() => {})
    await rb.whenSynced()
    expect([ra.pending, rb.pending, ra.conflicts.length, rb.conflicts.length]).toEqual([0, 0, 0, 0])

    // A device that comes later gets the sessions there are, and the tombstones only.
    const c = await open('c')
    await connect(c, http.url).whenSynced()
    expect(await ids(c)).toEqual(['u1-y'])

    // The id again, a new session: every store gets it.
    const again = await b.createSession({ id: 'u1-x' })
    await again.append({ type: 'msg', data: { text: 'again' } })
    await again.close()
    await rb.whenSynced()
    await until(async () => (await ids(a)).join() === 'u1-x,u1-y', 10_000)
    await ra.whenSynced()
    expect(await dumpStore(server)).toEqual(await dumpStore(b))
    expect(await dumpStore(a)).toEqual(await dumpStore(b))
  })

  it('a device that was away and wrote to a deleted session is refused, deletes its copy, and nothing comes back', async () => {
    const server = await serverStore()
    const http = await serve(server, cleanups)
    const [a, b] = [await open('a'), await open('b')]
    const ra = connect(a, http.url, { live: true })
    const s = await a.createSession({ id: 'u1-s' })
    await s.append({ type: 'msg', data: { text: 'one' } })
    await s.close()
    await ra.whenSynced()
    const rb = connect(b, http.url)
    await rb.whenSynced()
    expect(await ids(b)).toEqual(['u1-s'])
    await rb.close()

    // B is away; A deletes; B writes to its copy, then comes back.
    await a.deleteSession('u1-s')
    await ra.whenSynced()
    await append(b, 'u1-s', 'written while away')
    const back = connect(b, http.url)
    await back.whenSynced()
    await until(async () => (await ids(b)).length === 0, 10_000)
    expect(back.pending).toBe(0)
    expect(back.conflicts).toEqual([])
    expect(await ids(server)).toEqual([])
    await ra.whenSynced()
    expect(await ids(a)).toEqual([])
  })

  it('a tombstone that finds the session open for writing here deletes it once let go: after the replication is closed and connected again, or a failed try', async () => {
    const server = await serverStore()
    const http = await serve(server, cleanups)
    const [a, b] = [await open('a'), await open('b', { worker: false })] // b's fetch function stays in this thread
    const ra = connect(a, http.url)
    let failPulls = 0
    const fetch: typeof globalThis.fetch = async (input, init) => {
      if (failPulls > 0 && String(input).includes('sessions=')) {
        failPulls--
        throw new TypeError('fetch failed (a test fault)')
      }
      return globalThis.fetch(input, init)
    }
    for (const [i, id] of ['u1-closed', 'u1-failed'].entries()) {
      const s = await a.createSession({ id })
      await s.append({ type: 'msg', data: { text: 'one' } })
      await s.close()
      await ra.whenSynced()
      const rb = connect(b, http.url, { fetch })
      await rb.whenSynced()
      const held = await b.openSession(id)
      await a.deleteSession(id)
      await ra.whenSynced()
      await rb.whenSynced() // a round begun after the delete: the tombstone came, and waits for the writer here
      expect(await ids(b)).toContain(id)
      if (i === 0) {
        await rb.close()
        await held.close()
        await connect(b, http.url, { fetch }).whenSynced()
      } else {
        failPulls = 1
        await held.close()
        await until(() => failPulls === 0, 10_000)
        await rb.whenSynced()
      }
      await until(async () => !(await ids(b)).includes(id), 10_000)
      expect(await ids(server)).not.toContain(id)
    }
  })

  it('a tombstone is a write: a token that may not write the session is refused (403) and nothing is deleted', async () => {
    const server = await serverStore()
    const http = await serve(server, cleanups)
    const a = await open('a')
    await (await a.createSession({ id: 'u1-keep' })).close()
    await connect(a, http.url).whenSynced()
    const { createdAt } = (await server.listSessions())[0]!
    const body = { v: 1, sessions: [], deleted: [{ id: 'u1-keep', createdAt, deletedAt: Date.now() }] }
    const refused = await fetch(`${http.url}/push`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: 'Bearer user2' } })
    expect(refused.status).toBe(403)
    for (const deleted of ['u1-keep', [{ id: '../x', createdAt, deletedAt: 1 }]]) {
      const bad = await fetch(`${http.url}/push`, { method: 'POST', body: JSON.stringify({ ...body, deleted }), headers: { authorization: 'Bearer user1' } })
      expect(bad.status).toBe(400)
    }
    expect(await ids(server)).toEqual(['u1-keep'])
    const allowed = await fetch(`${http.url}/push`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: 'Bearer user1' } })
    expect(allowed.status).toBe(200)
    expect(await allowed.json()).toMatchObject({ deletedSessions: 1 })
    expect(await ids(server)).toEqual([])
    // Its tombstone goes only to those who may read the session.
    const pull = (token: string) =>
      fetch(`${http.url}/pull`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json() as Promise<{ batch: { deleted?: { id: string }[] } }>)
    expect((await pull('user1')).batch.deleted?.map((t) => t.id)).toEqual(['u1-keep'])
    expect((await pull('user2')).batch.deleted).toBeUndefined()
  })
}

describe('deletes over HTTP sync (fs server)', () => {
  deletesOver(() => open('server'))
})

describe.skipIf(!postgresBin())('deletes over HTTP sync (PostgreSQL server)', () => {
  let cluster: PgCluster
  let url: string
  let n = 0
  beforeAll(async () => {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    url = await cluster.createDatabase('deletes')
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })
  deletesOver(async () => {
    const store = await openStore({ storage: 'postgres', url, schema: `del${process.pid}_${n++}` })
    cleanups.push(() => store.close())
    return store
  })
})
