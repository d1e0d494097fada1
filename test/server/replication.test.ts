// Contract: §12 sync with a server — what a replication sends, imports and waits for (docs/CONTRACT.md)
// The loop of src/sync/loop.ts on a host of the test's own (so what it hands its store
// can be counted), and store.connect through the worker, each against a real node:http server
// on 127.0.0.1 over a real fs store: a device does not import its own pushes back, the
// browser's `online` event ends a retry wait at once, a slow headers function is asked once per
// request, connect's signal closes it, a full server disk is a retried 507, and a client moves
// between server processes that share a cursorSecret without starting over.
import { createServer, type Server } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type ChangeBatch, type Store } from 'sessionfold'
import { createSyncHandler, toNodeListener, type Authorize, type SyncHandlerOptions } from '../../src/sync/server/index'
import { runReplication } from '../../src/sync/loop'
import type { ConnectOptions, LoopHost, ReplicationState } from '../../src/sync/types'
import { SessionfoldError } from '../../src/core/errors'
import { dumpStore, eventsOf, until } from '../support/helpers'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-replication-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

const authorize: Authorize = ({ request }) => request.headers.get('authorization') === 'Bearer user1' || 'unauthenticated'
const AUTH = { authorization: 'Bearer user1' }

async function open(name: string): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name) })
  cleanups.push(() => store.close())
  return store
}

interface Running {
  url: string
  requests: string[]
  server: Server
  stop(): Promise<void>
  start(): Promise<void>
}

/** The sync handler over `store` on node:http, 127.0.0.1; `requests` lists each request's path. */
async function serve(store: Store, extra: Partial<SyncHandlerOptions> = {}): Promise<Running> {
  const handler = createSyncHandler({ store, authorize, pollMs: 50, ...extra })
  const requests: string[] = []
  const listener = toNodeListener(handler)
  let port = 0
  const running: Running = {
    url: '',
    requests,
    server: createServer(),
    async stop() {
      running.server.closeAllConnections()
      await new Promise<void>((resolve) => running.server.close(() => resolve()))
    },
    async start() {
      running.server = createServer((req, res) => {
        requests.push(new URL(req.url!, 'http://x').pathname)
        void listener(req, res)
      })
      await new Promise<void>((resolve) => running.server.listen(port, '127.0.0.1', resolve))
      port = (running.server.address() as AddressInfo).port
      running.url = `http://127.0.0.1:${port}`
    },
  }
  await running.start()
  cleanups.push(() => running.stop())
  return running
}

/** A loop host over `store` that records every batch the loop imports, and whose `online()` plays the browser's event. */
function hostOver(
  store: Store,
  base: string,
  options: ConnectOptions,
  meta = new Map<string, string>(),
  /** `holdApplyMs`: each import's answer held this long after its events landed; `fetch`: the loop's. */
  hooks: { holdApplyMs?: number; fetch?: typeof fetch } = {},
) {
  const stop = new AbortController()
  const imported: ChangeBatch[] = []
  const onlineWaits = new Set<() => void>()
  let state: ReplicationState = { status: 'connecting', pending: 0, conflicts: [], pushed: 0, pulled: 0 }
  let kick: (() => void) | undefined
  let kicked = false
  const waiting: (() => void)[] = []
  const host: LoopHost = {
    store: {
      changesSince: (cursor, o) => store.changesSince(cursor, o),
      applyChanges: async (batch) => {
        imported.push(batch)
        const result = await store.applyChanges(batch)
        if (hooks.holdApplyMs) await new Promise((resolve) => setTimeout(resolve, hooks.holdApplyMs))
        return result
      },
      forkConflict: () => Promise.reject(new Error('these tests connect with onConflict: report')),
      isOpenForWriting: async () => false,
      getMeta: async (key) => meta.get(key),
      putMeta: async (key, value) => void meta.set(key, value),
    },
    base,
    key: 'test',
    options: { headers: AUTH, pollMs: 50, onConflict: 'report', ...options },
    fetch: hooks.fetch ?? globalThis.fetch,
    signal: stop.signal,
    state: () => state,
    set: (patch) => {
      state = { ...state, ...patch }
      if (patch.status === 'online') {
        delete state.error
        delete state.retryAt
      }
    },
    takeWaiting: () => waiting.splice(0),
    returnWaiting: (w) => void waiting.unshift(...w),
    setKick: (k) => void (kick = k),
    consumeKick: () => {
      const was = kicked
      kicked = false
      return was
    },
    whenOnline: (f) => (onlineWaits.add(f), () => void onlineWaits.delete(f)),
  }
  const done = runReplication(host)
  const close = async () => {
    stop.abort()
    kick?.()
    await done
  }
  cleanups.push(close)
  return {
    imported,
    state: () => state,
    synced: () =>
      new Promise<void>((resolve) => {
        waiting.push(resolve)
        if (kick) kick()
        else kicked = true
      }),
    online: () => {
      if (kick) kick()
      else kicked = true
      for (const f of [...onlineWaits]) f()
    },
    close,
  }
}

/** How many events `store` has of `id` (0 while it has no such session). */
const count = async (store: Store, id: string) => ((await store.listSessions()).some((h) => h.id === id) ? (await eventsOf(store, id)).length : 0)

const idsIn = (batches: ChangeBatch[]) => new Set(batches.flatMap((b) => b.sessions.filter((e) => e.events.length > 0).map((e) => e.header.id)))

describe('the replication loop', () => {
  it("does not import its own pushes back, though the server's live stream and pulls carry them to every reader", async () => {
    for (const live of [true, 'long-poll', false] as const) {
      const http = await serve(await open(`server-${live}`))
      const a = await open(`a-${live}`)
      const b = await open(`b-${live}`)
      const ra = hostOver(a, http.url, { live })
      const rb = hostOver(b, http.url, { live })
      const mine = await a.createSession({ id: `mine-${live}` })
      for (let i = 0; i < 5; i++) {
        await mine.append({ type: 'app/n', data: i })
        await ra.synced()
      }
      const theirs = await b.createSession({ id: `theirs-${live}` })
      await theirs.append([{ type: 'app/x' }, { type: 'app/y' }])
      await rb.synced()
      await until(async () => (await count(a, `theirs-${live}`)) === 2, 10_000)
      await until(async () => (await count(b, `mine-${live}`)) === 5, 10_000)
      await ra.synced()
      // A imported B's session and nothing of its own; B the other way round.
      expect(idsIn(ra.imported)).toEqual(new Set([`theirs-${live}`]))
      expect(idsIn(rb.imported)).toEqual(new Set([`mine-${live}`]))
      expect(ra.state().pulled).toBe(2)
      await mine.close()
      await theirs.close()
      await ra.close()
      await rb.close()
      expect(await dumpStore(b)).toEqual(await dumpStore(a))
    }
  })

  it('sends nothing back of what it pulls, even to a round that runs while the import lands', async () => {
    for (const live of [true, 'long-poll', false] as const) {
      const server = await open(`server-held-${live}`)
      const http = await serve(server)
      const theirs = await server.createSession({ id: `theirs-held-${live}` })
      await theirs.append([{ type: 'app/x' }, { type: 'app/y' }])
      await theirs.close()
      const a = await open(`a-held-${live}`)
      // Every push the loop sends: the sessions in it.
      const pushed: string[] = []
      const fetch: typeof globalThis.fetch = async (url, init) => {
        if (String(url).endsWith('/push') && typeof init?.body === 'string')
          pushed.push(...(JSON.parse(init.body) as ChangeBatch).sessions.map((e) => e.header.id))
        return globalThis.fetch(url, init)
      }
      // The import's events are in the store 300 ms before its answer: rounds (every 50 ms) run meanwhile.
      const r = hostOver(a, http.url, { live }, undefined, { holdApplyMs: 300, fetch })
      await until(async () => (await count(a, `theirs-held-${live}`)) === 2, 10_000)
      await r.synced()
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(pushed, `live: ${live}`).not.toContain(`theirs-held-${live}`)
      await r.close()
    }
  })

  it("the browser's online event ends a retry wait at once, in the push loop and the live loop; retryAt says when the next try was due", async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const r = hostOver(a, http.url, { live: true, maxBackoffMs: 60_000 })
    await r.synced()
    await http.stop()
    const s = await a.createSession({ id: 'made-offline' })
    await s.append({ type: 'app/x' })
    // Offline until a wait of over 2 s is under way (the fourth or fifth failure).
    await until(() => r.state().status === 'offline' && r.state().retryAt! - Date.now() > 2000, 30_000, 20)
    const due = r.state().retryAt!
    await http.start()
    const back = Date.now()
    r.online()
    await until(() => r.state().status === 'online' && r.state().pending === 0, 5000, 5)
    expect(Date.now() - back).toBeLessThan(1000)
    expect(Date.now()).toBeLessThan(due - 500)
    expect(r.state().retryAt).toBeUndefined()
    expect((await eventsOf(server, 'made-offline')).length).toBe(1)
    // The live loop came back too: a write on the server reaches this store without a push round.
    const there = await server.createSession({ id: 'from-server' })
    await there.append({ type: 'app/z' })
    await until(async () => (await count(a, 'from-server')) === 1, 5000)
  })
})

describe('store.connect through the worker', () => {
  it('a slow headers function is asked once per request, and the state is published only when it changes', async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    await (await a.createSession({ id: 'slow' })).append({ type: 'app/x' })
    let asked = 0
    const r = a.connect(http.url, {
      headers: async () => {
        asked++
        await new Promise((resolve) => setTimeout(resolve, 150))
        return AUTH
      },
      pollMs: 50,
    })
    cleanups.push(() => r.close())
    let published = 0
    r.subscribe(() => void published++)
    await r.whenSynced()
    await r.whenSynced()
    const requests = http.requests.length
    expect(requests).toBeGreaterThanOrEqual(3)
    // One call of the function per request (a busy engine would re-ask or re-tell it many times).
    expect(asked).toBeLessThanOrEqual(requests + 1)
    // Connecting, online, pending and the counts change a few times; a loop would publish thousands.
    expect(published).toBeLessThan(30)
    expect(await eventsOf(server, 'slow')).toHaveLength(1)
  })

  it("aborting connect's signal closes the replication: nothing more is sent", async () => {
    const server = await open('server')
    const http = await serve(server)
    const a = await open('a')
    const abort = new AbortController()
    const r = a.connect(http.url, { headers: AUTH, pollMs: 20, live: true, signal: abort.signal })
    await (await a.createSession({ id: 'before' })).append({ type: 'app/x' })
    await r.whenSynced()
    abort.abort()
    await until(() => http.requests.length > 0 && r.status !== 'connecting')
    await new Promise((resolve) => setTimeout(resolve, 100))
    const sent = http.requests.length
    await (await a.createSession({ id: 'after' })).append({ type: 'app/y' })
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(http.requests.length).toBe(sent)
    expect((await server.listSessions()).map((h) => h.id)).toEqual(['before'])
    await expect(r.whenSynced()).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('a server whose disk is full answers 507 STORAGE_QUOTA_EXCEEDED and writes nothing; the device keeps its events and pushes them once there is room', async () => {
    const server = await open('server')
    let full = true
    // The server's store, refusing writes as a full disk does (test/postgres/full-disk.test.ts has the real one).
    const store = new Proxy(server, {
      get(target, key) {
        if (key === 'applyChanges' && full)
          return async () => {
            throw new SessionfoldError('STORAGE_QUOTA_EXCEEDED', 'no space left on the device')
          }
        const v = Reflect.get(target, key, target) as unknown
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
    const http = await serve(store)
    const a = await open('a')
    await (await a.createSession({ id: 'full' })).append([{ type: 'app/x' }, { type: 'app/y' }])
    const response = await fetch(`${http.url}/push`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify((await a.changesSince(null)).batch),
    })
    expect(response.status).toBe(507)
    expect(await response.json()).toMatchObject({ error: { code: 'STORAGE_QUOTA_EXCEEDED' } })
    const r = a.connect(http.url, { headers: AUTH, pollMs: 20, maxBackoffMs: 200 })
    cleanups.push(() => r.close())
    await until(() => r.state.error?.code === 'STORAGE_QUOTA_EXCEEDED')
    expect(r.status).toBe('offline')
    expect(r.state.error?.status).toBe(507)
    expect(r.pending).toBe(2)
    expect(await server.listSessions()).toEqual([])
    full = false
    await r.whenSynced()
    expect(r.pending).toBe(0)
    expect(await dumpStore(server)).toEqual(await dumpStore(a))
  })

  it('a client moves between server processes that share a cursorSecret without starting over; with another secret it starts over and gets nothing twice', async () => {
    const server = await open('server')
    const one = await serve(server, { cursorSecret: 'shared secret of the deployment' })
    const two = await serve(server, { cursorSecret: 'shared secret of the deployment' })
    const other = await serve(server, { cursorSecret: 'another secret' })
    const s = await server.createSession({ id: 'on-server' })
    await s.append(Array.from({ length: 10 }, (_, i) => ({ type: 'app/n', data: i })))
    const pull = async (base: string, cursor?: string) => {
      const response = await fetch(`${base}/pull${cursor ? `?cursor=${cursor}` : ''}`, { headers: AUTH })
      expect(response.status).toBe(200)
      return (await response.json()) as { batch: ChangeBatch; cursor: string; done: boolean }
    }
    const first = await pull(one.url)
    expect(first.batch.sessions[0]!.events).toHaveLength(10)
    await s.append({ type: 'app/n', data: 10 })
    const next = await pull(two.url, first.cursor)
    expect(next.batch.sessions.map((e) => [e.header.id, e.from, e.events.length])).toEqual([['on-server', 10, 1]])
    const over = await pull(other.url, first.cursor)
    expect(over.batch.sessions.map((e) => [e.header.id, e.from, e.events.length])).toEqual([['on-server', 0, 11]])
    // And a replication moving from one to the other imports each event once.
    const a = await open('a')
    const meta = new Map<string, string>() // the store's own records, where the cursors are kept
    const r1 = hostOver(a, one.url, {}, meta)
    await r1.synced()
    await r1.close()
    await s.append({ type: 'app/n', data: 11 })
    const r2 = hostOver(a, two.url, {}, meta)
    await r2.synced()
    expect(r2.imported.flatMap((b) => b.sessions.map((e) => [e.from, e.events.length]))).toEqual([[11, 1]])
    expect(await dumpStore(a)).toEqual(await dumpStore(server))
  })
})

describe('store.connect where Web Locks refuse the replication lock (an opaque origin)', () => {
  it("its state says so ('error', the refusal) rather than 'connecting' for ever, and it closes", async () => {
    // An engine in this thread that sees Web Locks and BroadcastChannel, as a browser tab's does.
    const scope = globalThis as { navigator?: unknown }
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'navigator')
    Object.defineProperty(globalThis, 'navigator', {
      configurable: true,
      value: { locks: { request: () => Promise.reject(new DOMException('the lock is refused', 'SecurityError')) } },
    })
    try {
      const store = await openStore({ storage: 'memory', worker: false })
      cleanups.push(() => store.close())
      const replication = store.connect('http://127.0.0.1:9/')
      await until(() => replication.status === 'error')
      expect(replication.state.error?.message).toMatch(/the lock is refused/)
      await replication.close()
    } finally {
      if (saved) Object.defineProperty(globalThis, 'navigator', saved)
      else delete scope.navigator
    }
  })
})
