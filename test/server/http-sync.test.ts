// Contract: §12 sync with a server over HTTP — createSyncHandler, toNodeListener, store.connect (docs/CONTRACT.md)
// Devices are stores in this process (fs and memory), the server is a real node:http server on
// 127.0.0.1 over a real store (fs, and PostgreSQL below).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions, type Store } from 'sessionfold'
import type { createSyncHandler } from '../../src/sync/server/index'
import { connect as connectSync, serve as serveSync } from '../support/sync-server'
import { dumpStore, eventsOf, until } from '../support/helpers'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-http-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function open(name: string, options: OpenStoreOptions = {}): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name), ...options })
  cleanups.push(() => store.close())
  return store
}

const serve = (store: Store, port = 0, extra: Partial<Parameters<typeof createSyncHandler>[0]> = {}) => serveSync(store, cleanups, port, extra)
const connect = (store: Store, url: string, token: string, options: Parameters<Store['connect']>[1] = {}) => connectSync(store, url, token, cleanups, options)

describe('HTTP sync between devices through a server (fs)', () => {
  it('a session and its children reach the other device, live; an open view there sees the new events', async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const b = await open('b')
    const ra = connect(a, http.url, 'user1', { live: true })
    const rb = connect(b, http.url, 'user1', { live: true })
    const root = await a.createSession({ id: 'u1-root', cwd: '/w' })
    await root.append([{ type: 'turn/start' }, { type: 'app/msg', data: { text: 'hi' } }])
    const kid = await root.spawn({ mode: 'continuable', id: 'u1-kid', label: 'helper', events: [{ type: 'app/task' }] })
    await ra.whenSynced()
    const rootLength = (await eventsOf(a, 'u1-root')).length
    await until(async () => (await b.listSessions()).length === 2 && (await eventsOf(b, 'u1-root')).length === rootLength, 10_000)
    const view = await b.observe('u1-root')
    expect(view.projections.snapshot().asOfSeq).toBe(rootLength - 1)
    const seen: number[] = []
    view.projections.subscribe((s) => void seen.push(s.asOfSeq))
    await root.append({ type: 'turn/end' })
    await kid.append({ type: 'app/more' })
    await until(() => view.projections.snapshot().asOfSeq === root.projections.snapshot().asOfSeq, 10_000)
    expect((await view.listChildren({})).map((c) => c.id)).toEqual(['u1-kid'])
    await until(async () => (await eventsOf(b, 'u1-kid')).length === 3, 10_000)
    await rb.whenSynced()
    expect(await dumpStore(b)).toEqual(await dumpStore(a))
    expect(await dumpStore(server)).toEqual(await dumpStore(a))
    expect(ra.status).toBe('online')
    expect(ra.pending).toBe(0)
    expect(ra.conflicts).toEqual([])
    await view.close()
  })

  it('works offline: writes made while the server is away reach the other device once it is back, each event once', async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const b = await open('b')
    const ra = connect(a, http.url, 'user1')
    const rb = connect(b, http.url, 'user1', { live: true })
    const s = await a.createSession({ id: 'u1-s' })
    await s.append({ type: 'app/online' })
    await ra.whenSynced()
    await http.stop()
    await s.append([{ type: 'app/offline1' }, { type: 'app/offline2' }])
    const offline = await a.createSession({ id: 'u1-made-offline' })
    await offline.append({ type: 'app/x' })
    await until(() => ra.status === 'offline', 10_000)
    await until(() => ra.pending >= 3, 10_000)
    expect(ra.state.error?.message).toBeTruthy()
    await http.start()
    await until(() => ra.status === 'online' && ra.pending === 0, 15_000)
    await until(async () => (await b.listSessions()).length === 2 && (await eventsOf(b, 'u1-s')).length === 3, 15_000)
    expect(await dumpStore(server)).toEqual(await dumpStore(a))
    await rb.whenSynced()
    expect(await dumpStore(b)).toEqual(await dumpStore(a))
  })

  it('a push whose answer is lost is sent again and appends nothing twice; a restart resumes from the stored cursors', async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a', { worker: false })
    let lose = 2
    let pushes = 0
    // A fetch whose first answers are lost after the server handled the request.
    const lossy: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (String(input).includes('/push')) {
        pushes++
        if (lose-- > 0) {
          await response.arrayBuffer()
          throw new TypeError('fetch failed: the connection dropped')
        }
      }
      return response
    }
    const s = await a.createSession({ id: 'u1-s' })
    await s.append(Array.from({ length: 50 }, (_, i) => ({ type: 'app/n', data: i })))
    const ra = connect(a, http.url, 'user1', { fetch: lossy })
    await ra.whenSynced()
    expect(pushes).toBeGreaterThanOrEqual(3)
    expect(ra.conflicts).toEqual([])
    expect((await eventsOf(server, 'u1-s')).map((e) => e.data)).toEqual(Array.from({ length: 50 }, (_, i) => i))
    await ra.close()
    // Again, from the cursor in the store: nothing left to push.
    let bodies = 0
    const counting: typeof fetch = async (input, init) => {
      if (String(input).includes('/push')) bodies++
      return fetch(input, init)
    }
    const again = connect(a, http.url, 'user1', { fetch: counting })
    await again.whenSynced()
    expect(bodies).toBe(0)
    expect(again.state.pushed).toBe(0)
  })

  it("onConflict 'report': two devices that wrote different events at one seq are a conflict, with both witnesses, and neither side changes", async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const b = await open('b')
    const s = await a.createSession({ id: 'u1-both' })
    await s.append({ type: 'app/first' })
    const ra = connect(a, http.url, 'user1')
    await ra.whenSynced()
    await s.close()
    const rb = connect(b, http.url, 'user1')
    await rb.whenSynced()
    await rb.close()
    await ra.close()
    await (await a.openSession('u1-both')).append({ type: 'app/from-a' })
    await (await b.openSession('u1-both')).append({ type: 'app/from-b' })
    const ra2 = connect(a, http.url, 'user1')
    await ra2.whenSynced()
    const rb2 = connect(b, http.url, 'user1', { onConflict: 'report' })
    await until(() => rb2.conflicts.length === 1, 10_000)
    const [c] = rb2.conflicts
    expect(c).toMatchObject({ id: 'u1-both', seq: 1, reason: 'event' })
    expect(c!.source.id).toBe('u1-both')
    expect(c!.target.id).toBe('u1-both')
    expect((await eventsOf(b, 'u1-both')).map((e) => e.type)).toEqual(['app/first', 'app/from-b'])
    expect((await eventsOf(server, 'u1-both')).map((e) => e.type)).toEqual(['app/first', 'app/from-a'])
  })

  it('a token sees and writes only its own sessions; no token is 401; a refused push writes nothing', async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const b = await open('b')
    await (await a.createSession({ id: 'u1-secret' })).append({ type: 'app/secret', data: 'only user1' })
    await connect(a, http.url, 'user1').whenSynced()
    const rb = connect(b, http.url, 'user2', { live: true })
    await (await b.createSession({ id: 'u2-mine' })).append({ type: 'app/x' })
    await rb.whenSynced()
    expect((await b.listSessions()).map((h) => h.id)).toEqual(['u2-mine'])
    const listed = (await (await fetch(`${http.url}/sessions`, { headers: { authorization: 'Bearer user2' } })).json()) as { sessions: { id: string }[] }
    expect(listed.sessions.map((h) => h.id)).toEqual(['u2-mine'])
    const pulled = await (await fetch(`${http.url}/pull`, { headers: { authorization: 'Bearer user2' } })).text()
    expect(pulled).not.toContain('only user1')
    expect(pulled).not.toContain('u1-secret')
    const before = await dumpStore(server)
    // user2 writes a session of user1's, and creates one under user1's ids: 403, nothing written.
    const c = await a.changesSince(null)
    const forged = { v: 1, sessions: c.batch.sessions.map((e) => ({ ...e, header: { ...e.header, id: 'u1-forged' }, events: e.events })) }
    for (const body of [c.batch, forged]) {
      const r = await fetch(`${http.url}/push`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: 'Bearer user2' } })
      expect(r.status).toBe(403)
      expect(await r.text()).not.toContain('only user1')
    }
    for (const path of ['/pull', '/sessions', '/live']) {
      const r = await fetch(`${http.url}${path}`)
      expect(r.status).toBe(401)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED')
    }
    expect((await fetch(`${http.url}/push`, { method: 'POST', body: JSON.stringify(c.batch) })).status).toBe(401)
    expect(await dumpStore(server)).toEqual(before)
    // A device of user2 told to connect with a bad token reports an error status, and keeps its data.
    const bad = connect(await open('c'), http.url, 'nobody')
    await until(() => bad.status === 'error', 10_000)
    expect(bad.state.error).toMatchObject({ status: 401, code: 'UNAUTHORIZED' })
  })

  it('hostile bodies are 400 and write nothing: not JSON, over the limit, malformed batches, bad events', async () => {
    const server = await open('server')
    const http = await serve(server, 0, { maxBodyBytes: 64 * 1024 })
    const seed = await server.createSession({ id: 'u1-there' })
    await seed.append({ type: 'app/x' })
    await seed.close()
    const before = await dumpStore(server)
    const header = { ...before['u1-there']!.header, id: 'u1-new' }
    const event = (seq: number, extra: object = {}) => ({ seq, type: 'app/e', time: 1, data: null, ...extra })
    const bodies: (string | Uint8Array)[] = [
      'not json',
      '',
      '[]',
      'null',
      '{"v":1}',
      '{"v":2,"sessions":[]}',
      JSON.stringify({ v: 1, sessions: [{ header: { id: 'u1-x' }, from: 0, events: [] }] }),
      JSON.stringify({ v: 1, sessions: [{ header, from: 0, events: [event(0), event(2)] }] }),
      JSON.stringify({ v: 1, sessions: [{ header, from: 0, events: [event(0), event(1, { extra: 1 })] }] }),
      JSON.stringify({ v: 1, sessions: [{ header, from: 0, events: [event(0, { type: '' })] }] }),
      JSON.stringify({ v: 1, sessions: [{ header: { ...header, id: '../../etc' }, from: 0, events: [] }] }),
      JSON.stringify({
        v: 1,
        sessions: [
          { header, from: 0, events: [event(0)] },
          { header, from: 0, events: [] },
        ],
      }),
      `{"v":1,"sessions":[{"header":${JSON.stringify(header)},"from":0,"events":[${JSON.stringify(event(0)).replace('null', '{"__proto__":{"polluted":1}}')}]},{"header":{"id":"u1-y"},"from":0,"events":[]}]}`,
      JSON.stringify({ v: 1, sessions: [{ header, from: 0, events: [event(0, { data: 'x'.repeat(70 * 1024) })] }] }),
      new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    ]
    for (const body of bodies) {
      const r = await fetch(`${http.url}/push`, { method: 'POST', body: body as BodyInit, headers: { authorization: 'Bearer user1' } })
      expect(r.status, String(body).slice(0, 80)).toBe(400)
      const answer = (await r.json()) as { error: { code: string; message: string } }
      expect(['INVALID_ARGUMENT', 'EVENT_TOO_LARGE']).toContain(answer.error.code)
    }
    for (const query of ['?cursor=%%%', '?cursor=a.b', `?cursor=${'A'.repeat(5000)}`, '?wait=-1', '?wait=99999999', '?sessions=../x']) {
      const r = await fetch(`${http.url}/pull${query}`, { headers: { authorization: 'Bearer user1' } })
      expect(r.status, query).toBe(400)
    }
    // Cursors are sealed: one the server did not make (forged, another server's key) starts the caller over.
    const fresh = (await (await fetch(`${http.url}/pull`, { headers: { authorization: 'Bearer user1' } })).json()) as {
      cursor: string
      batch: { sessions: unknown[] }
    }
    const forged = (await (
      await fetch(`${http.url}/pull?cursor=bm90IGpzb24gYXQgYWxsLCBub3Qgc2VhbGVk`, { headers: { authorization: 'Bearer user1' } })
    ).json()) as { cursor: string; batch: { sessions: unknown[] } }
    expect(forged.batch).toEqual(fresh.batch)
    expect(fresh.cursor).toMatch(/^[A-Za-z0-9_-]{40,}$/)
    expect(fresh.cursor).not.toContain('u1-there') // sealed: no session id shows (a random 'u1' may)
    expect((await fetch(`${http.url}/push`, { headers: { authorization: 'Bearer user1' } })).status).toBe(405)
    expect((await fetch(`${http.url}/elsewhere`, { headers: { authorization: 'Bearer user1' } })).status).toBe(404)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(await dumpStore(server)).toEqual(before)
  })

  it("live: 'long-poll' delivers the other device's appends as they happen, without a stream", async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const b = await open('b')
    const ra = connect(a, http.url, 'user1')
    const rb = connect(b, http.url, 'user1', { live: 'long-poll', pollMs: 60_000 })
    const s = await a.createSession({ id: 'u1-lp' })
    await s.append({ type: 'app/one' })
    await ra.whenSynced()
    // Until b has the session at all, observing it is SESSION_NOT_FOUND: wait for it to be listed first.
    await until(async () => (await b.listSessions()).length === 1 && (await eventsOf(b, 'u1-lp')).length === 1, 10_000)
    // b's own poll is a minute apart: only the held pull can bring this one in time.
    await s.append({ type: 'app/two' })
    await until(async () => (await eventsOf(b, 'u1-lp')).length === 2, 10_000)
    await rb.whenSynced()
    expect(await dumpStore(b)).toEqual(await dumpStore(a))
  })

  it('headers may be a function, called for each request (fresh tokens)', async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    let calls = 0
    await (await a.createSession({ id: 'u1-t' })).append({ type: 'app/x' })
    const r = a.connect(http.url, { headers: async () => (calls++, { authorization: 'Bearer user1' }), pollMs: 50 })
    cleanups.push(() => r.close())
    await r.whenSynced()
    await r.whenSynced()
    expect(calls).toBeGreaterThanOrEqual(3)
    expect((await server.listSessions()).map((h) => h.id)).toEqual(['u1-t'])
  })

  it('refuses bad connect options with INVALID_ARGUMENT', async () => {
    const a = await open('a')
    for (const [url, options] of [
      ['ftp://x', {}],
      ['not a url', {}],
      ['http://127.0.0.1:1', { live: true, typo: 1 }],
      ['http://127.0.0.1:1', { sessions: ['../x'] }],
      ['http://127.0.0.1:1', { headers: 5 }],
    ] as const) {
      expect(() => a.connect(url, options as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
  })
})

describe.skipIf(!postgresBin())('HTTP sync over a PostgreSQL store, two server processes', () => {
  let cluster: PgCluster
  let url: string
  beforeAll(async () => {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    url = await cluster.createDatabase('http')
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('a device pushing to one server and a device live on another see the same sessions (the handlers keep no state)', async () => {
    const schema = `h${process.pid}`
    const s1 = await openStore({ storage: 'postgres', url, schema })
    const s2 = await openStore({ storage: 'postgres', url, schema })
    cleanups.push(
      () => s1.close(),
      () => s2.close(),
    )
    const h1 = await serve(s1)
    const h2 = await serve(s2)
    const a = await open('a')
    const b = await open('b')
    const ra = connect(a, h1.url, 'user1')
    const rb = connect(b, h2.url, 'user1', { live: true })
    const s = await a.createSession({ id: 'u1-pg' })
    for (let i = 0; i < 20; i++) await s.append({ type: 'app/n', data: i })
    await ra.whenSynced()
    await until(async () => (await b.listSessions()).length === 1 && (await eventsOf(b, 'u1-pg')).length === 20, 15_000)
    await s.append({ type: 'app/late' })
    await until(async () => (await eventsOf(b, 'u1-pg')).length === 21, 15_000)
    await rb.whenSynced()
    expect(await dumpStore(b)).toEqual(await dumpStore(a))
    expect(await dumpStore(s2)).toEqual(await dumpStore(a))
  })
})
