// Contract: §16 Durable Streams — what outside clients do to a store's sessions through
// createStreamsHandler (a real node:http server on 127.0.0.1 over an fs store): the official
// client (@durable-streams/client) writes with its IdempotentProducer through lost answers and
// reads catch-up, SSE and long-poll; plain fetch (what curl does) appends turn/start and
// turn/end to a session the SDK made while an observe in another process sees subagentTiming
// change; authorization per stream; hostile paths, offsets, headers and bodies are refused
// with nothing written (not to the sessions, nor to the stream records beside their logs,
// nor to any other file of the store's folder).
import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DurableStream, IdempotentProducer, createFetchWithBackoff, stream } from '@durable-streams/client'
import { openStore, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener, type Authorize } from '../../src/sync/server/index'
import { dumpStore, eventsOf, until } from '../support/helpers'
import { spawnFixture } from '../support/fixture-process'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-streams-clients-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

/** user1 reads and writes streams named u1-…; reader reads them; anyone else is nobody. */
const authorize: Authorize = ({ request, sessionId, access }) => {
  const token = request.headers.get('authorization')
  if (token === 'Bearer user1') return sessionId?.startsWith('u1-') === true
  if (token === 'Bearer reader') return access === 'read' && sessionId?.startsWith('u1-') === true
  return 'unauthenticated'
}
const USER1 = { authorization: 'Bearer user1' }

/** Every file and folder under `root`: a file's path with a hash of its bytes, a folder's path with 'folder'. */
async function folderOf(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name)
    const name = path.slice(root.length + 1)
    // A file renamed away meanwhile (a temp file) reads as such: the folder was not settled.
    if (entry.isDirectory()) out[`${name}/`] = 'folder'
    else
      out[name] = await readFile(path).then(
        (bytes) => createHash('sha256').update(bytes).digest('hex'),
        () => 'gone while read',
      )
  }
  return out
}

/**
 * The store's folder once nothing is under way, compared whole (no file left out). What changes
 * there without a write request comes and goes, so it is waited out rather than left out:
 * - `locks/<folder>.lock`: the handler keeps a stream's writer lock a second (KEEP_MS,
 *   src/engine/stream-writers.ts) after its last write, and a refused append is decided under
 *   that lock too (its producer state, closure and Stream-Seq are read there): the lock file
 *   comes and goes. Settled means no lock file.
 * - after the write that made the stream (the PUT), its writer's let-go writes checkpoint.json
 *   and summary.json, and the session index's pass (a second later, LAZY_MS) its entries,
 *   `index/state` and `feed.id`. Settled means nothing changed for a while after that.
 * A lock file that stays, or a file still changing, fails the wait.
 */
async function settledFolder(root: string, quietMs = 1200, ms = 20_000): Promise<Record<string, string>> {
  let last = await folderOf(root)
  let since = Date.now()
  for (const end = Date.now() + ms; Date.now() < end; ) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    const now = await folderOf(root).catch(() => ({ '?': 'a folder went while read' }))
    if (JSON.stringify(now) !== JSON.stringify(last)) [last, since] = [now, Date.now()]
    else if (Date.now() - since >= quietMs && !Object.keys(now).some((p) => p.startsWith('locks/') && p !== 'locks/')) return now
  }
  throw new Error(`the store's folder did not settle in ${ms} ms: ${JSON.stringify(Object.keys(last))}`)
}

async function serve(): Promise<{ store: Store; base: string }> {
  const store = await openStore({ storage: 'fs', dir: join(dir, 'store') })
  cleanups.push(() => store.close())
  const server: Server = createServer(toNodeListener(createStreamsHandler({ store, authorize, longPollMs: 1000 })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return { store, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream` }
}

describe('the official client', () => {
  it('writes with IdempotentProducer through lost answers (each message once), and reads catch-up, SSE and long-poll', async () => {
    const { store, base } = await serve()
    const url = `${base}/u1-chat`
    const handle = await DurableStream.create({ url, headers: USER1, contentType: 'application/json' })
    // Every fifth POST reaches the server and its answer is lost: the producer sends it again.
    let posts = 0
    const lossy: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (init?.method === 'POST' && ++posts % 5 === 0) throw new TypeError('fetch failed (a test fault: the answer was lost)')
      return response
    }
    const errors: unknown[] = []
    // The client's own retries (its backoff around fetch): a batch whose answer was lost goes again, with the same Producer-Seq.
    const retrying = createFetchWithBackoff(lossy, { initialDelay: 5, maxDelay: 50, multiplier: 2, maxRetries: 5 })
    const producer = new IdempotentProducer(handle, 'writer-1', { fetch: retrying, lingerMs: 2, maxBatchBytes: 512, onError: (err) => errors.push(err) })
    const sent = Array.from({ length: 300 }, (_, i) => ({ n: i, text: `message ${i}` }))
    for (const m of sent) producer.append(JSON.stringify(m))
    await producer.flush()
    expect(errors).toEqual([])
    expect(posts).toBeGreaterThan(10) // batches were lost and sent again
    expect(await (await stream({ url, headers: USER1, live: false })).json()).toEqual(sent)
    // The session holds each message once, as an event.
    expect((await eventsOf(store, 'u1-chat')).map((e) => e.data)).toEqual(sent)

    for (const live of ['sse', 'long-poll'] as const) {
      const head = await handle.head()
      if (!head.exists) throw new Error('the stream is there')
      const { offset } = head
      const res = await stream<{ n: number }>({ url, headers: USER1, offset, live })
      const seen: number[] = []
      const stop = res.subscribeJson(async (batch) => {
        for (const item of batch.items) seen.push(item.n)
      })
      await handle.append(JSON.stringify({ n: 1000 }))
      await handle.append(JSON.stringify({ n: 1001 }))
      await handle.append(JSON.stringify({ n: 1002 }))
      await until(() => seen.length === 3, 10_000)
      expect(seen, live).toEqual([1000, 1001, 1002])
      stop()
      res.cancel()
    }
    await producer.detach()
  })

  it('reads a session the SDK wrote as its events, live', async () => {
    const { store, base } = await serve()
    const s = await store.createSession({ id: 'u1-agent' })
    await s.append([
      { type: 'turn/start', data: { by: 'sdk' } },
      { type: 'msg', data: { text: 'hi' } },
    ])
    const res = await stream<{ seq: number; type: string; data: unknown }>({ url: `${base}/u1-agent`, headers: USER1, live: 'sse' })
    const seen: string[] = []
    const stop = res.subscribeJson(async (batch) => {
      for (const e of batch.items) seen.push(`${e.seq} ${e.type}`)
    })
    await until(() => seen.length === 2, 10_000)
    await s.append({ type: 'turn/end' })
    await until(() => seen.length === 3, 10_000)
    expect(seen).toEqual(['0 turn/start', '1 msg', '2 turn/end'])
    stop()
    res.cancel()
    await s.close()
    // A fork of it through the protocol is a fork session; the same PUT again is 200, another 409.
    const fork = (offset: string) =>
      fetch(`${base}/u1-agent-fork`, { method: 'PUT', headers: { ...USER1, 'stream-forked-from': '/v1/stream/u1-agent', 'stream-fork-offset': offset } })
    expect((await fork('0000000000000002_0000000000000000')).status).toBe(201)
    expect((await fork('0000000000000002_0000000000000000')).status).toBe(200)
    expect((await fork('0000000000000001_0000000000000000')).status).toBe(409)
    const header = (await store.listSessions()).find((h) => h.id === 'u1-agent-fork')
    expect(header).toMatchObject({ origin: 'fork', forkedFrom: 'u1-agent', seedLength: 2 })
  })
})

describe('fetch, as curl does it, with no client library', () => {
  it('appends turn/start and turn/end to a session while an observe in another process sees subagentTiming change', async () => {
    const storeDir = join(dir, 'shared')
    const here = await openStore({ storage: 'fs', dir: storeDir })
    cleanups.push(() => here.close())
    const made = await here.createSession({ id: 'agent-1' })
    await made.close()
    const server = spawnFixture('streams-server-process.ts', [storeDir])
    cleanups.push(async () => {
      server.process.stdin?.end()
      await Promise.race([server.exited, new Promise((resolve) => setTimeout(resolve, 5000))])
      server.process.kill()
    })
    const port = Number((await server.line()).replace('port ', ''))
    const url = `http://127.0.0.1:${port}/v1/stream/agent-1`
    const view = await here.observe('agent-1')
    const timings: unknown[] = []
    view.projections.subscribe('subagentTiming', (v) => void timings.push(v))

    const post = (body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const started = await post({ type: 'turn/start', data: { by: 'python' }, time: 1000 })
    expect(started.status).toBe(204)
    expect(started.headers.get('stream-next-offset')).toBe('0000000000000001_0000000000000000')
    await until(() => view.projections.get('subagentTiming')?.runningSince === 1000, 10_000)
    const ended = await post([
      { type: 'note', data: 'thinking' },
      { type: 'turn/end', time: 1750 },
    ])
    expect(ended.status).toBe(204)
    await until(() => view.projections.get('subagentTiming')?.settledMs === 750, 10_000)
    expect(view.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 750, runningSince: null })
    expect(timings.length).toBeGreaterThanOrEqual(3)

    // Read back as the protocol shows a session: each message an event.
    const read = await fetch(`${url}?offset=-1`)
    expect(read.headers.get('content-type')).toBe('application/json')
    expect(await read.json()).toEqual([
      { seq: 0, type: 'turn/start', data: { by: 'python' }, time: 1000 },
      { seq: 1, type: 'note', data: 'thinking', time: expect.any(Number) },
      { seq: 2, type: 'turn/end', data: null, time: 1750 },
    ])
    // What is not an event is refused, and nothing is written.
    const before = await dumpStore(here)
    for (const body of [{ text: 'not an event' }, [{ type: 'ok' }, 42], { type: 7 }, { type: 'x', extra: 1 }, [], { type: 'x', data: 1, time: -5 }]) {
      expect((await post(body)).status, JSON.stringify(body)).toBe(400)
    }
    expect(await dumpStore(here)).toEqual(before)
    await view.close()
  })
})

describe('what is refused, with nothing written', () => {
  it('asks authorize per stream: read for GET and HEAD, write for PUT, POST and DELETE', async () => {
    const { store, base } = await serve()
    expect((await fetch(`${base}/u1-a`, { method: 'PUT', headers: { ...USER1, 'content-type': 'text/plain' }, body: 'one' })).status).toBe(201)
    const before = await dumpStore(store)
    const files = await settledFolder(join(dir, 'store'))
    const reader = { authorization: 'Bearer reader' }
    expect((await fetch(`${base}/u1-a?offset=-1`, { headers: reader })).status).toBe(200)
    expect((await fetch(`${base}/u1-a`, { method: 'HEAD', headers: reader })).status).toBe(200)
    expect((await fetch(`${base}/u1-a`, { method: 'POST', headers: { ...reader, 'content-type': 'text/plain' }, body: 'x' })).status).toBe(403)
    expect((await fetch(`${base}/u1-a`, { method: 'DELETE', headers: reader })).status).toBe(403)
    expect((await fetch(`${base}/u1-b`, { method: 'PUT', headers: { ...reader, 'content-type': 'text/plain' } })).status).toBe(403)
    expect((await fetch(`${base}/u2-a`, { method: 'PUT', headers: { ...USER1, 'content-type': 'text/plain' } })).status).toBe(403)
    expect((await fetch(`${base}/u1-a?offset=-1`)).status).toBe(401)
    expect((await fetch(`${base}/u1-a?offset=-1&live=sse`, { headers: { authorization: 'Bearer nobody' } })).status).toBe(401)
    // A fork needs write on the fork (and the source is read through it): not of another's stream.
    expect((await fetch(`${base}/u2-fork`, { method: 'PUT', headers: { ...USER1, 'stream-forked-from': '/v1/stream/u1-a' } })).status).toBe(403)
    expect(await dumpStore(store)).toEqual(before)
    expect(await settledFolder(join(dir, 'store'))).toEqual(files)
  })

  it('refuses hostile paths, offsets, headers and bodies', async () => {
    const { store, base } = await serve()
    const put = (path: string, headers: Record<string, string> = {}, body?: string) =>
      fetch(`${base}/${path}`, {
        method: 'PUT',
        headers: { ...USER1, 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body }),
      })
    expect((await put('u1-s', {}, '[{"a":1}]')).status).toBe(201)
    const before = await dumpStore(store)
    const files = await settledFolder(join(dir, 'store'))
    const root = base.replace('/v1/stream', '')
    const statuses = async (requests: [string, RequestInit][]) => Promise.all(requests.map(async ([url, init]) => (await fetch(url, init)).status))
    expect(
      await statuses([
        [`${base}/u1-..%2F..%2Fetc`, { method: 'PUT', headers: USER1 }],
        [`${base}/u1-a/b`, { method: 'PUT', headers: USER1 }],
        [`${base}/u1-%00`, { method: 'PUT', headers: USER1 }],
        [`${base}/u1-${'x'.repeat(200)}`, { method: 'PUT', headers: USER1 }],
        [`${base}/u1-%E0%A4%A`, { method: 'GET', headers: USER1 }],
      ]),
    ).toEqual([400, 400, 400, 400, 400])
    expect((await fetch(`${root}/elsewhere/u1-s`, { headers: USER1 })).status).toBe(404)
    // Offsets that are not ours, and reads that make no sense.
    for (const q of [
      'offset=abc',
      'offset=1',
      'offset=0000000000000009_0000000000000000',
      'offset=-2',
      'offset=',
      'offset=a&offset=b',
      'live=sse',
      'offset=-1&live=forever',
    ]) {
      expect((await fetch(`${base}/u1-s?${q}`, { headers: USER1 })).status, q).toBe(400)
    }
    // Headers.
    const post = (headers: Record<string, string>, body = '{"b":2}') =>
      fetch(`${base}/u1-s`, { method: 'POST', headers: { ...USER1, 'content-type': 'application/json', ...headers }, body })
    for (const [headers, status] of [
      [{ 'producer-id': 'p' }, 400],
      [{ 'producer-id': '', 'producer-epoch': '0', 'producer-seq': '0' }, 400],
      [{ 'producer-id': 'p', 'producer-epoch': '-1', 'producer-seq': '0' }, 400],
      [{ 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '1e3' }, 400],
      [{ 'producer-id': 'p', 'producer-epoch': '99999999999999999999', 'producer-seq': '0' }, 400],
      [{ 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '3' }, 409],
      [{ 'content-type': 'text/plain' }, 409],
    ] as const) {
      expect((await post(headers)).status, JSON.stringify(headers)).toBe(status)
    }
    expect((await put('u1-t', { 'stream-ttl': '+5' })).status).toBe(400)
    expect((await put('u1-t', { 'stream-ttl': '5', 'stream-expires-at': '2030-01-01T00:00:00Z' })).status).toBe(400)
    expect((await put('u1-t', { 'stream-expires-at': 'tomorrow' })).status).toBe(400)
    expect((await put('u1-t', { 'stream-forked-from': '/v1/stream/u1-s', 'stream-fork-offset': '../1' })).status).toBe(400)
    expect((await put('u1-t', { 'stream-forked-from': '/v1/stream/u1-s', 'stream-fork-offset': '0000000000000009_0000000000000000' })).status).toBe(400)
    expect((await put('u1-t', { 'stream-fork-offset': '0000000000000000_0000000000000000' })).status).toBe(400)
    // Bodies: not JSON, an empty array, an empty body, over the bound.
    for (const body of ['{"b":', '[]', '', '\u00ff\u00fe']) expect((await post({}, body)).status, body).toBe(400)
    const big = await fetch(`${base}/u1-s`, {
      method: 'POST',
      headers: { ...USER1, 'content-type': 'application/json' },
      body: `["${'x'.repeat(17 * 1024 * 1024)}"]`,
    })
    expect(big.status).toBe(413)
    const oneTooLarge = await post({}, JSON.stringify({ text: 'y'.repeat(2 * 1024 * 1024) }))
    expect(oneTooLarge.status).toBe(413)
    expect(await dumpStore(store)).toEqual(before)
    // Nor the stream's record beside its log (producers, Stream-Seq, closure), nor any other file.
    expect(await settledFolder(join(dir, 'store'))).toEqual(files)
  })
})
