// How createStreamsHandler's engine writes (src/engine/streams.ts, stream-batch.ts,
// stream-writers.ts), over a real fs store and node:http, with plain fetch:
//  - appends that arrive together go out together, each decided in turn: every one lands once,
//    in order, and a producer's requests sent at once land in the order of their Producer-Seq
//    whatever order they arrive in;
//  - a busy stream keeps its writer between requests (past 2 s when no other store asks; idle, up
//    to 1 s, or about 100 ms once another store asks), and lets go of it when the app opens the
//    session for writing or deletes it (or a tree above it), and when the store closes; and after 2 s held, so a
//    handler of another store over the same folder gets its turn;
//  - the producer state is committed with the append: after a restart, a retry is a duplicate;
//  - over an encrypted store: streams and their forks read back exactly, nothing of them is
//    readable at rest, and verify finds every session whole.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'
import { eventsOf } from '../support/helpers'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-streams-writes-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function serve(store: Store): Promise<{ base: string; stop(): Promise<void> }> {
  const server: Server = createServer(toNodeListener(createStreamsHandler({ store, authorize: () => true, longPollMs: 1000 })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const stop = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  cleanups.push(stop)
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream`, stop }
}

async function open(key?: Uint8Array): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, 'store'), ...(key ? { encryption: { key } } : {}) })
  cleanups.push(() => store.close())
  return store
}

const json = { 'content-type': 'application/json' }
const producer = (id: string, epoch: number, seq: number) => ({ ...json, 'producer-id': id, 'producer-epoch': String(epoch), 'producer-seq': String(seq) })

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) })
  await res.arrayBuffer()
  return res.status
}

async function messages(url: string): Promise<unknown[]> {
  const res = await fetch(`${url}?offset=-1`)
  expect(res.status).toBe(200)
  return (await res.json()) as unknown[]
}

describe('stream writes', () => {
  it('lands appends sent at once, each once; a producer’s in the order of its Producer-Seq, whatever order they arrive in', async () => {
    const store = await open()
    const { base } = await serve(store)
    const url = `${base}/together`
    expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
    // 4 producers, 15 requests each, all sent at once, each producer's in reverse order of seq.
    const sends: Promise<number>[] = []
    for (let n = 14; n >= 0; n--) for (let p = 0; p < 4; p++) sends.push(post(url, producer(`p${p}`, 0, n), { p, n }))
    // And 20 without a producer, at the same time.
    for (let i = 0; i < 20; i++) sends.push(post(url, json, { free: i }))
    const statuses = await Promise.all(sends)
    expect(statuses.filter((s) => s !== 200 && s !== 204)).toEqual([])
    const got = (await messages(url)) as { p?: number; n?: number; free?: number }[]
    expect(got).toHaveLength(80)
    for (let p = 0; p < 4; p++) expect(got.filter((m) => m.p === p).map((m) => m.n)).toEqual([...Array(15).keys()])
    expect(
      got
        .filter((m) => m.free !== undefined)
        .map((m) => m.free)
        .sort((a, b) => a! - b!),
    ).toEqual([...Array(20).keys()])

    // A seq that skips ahead, with nothing to fill the gap, is refused (409) once it waited, and writes nothing.
    const res = await fetch(url, { method: 'POST', headers: producer('p0', 0, 20), body: JSON.stringify({ p: 0, n: 20 }) })
    expect(res.status).toBe(409)
    expect(res.headers.get('producer-expected-seq')).toBe('15')
    expect(await messages(url)).toHaveLength(80)
  })

  it('lets go of a busy stream’s writer when the app opens the session for writing, deletes it (or a tree above it), or the store closes', async () => {
    const store = await open()
    const { base, stop } = await serve(store)
    const url = `${base}/held`
    await (await store.createSession({ id: 'held' })).close()
    expect(await post(url, json, { type: 'turn/start' })).toBe(204)
    // Right after an append through the protocol, the app writes to the same session here.
    const session = await store.openSession('held')
    await session.append({ type: 'note', data: 'by the app' })
    await session.close()
    expect(await post(url, json, [{ type: 'turn/end' }])).toBe(204)
    expect((await eventsOf(store, 'held')).map((e) => e.type)).toEqual(['turn/start', 'note', 'turn/end'])
    // Deleting it right after an append.
    expect(await post(url, json, { type: 'turn/start' })).toBe(204)
    await store.deleteSession('held')
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(404)
    // Deleting a tree right after an append to a descendant's stream (found by the delete, not named).
    const parent = await store.createSession({ id: 'parent' })
    const child = await parent.spawn({ mode: 'one-shot', id: 'child' })
    await child.close()
    await parent.close()
    expect(await post(`${base}/child`, json, { type: 'turn/start' })).toBe(204)
    expect(await store.deleteSession('parent', { tree: true })).toBeUndefined()
    expect((await fetch(`${base}/child`, { method: 'HEAD' })).status).toBe(404)
    // Closing the store right after an append lets go of the lock: another store opens the session for writing.
    expect((await fetch(`${base}/last`, { method: 'PUT', headers: json })).status).toBe(201)
    expect(await post(`${base}/last`, json, { n: 1 })).toBe(204)
    await stop()
    await store.close()
    const again = await open()
    const writer = await again.openSession('last')
    await writer.close()
  })

  it('answers 503 with Retry-After, writing nothing, when the app keeps the session open for writing past the 10 s wait; then appends once it closed', async () => {
    const store = await open()
    const { base } = await serve(store)
    const url = `${base}/busy`
    const session = await store.createSession({ id: 'busy' })
    await session.append({ type: 'turn/start' })
    const t0 = Date.now()
    const res = await fetch(url, { method: 'POST', headers: json, body: JSON.stringify({ type: 'note' }) })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('1')
    expect(Date.now() - t0).toBeGreaterThanOrEqual(9_000)
    expect((await eventsOf(store, 'busy')).map((e) => e.type)).toEqual(['turn/start'])
    // A POST waiting when the app lets go lands.
    const waiting = post(url, json, { type: 'turn/end' })
    await new Promise((resolve) => setTimeout(resolve, 300))
    await session.close()
    expect(await waiting).toBe(204)
    expect((await eventsOf(store, 'busy')).map((e) => e.type)).toEqual(['turn/start', 'turn/end'])
  }, 30_000)

  it('hands a busy stream over to another store on the same folder: its writer is let go after 2 s held', async () => {
    const a = await open()
    const b = await open()
    const served = [await serve(a), await serve(b)]
    const url = (i: number) => `${served[i]!.base}/shared`
    expect((await fetch(url(0), { method: 'PUT', headers: json })).status).toBe(201)
    // Store a appends back to back (its writer never idle for 100 ms) until b's append is answered.
    let answered = false
    const busy = (async () => {
      let n = 0
      while (!answered) expect(await post(url(0), json, { from: 'a', n: n++ })).toBe(204)
      return n
    })()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const t0 = Date.now()
    const status = await post(url(1), json, { from: 'b' })
    const waited = Date.now() - t0
    answered = true
    const fromA = await busy
    expect(status).toBe(204) // not 503 after the 10 s wait
    expect(waited).toBeLessThan(6_000)
    const got = (await messages(url(0))) as { from: string }[]
    expect(got.filter((m) => m.from === 'b')).toHaveLength(1)
    expect(got.filter((m) => m.from === 'a')).toHaveLength(fromA)
  }, 30_000)

  it('keeps a busy stream’s writer past 2 s when no other store asks for it: its lock is never let go meanwhile', async () => {
    const a = await open()
    const { base } = await serve(a)
    expect((await fetch(`${base}/kept`, { method: 'PUT', headers: json })).status).toBe(201)
    expect(await post(`${base}/kept`, json, { n: -1 })).toBe(204)
    const lock = join(dir, 'store', 'locks', 's-kept.lock')
    const first = await stat(lock)
    // Appends back to back (the writer never idle for 100 ms) for 2.6 s: past one HOLD_MS.
    const t0 = Date.now()
    let n = 0
    while (Date.now() - t0 < 2_600) expect(await post(`${base}/kept`, json, { n: n++ })).toBe(204)
    // Let go and taken again, the lock would be another file (made anew and linked into place).
    expect((await stat(lock)).ino).toBe(first.ino)
    expect(await messages(`${base}/kept`)).toHaveLength(n + 1)
  })

  it('keeps an idle stream’s writer up to 1 s while no other store asks for it, and lets go of it soon after one does', async () => {
    const a = await open()
    const { base } = await serve(a)
    const lock = (id: string) => join(dir, 'store', 'locks', `s-${id}.lock`)
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    for (const id of ['idle', 'asked']) {
      expect((await fetch(`${base}/${id}`, { method: 'PUT', headers: json })).status).toBe(201)
      expect(await post(`${base}/${id}`, json, { n: 0 })).toBe(204)
    }
    const first = await stat(lock('asked'))
    // Idle for 300 ms (past the 100 ms after which another store's ask is heeded): still held.
    await sleep(300)
    expect((await stat(lock('asked'))).ino).toBe(first.ino)
    const b = await open()
    expect(await post(`${base}/asked`, json, { n: 1 })).toBe(204)
    // Another store asks (its open is refused, which asks): let go within about 100 ms of it,
    // long before the 1 s an unasked writer is kept.
    const t0 = Date.now()
    for (;;) {
      try {
        await (await b.openSession('asked')).close()
        break
      } catch (err) {
        expect(err).toMatchObject({ code: 'SESSION_LOCKED' })
        await sleep(20)
      }
    }
    expect(Date.now() - t0).toBeLessThan(850) // an unasked writer would be let go at 1 s after the write at the earliest
    // Nobody asked for 'idle': let go once idle for 1 s.
    await sleep(1_000)
    await expect(stat(lock('idle'))).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await messages(`${base}/asked`)).toHaveLength(2)
  })

  it('keeps the producer state with the append: after a restart a retry is a duplicate, the next seq lands', async () => {
    let store = await open()
    let served = await serve(store)
    const url = () => `${served.base}/restart`
    expect((await fetch(url(), { method: 'PUT', headers: json })).status).toBe(201)
    expect(await post(url(), producer('w', 3, 0), { n: 0 })).toBe(200)
    expect(await post(url(), producer('w', 3, 1), { n: 1 })).toBe(200)
    await served.stop()
    await store.close()
    store = await open()
    served = await serve(store)
    const retry = await fetch(url(), { method: 'POST', headers: producer('w', 3, 1), body: JSON.stringify({ n: 1 }) })
    expect(retry.status).toBe(204) // a duplicate: nothing written
    expect(retry.headers.get('producer-seq')).toBe('1')
    expect(await post(url(), producer('w', 3, 2), { n: 2 })).toBe(200)
    expect(await post(url(), producer('w', 2, 3), { n: 3 })).toBe(403) // a stale epoch
    expect(await messages(url())).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }])
  })

  it('resets a TTL’s countdown on what it takes only: a refused or duplicate append leaves it where it was', async () => {
    const store = await open()
    const { base } = await serve(store)
    const url = `${base}/ttl`
    expect((await fetch(url, { method: 'PUT', headers: { ...json, 'stream-ttl': '3600' } })).status).toBe(201)
    const touched = async () => {
      const files = (await readdir(join(dir, 'store'), { recursive: true })).filter((f) => f.endsWith('stream-touched'))
      expect(files).toHaveLength(1)
      return readFile(join(dir, 'store', files[0]!), 'utf8')
    }
    expect(await post(url, producer('t', 0, 0), { n: 0 })).toBe(200)
    const first = await touched()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await post(url, { 'content-type': 'text/plain' }, 'not json')).toBe(409) // another content type
    expect(await post(url, json, [])).toBe(400) // an empty array
    expect(await post(url, producer('t', 0, 5), { n: 5 })).toBe(409) // a gap
    expect(await post(url, producer('t', 0, 0), { n: 0 })).toBe(204) // a duplicate
    expect(await touched()).toBe(first)
    expect(await post(url, producer('t', 0, 1), { n: 1 })).toBe(200)
    const ms = (text: string) => Number(text.replace(/^\D+/, ''))
    expect(ms(await touched())).toBeGreaterThan(ms(first))
  })

  it('answers a Fetch server other than toNodeListener (Deno, Bun, workers) with the platform’s own Responses', async () => {
    const store = await open()
    const handler = createStreamsHandler({ store, authorize: () => true })
    const base = 'http://127.0.0.1/v1/stream'
    const asked = [
      new Request(`${base}/real`, { method: 'OPTIONS' }),
      new Request(`${base}/real`, { method: 'HEAD' }), // 404: no such stream yet
      new Request(`${base}/real`, { method: 'PUT', headers: json }),
      new Request(`${base}/real`, { method: 'POST', headers: json, body: '{"n":1}' }),
      new Request(`${base}/real?offset=-1`),
    ]
    const statuses: number[] = []
    for (const request of asked) {
      const answer = await handler(request)
      // A native check of a Response's internals: the prototype's own getters and methods on it.
      expect(Object.getPrototypeOf(answer)).toBe(Response.prototype)
      const copy = Response.prototype.clone.call(answer)
      statuses.push(Object.getOwnPropertyDescriptor(Response.prototype, 'status')!.get!.call(answer) as number)
      expect(copy.headers.get('access-control-allow-origin')).toBe('*')
    }
    expect(statuses).toEqual([204, 404, 201, 204, 200])
    expect(await (await handler(new Request(`${base}/real?offset=-1`))).json()).toEqual([{ n: 1 }])
  })

  it('answers a CORS preflight with the methods and the protocol’s headers allowed; other answers expose the protocol’s headers and carry its length', async () => {
    const store = await open()
    const { base } = await serve(store)
    const url = `${base}/cors`
    const preflight = await fetch(url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'producer-id, producer-epoch, producer-seq',
      },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*')
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST')
    for (const name of ['producer-id', 'producer-epoch', 'producer-seq', 'stream-seq', 'if-none-match'])
      expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(name)
    expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
    const appended = await fetch(url, { method: 'POST', headers: producer('c', 0, 0), body: JSON.stringify({ n: 0 }) })
    expect(appended.status).toBe(200)
    expect(appended.headers.get('access-control-allow-origin')).toBe('*')
    for (const name of ['stream-next-offset', 'producer-epoch', 'producer-seq'])
      expect(appended.headers.get('access-control-expose-headers')?.toLowerCase()).toContain(name)
    // What only a preflight's answer is read for does not ride on every answer.
    expect(appended.headers.get('access-control-allow-methods')).toBeNull()
    const read = await fetch(`${url}?offset=-1`)
    const body = await read.text()
    expect([read.headers.get('content-length'), body]).toEqual([String(Buffer.byteLength(body)), '[{"n":0}]'])
  })

  it('serves streams over an encrypted store: read back exactly, forks included, nothing readable at rest, verify finds them whole', async () => {
    const key = new Uint8Array(32).fill(7)
    const store = await open(key)
    const { base } = await serve(store)
    const url = `${base}/secret`
    expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
    // One POST of 600 messages (sealed in blocks), then small ones (a block each).
    const many = Array.from({ length: 600 }, (_, n) => ({ n, text: `confidential note ${n}` }))
    expect(await post(url, json, many)).toBe(204)
    for (let n = 600; n < 610; n++) expect(await post(url, producer('w', 0, n - 600), { n, text: `confidential note ${n}` })).toBe(200)
    const all = [...many, ...Array.from({ length: 10 }, (_, i) => ({ n: 600 + i, text: `confidential note ${600 + i}` }))]
    expect(await messages(url)).toEqual(all)
    // From an offset inside a block.
    const head = await fetch(url, { method: 'HEAD' })
    const tail = head.headers.get('stream-next-offset')!
    const at = (n: number) => `${String(n).padStart(16, '0')}_${'0'.repeat(16)}`
    expect(tail).toBe(at(610))
    expect(await (await fetch(`${url}?offset=${at(123)}`)).json()).toEqual(all.slice(123))
    // A fork at 300: its own stream, the source's first 300 messages, then its own.
    const fork = `${base}/secret-fork`
    expect((await fetch(fork, { method: 'PUT', headers: { ...json, 'stream-forked-from': '/v1/stream/secret', 'stream-fork-offset': at(300) } })).status).toBe(
      201,
    )
    expect(await post(fork, json, { n: 'fork' })).toBe(204)
    expect(await messages(fork)).toEqual([...all.slice(0, 300), { n: 'fork' }])
    await store.close()
    // At rest: no message text in any file of the store.
    const files = (await readdir(join(dir, 'store'), { recursive: true, withFileTypes: true })).filter((f) => f.isFile())
    expect(files.length).toBeGreaterThan(0)
    for (const f of files) expect((await readFile(join(f.parentPath, f.name))).includes('confidential')).toBe(false)
    const again = await open(key)
    const report = await again.verify()
    expect(report.damaged).toEqual([])
    expect(report.sessions).toBe(2)
    expect(report.events).toBe(610 + 301)
  })
})
