// Contract: §10 sync with a server — what a replication's status says, and how soon it is back (docs/CONTRACT.md)
// store.connect through the worker with its default timings (no pollMs or maxBackoffMs), in
// each live mode, against a real createSyncHandler on node:http, 127.0.0.1, over an fs store.
// Every status a subscriber is told is recorded: `online` only after a request that just
// succeeded, one transition per real change while the server is away, a refused token
// `error` without an `online` first, and pushes made offline sent as soon as any request to
// the server succeeds again rather than at the end of a backoff grown by the local appends.
import { createServer, type Server } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { createSyncHandler, toNodeListener, type Authorize, type SyncHandler } from '../../src/sync/server/index'
import type { Replication, ReplicationStatus } from '../../src/sync/connect'
import { SessionfoldError } from '../../src/core/errors'
import { eventsOf, until } from '../support/helpers'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-status-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

/** `user1` may do anything, `reader` only read, `blocked` is known but may do nothing (403), anyone else is nobody (401). */
const authorize: Authorize = ({ request, access }) => {
  const token = request.headers.get('authorization')
  if (token === 'Bearer reader') return access === 'read'
  return token === 'Bearer user1' || (token === 'Bearer blocked' ? false : 'unauthenticated')
}
const AUTH = { authorization: 'Bearer user1' }
const MODES = [undefined, true, 'long-poll'] as const
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function open(name: string, options: { worker?: false } = {}): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name), ...options })
  cleanups.push(() => store.close())
  return store
}

/** A request as the server saw it: when it came, from which device (the `x-device` header), and the status it was answered. */
interface Logged {
  at: number
  path: string
  device: string | undefined
  status?: number
}
interface Running {
  url: string
  log: Logged[]
  stop(): Promise<void>
  start(): Promise<void>
}

/** The sync handler (default options) over `store` on node:http; `stop` kills it: every connection dropped, nothing listening. */
async function serve(store: Store, wrap: (handler: SyncHandler) => SyncHandler = (h) => h): Promise<Running> {
  const listener = toNodeListener(wrap(createSyncHandler({ store, authorize })))
  const log: Logged[] = []
  let server: Server | undefined
  let port = 0
  const running: Running = {
    url: '',
    log,
    async stop() {
      const s = server
      server = undefined
      if (!s) return
      s.closeAllConnections()
      await new Promise<void>((resolve) => s.close(() => resolve()))
    },
    async start() {
      const s = createServer((req, res) => {
        const entry: Logged = { at: Date.now(), path: new URL(req.url!, 'http://x').pathname, device: req.headers['x-device'] as string | undefined }
        log.push(entry)
        const writeHead = res.writeHead.bind(res) as (status: number, ...rest: unknown[]) => typeof res
        res.writeHead = ((status: number, ...rest: unknown[]) => {
          entry.status = status
          return writeHead(status, ...rest)
        }) as typeof res.writeHead
        listener(req, res)
      })
      await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve))
      server = s
      port = (s.address() as AddressInfo).port
      running.url = `http://127.0.0.1:${port}`
    },
  }
  await running.start()
  cleanups.push(() => running.stop())
  return running
}

/** Every status `r`'s subscribers were told, in order, each with when it came (a repeat of the last one is not a transition). */
function transitions(r: Replication): { status: ReplicationStatus; at: number }[] {
  const seen: { status: ReplicationStatus; at: number }[] = []
  r.subscribe((s) => {
    if (seen.at(-1)?.status !== s.status) seen.push({ status: s.status, at: Date.now() })
  })
  return seen
}

const statuses = (seen: { status: ReplicationStatus }[]) => seen.map((t) => t.status)
const count = async (store: Store, id: string) => ((await store.listSessions()).some((h) => h.id === id) ? (await eventsOf(store, id)).length : 0)
const modeOf = (live: (typeof MODES)[number]) => (live === undefined ? {} : { live })

it('the server killed for a few seconds and brought back: offline once, online once, never online while it is down', async () => {
  const server = await open('server')
  const http = await serve(server)
  for (const live of MODES) {
    const a = await open(`a-${live}`)
    const r = a.connect(http.url, { headers: AUTH, ...modeOf(live) })
    cleanups.push(() => r.close())
    const seen = transitions(r)
    await r.whenSynced()
    const downAt = Date.now()
    await http.stop()
    // Quiet for a while (a round with nothing to push sends nothing), then a write to push.
    await sleep(1500)
    const s = await a.createSession({ id: `offline-${live}` })
    await s.append({ type: 'app/x' })
    await sleep(1500)
    expect(r.status, `live: ${live}`).toBe('offline')
    expect(r.state.retryAt, `live: ${live}`).toBeGreaterThan(downAt)
    const upAt = Date.now()
    await http.start()
    await until(() => r.status === 'online' && r.pending === 0, 30_000)
    await sleep(500) // a late flip would show here
    expect(statuses(seen), `live: ${live}`).toEqual(['connecting', 'online', 'offline', 'online'])
    expect(seen[2]!.at).toBeGreaterThanOrEqual(downAt)
    expect(seen[3]!.at).toBeGreaterThanOrEqual(upAt)
    expect(r.state.error).toBeUndefined()
    expect(await count(server, `offline-${live}`)).toBe(1)
    await s.close()
    await r.close()
  }
})

it('a refused token goes connecting → error, never online first, and sends nothing; the right token then brings it online', async () => {
  const server = await open('server')
  const http = await serve(server)
  for (const live of MODES) {
    for (const [wrong, code, status] of [
      ['nobody', 'UNAUTHORIZED', 401],
      ['blocked', 'FORBIDDEN', 403],
    ] as const) {
      const device = `${wrong}-${live}`
      const a = await open(device)
      let token: string = wrong
      const r = a.connect(http.url, { headers: () => ({ authorization: `Bearer ${token}`, 'x-device': device }), ...modeOf(live) })
      cleanups.push(() => r.close())
      const seen = transitions(r)
      const refused = (path?: string) => http.log.filter((e) => e.device === device && e.status === status && (!path || e.path === path)).length
      // A device with nothing to push yet (live, its rounds send nothing), then one with a write.
      await until(() => refused() >= 3, 20_000)
      const s = await a.createSession({ id: `s-${device}` })
      await s.append({ type: 'app/x' })
      await until(() => refused('/push') >= 1, 20_000)
      await sleep(300)
      expect(statuses(seen), `${device}`).toEqual(['connecting', 'error'])
      expect(r.state.error).toMatchObject({ code, status })
      expect(r.state.retryAt).toBeGreaterThan(0)
      expect(r.pending).toBe(1)
      expect((await server.listSessions()).map((h) => h.id)).not.toContain(`s-${device}`)
      token = 'user1'
      await until(() => r.status === 'online' && r.pending === 0, 40_000)
      expect(statuses(seen), `${device}`).toEqual(['connecting', 'error', 'online'])
      expect(await count(server, `s-${device}`)).toBe(1)
      await s.close()
      await r.close()
    }
  }
})

it('a refused push stays error while the live stream gets through: one transition, not a flip at each live answer', async () => {
  const server = await open('server')
  const http = await serve(server)
  for (const live of [true, 'long-poll'] as const) {
    const a = await open(`reader-${live}`)
    const r = a.connect(http.url, { headers: { authorization: 'Bearer reader' }, live })
    cleanups.push(() => r.close())
    const seen = transitions(r)
    await r.whenSynced()
    const mine = await a.createSession({ id: `mine-${live}` })
    await mine.append({ type: 'app/x' })
    await until(() => r.status === 'error', 20_000)
    // What others write keeps arriving live (each a successful answer) while the push is refused.
    for (let i = 0; i < 3; i++) {
      const s = await server.createSession({ id: `theirs-${live}-${i}` })
      await s.append({ type: 'app/y' })
      await s.close()
      await until(async () => (await count(a, `theirs-${live}-${i}`)) === 1, 20_000)
    }
    expect(statuses(seen), `live: ${live}`).toEqual(['connecting', 'online', 'error'])
    expect(r.state.error).toMatchObject({ code: 'FORBIDDEN', status: 403 })
    expect((await server.listSessions()).map((h) => h.id)).not.toContain(`mine-${live}`)
    await mine.close()
    await r.close()
  }
})

it('after a 3 s outage, what was written offline goes with the first request that succeeds: on the server and the other device in seconds, not after a 15-30 s backoff', async () => {
  const server = await open('server')
  const http = await serve(server)
  for (const live of [undefined, true] as const) {
    const a = await open(`a-${live}`)
    const b = await open(`b-${live}`)
    const ra = a.connect(http.url, { headers: { ...AUTH, 'x-device': `a-${live}` }, ...modeOf(live) })
    const rb = b.connect(http.url, { headers: { ...AUTH, 'x-device': `b-${live}` }, ...modeOf(live) })
    cleanups.push(
      () => ra.close(),
      () => rb.close(),
    )
    await Promise.all([ra.whenSynced(), rb.whenSynced()])
    await http.stop()
    const downAt = Date.now()
    // A session made offline and written to, an append every 150 ms for 2 s (as an agent
    // streams): each append is seen by the replication, which must not retry (and back off
    // further) at each one.
    const id = `made-offline-${live}`
    const s = await a.createSession({ id })
    for (let i = 0; i < 14; i++) {
      await s.append({ type: 'app/n', data: i })
      await sleep(150)
    }
    await sleep(Math.max(0, downAt + 3000 - Date.now()))
    expect(ra.status).toBe('offline')
    expect(ra.pending).toBe(14)
    const upAt = Date.now()
    await http.start()
    await until(async () => (await count(server, id)) === 14, 40_000, 20)
    await until(async () => (await count(b, id)) === 14, 40_000, 20)
    const onB = Date.now() - upAt
    const mine = http.log.filter((e) => e.device === `a-${live}` && e.at >= upAt)
    const firstOk = mine.find((e) => e.status === 200)!
    const push = mine.find((e) => e.path === '/push')!
    // Polling, the round's retry is the first request back, and it is the push; live, whichever
    // comes back first (the stream's reconnect, most often) and the push follows it at once.
    // The old backoff, grown by each append to 15-30 s, sent it long after either.
    if (live === undefined) expect(firstOk.path).toBe('/push')
    expect(push.at - firstOk.at, `live: ${live}`).toBeLessThan(3000)
    expect(push.at - upAt, `live: ${live}`).toBeLessThan(10_000)
    expect(onB, `live: ${live}`).toBeLessThan(10_000)
    await until(() => ra.status === 'online' && ra.pending === 0, 10_000)
    await s.close()
    await ra.close()
    await rb.close()
  }
})

it('a server that answers but cannot serve is offline from the start, never online: a 503 pull, a live error event, a live stream that ends before a word, a 429', async () => {
  const store = await open('server')
  let fault: 'store' | 'cut' | 'busy' | undefined
  // The server's store failing its reads, as a lost disk or database does.
  const failing = new Proxy(store, {
    get(target, key) {
      if (key === 'changesSince' && fault === 'store')
        return async () => {
          throw new SessionfoldError('STORAGE_UNAVAILABLE', 'the disk went away')
        }
      const v = Reflect.get(target, key, target) as unknown
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
  // A proxy in front that answers a live stream's headers and closes it having sent nothing, or says "too many requests".
  const http = await serve(failing as Store, (handler) => async (request) => {
    if (fault === 'cut' && new URL(request.url).pathname === '/live') return new Response('', { status: 200, headers: { 'content-type': 'text/event-stream' } })
    if (fault === 'busy') return Response.json({ error: { code: 'RATE_LIMITED', message: 'slow down' } }, { status: 429 })
    return handler(request)
  })
  const cases = [
    [undefined, 'store'],
    [true, 'store'],
    ['long-poll', 'store'],
    [true, 'cut'],
    [undefined, 'busy'],
  ] as const
  for (const [live, broken] of cases) {
    fault = broken
    const device = `d-${live}-${broken}`
    const a = await open(device)
    const r = a.connect(http.url, { headers: { ...AUTH, 'x-device': device }, ...modeOf(live) })
    cleanups.push(() => r.close())
    const seen = transitions(r)
    const tries = () => http.log.filter((e) => e.device === device).length
    await until(() => tries() >= 4, 20_000)
    const before = tries()
    await sleep(1000)
    expect(statuses(seen), device).toEqual(['connecting', 'offline'])
    if (broken === 'store') expect(r.state.error, device).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 })
    if (broken === 'busy') expect(r.state.error, device).toMatchObject({ code: 'RATE_LIMITED', status: 429 })
    // Backed off from, not reopened in a loop (which makes hundreds of requests a second).
    expect(tries() - before, device).toBeLessThan(10)
    fault = undefined
    await until(() => r.status === 'online', 40_000)
    expect(statuses(seen), device).toEqual(['connecting', 'offline', 'online'])
    await r.close()
  }
})

it('a session the server holds open for writing is skipped and stays pending: whenSynced waits for it, and it goes once the server lets it go', async () => {
  const server = await open('server')
  const http = await serve(server)
  const a = await open('a')
  const r = a.connect(http.url, { headers: AUTH })
  cleanups.push(() => r.close())
  const s = await a.createSession({ id: 'held' })
  await s.append({ type: 'app/x', data: 1 })
  await r.whenSynced()
  const before = await count(server, 'held')
  expect(before).toBeGreaterThan(0)
  const held = await server.openSession('held')
  const pushes = () => http.log.filter((e) => e.path === '/push' && e.status === 200).length
  const pushed = pushes()
  await s.append({ type: 'app/x', data: 2 })
  // Pushed and skipped (locked there), then again each round: pending says so, and whenSynced waits.
  await until(() => pushes() >= pushed + 2, 10_000)
  let synced = false
  const whenSynced = r.whenSynced().then(() => {
    synced = true
  })
  await sleep(800)
  expect(r.pending).toBe(1)
  expect(synced).toBe(false)
  expect(await count(server, 'held')).toBe(before)
  await held.close()
  await whenSynced
  expect(r.pending).toBe(0)
  expect(await count(server, 'held')).toBe(before + 1)
  await s.close()
})

it('a session the server skipped is sent again by a later replication of the store (kept with the cursors), and after a try that failed', async () => {
  const server = await open('server')
  const http = await serve(server)
  const a = await open('a', { worker: false }) // a fetch function stays in this thread
  let failPushes = 0
  const fetch: typeof globalThis.fetch = async (input, init) => {
    if (failPushes > 0 && String(input).endsWith('/push')) {
      failPushes--
      throw new TypeError('fetch failed (a test fault)')
    }
    return globalThis.fetch(input, init)
  }
  const connectA = () => {
    const r = a.connect(http.url, { headers: AUTH, fetch, pollMs: 50, maxBackoffMs: 200 })
    cleanups.push(() => r.close())
    return r
  }
  for (const [i, id] of ['closed', 'failed'].entries()) {
    const first = connectA()
    const s = await a.createSession({ id })
    await s.append({ type: 'app/x', data: 1 })
    await s.close()
    await first.whenSynced()
    const held = await server.openSession(id)
    const pushes = () => http.log.filter((e) => e.path === '/push' && e.status === 200).length
    const pushed = pushes()
    const w = await a.openSession(id)
    await w.append({ type: 'app/x', data: 2 })
    await w.close()
    await until(() => pushes() >= pushed + 2, 10_000) // skipped (locked there), and again
    if (i === 0) {
      // Closed while the server skips it: the next replication of this store sends it.
      await first.close()
      await held.close()
      const again = connectA()
      await again.whenSynced()
      expect(again.pending).toBe(0)
      await again.close()
    } else {
      // The try after the server lets go fails: the one after sends it.
      failPushes = 1
      await held.close()
      await until(() => failPushes === 0, 10_000)
      await first.whenSynced()
      expect(first.pending).toBe(0)
      await first.close()
    }
    expect(await count(server, id), id).toBe(2)
  }
})
