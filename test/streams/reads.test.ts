// How createStreamsHandler answers a catch-up read (src/streams/server/reads.ts), over a real fs
// store and node:http, with plain fetch:
//  - a catch-up longer than one page goes out as one answer, every message once and in order, to
//    the stream's length when the answer began; over a plain and an encrypted store;
//  - an answer that cannot go on after its headers left breaks the connection off, so a client
//    sees a failed transfer and never a short body that ended well;
//  - the records a read skips without making their text (a block's pointers) are still checked:
//    a damaged one is a refused read, nothing of the stream;
//  - a HEAD while a stream is appended to is never behind an append answered, and reads the
//    stream again once the app wrote to its session.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'
import type { StreamRequest } from '../../src/core/streams'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-streams-reads-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function serve(store: Pick<Store, 'streamRequest'>): Promise<string> {
  const server: Server = createServer(toNodeListener(createStreamsHandler({ store: store as Store, authorize: () => true })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream`
}

async function open(key?: Uint8Array): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, 'store'), ...(key ? { encryption: { key } } : {}) })
  cleanups.push(() => store.close())
  return store
}

const json = { 'content-type': 'application/json' }
/** Message `n`: about 110 bytes of JSON, as an agent's small events are. */
const message = (n: number) => ({ n, kind: 'tick', text: `the agent read file ${n} and proposed a patch to it` })

/** Creates `url` and appends messages [0, count) in POSTs of 1,000; the offset after the first POST. */
async function fill(url: string, count: number): Promise<string> {
  expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
  let afterFirst = ''
  for (let at = 0; at < count; at += 1000) {
    const res = await fetch(url, {
      method: 'POST',
      headers: json,
      body: JSON.stringify(Array.from({ length: Math.min(1000, count - at) }, (_, k) => message(at + k))),
    })
    expect(res.status).toBe(204)
    if (at === 0) afterFirst = res.headers.get('stream-next-offset')!
  }
  return afterFirst
}

describe('catch-up reads', () => {
  for (const encrypted of [false, true])
    it(`answers a catch-up of several pages in one answer: every message once, in order, to the tail (${encrypted ? 'encrypted' : 'plain'} store)`, async () => {
      const store = await open(encrypted ? new Uint8Array(32).fill(3) : undefined)
      const url = `${await serve(store)}/long`
      const count = 30_000 // about 3.3 MB of JSON: pages of 1 MiB, so four pages
      const afterFirst = await fill(url, count)
      const tail = (await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset')

      const res = await fetch(`${url}?offset=-1`)
      expect(res.status).toBe(200)
      expect(res.headers.get('stream-next-offset')).toBe(tail)
      expect(res.headers.get('stream-up-to-date')).toBe('true')
      const all = (await res.json()) as { n: number }[]
      expect(all).toHaveLength(count)
      all.forEach((m, i) => expect(m).toEqual(message(i)))

      // From an offset inside the stream: the rest, whole.
      const rest = await fetch(`${url}?offset=${afterFirst}`)
      expect(rest.headers.get('stream-next-offset')).toBe(tail)
      const later = (await rest.json()) as { n: number }[]
      expect(later.map((m) => m.n)).toEqual(Array.from({ length: count - 1000 }, (_, i) => 1000 + i))

      // The answer's ETag is known before its body: asked again with it, 304 and no body.
      const again = await fetch(`${url}?offset=-1`, { headers: { 'if-none-match': res.headers.get('etag')! } })
      expect(again.status).toBe(304)
      expect(await again.text()).toBe('')
    })

  it('reads no further than `to`, however long the stream is by then', async () => {
    const store = await open()
    const url = `${await serve(store)}/short`
    await fill(url, 10)
    const answer = await store.streamRequest({ op: 'read', id: 'short', from: 2, to: 5, maxBytes: 1 << 20 })
    expect(answer).toMatchObject({ status: 'read', from: 2, count: 3 })
    expect(JSON.parse((answer as { body: string }).body)).toEqual([2, 3, 4].map(message))
  })

  for (const [how, failing] of [
    ['its page cannot be read (the store fails)', () => Promise.reject(new Error('the disk went away'))],
    ['the stream is deleted meanwhile', () => Promise.resolve({ status: 'not-found' as const })],
  ] as const)
    it(`breaks an answer off when ${how} after its headers left: the client's transfer fails, no short body`, async () => {
      const store = await open()
      let reads = 0
      const url = `${await serve({
        streamRequest: (request: StreamRequest) => {
          if (request.op === 'read' && request.from > 0 && ++reads === 2) return failing() as never
          return store.streamRequest(request)
        },
      })}/broken`
      await fill(url, 30_000)
      const res = await fetch(`${url}?offset=-1`)
      expect(res.status).toBe(200)
      await expect(res.text()).rejects.toThrow()
      // The server answers the next request as ever.
      expect((await fetch(url, { method: 'HEAD' })).status).toBe(200)
    })

  for (const live of ['sse', 'long-poll'])
    it(`stops a ${live} read when its client goes away: no more reads of the store for it`, async () => {
      const store = await open()
      let reads = 0
      const url = `${await serve({
        streamRequest: (request: StreamRequest) => {
          if (request.op === 'read' || request.op === 'head') reads++
          return store.streamRequest(request)
        },
      })}/watched`
      await fill(url, 1)
      const tail = (await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset')
      const gone = new AbortController()
      // A long-poll answers only at its end (20 s): not awaited. An SSE answer's headers come at once.
      const answer = fetch(`${url}?offset=${tail}&live=${live}`, { signal: gone.signal }).then((res) => res.status)
      answer.catch(() => {})
      if (live === 'sse') expect(await answer).toBe(200)
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
      await pause(400)
      expect(reads, 'the reader looks again every pollMs (100 ms) while it waits').toBeGreaterThan(3)
      gone.abort()
      await pause(200)
      const after = reads
      await pause(600)
      expect(reads).toBe(after)
    })

  it('still checks the records a read skips (a block’s pointers): a damaged one is refused, nothing of the stream given', async () => {
    const store = await open()
    const url = `${await serve(store)}/damaged`
    await fill(url, 600)
    expect((await fetch(`${url}?offset=-1`)).status).toBe(200)
    await store.close()

    // One byte of seq 100's record (a pointer to its block: the codec skips its text) changed in place.
    const log = join(dir, 'store', 'sessions', 's-damaged', 'events.log')
    const bytes = await readFile(log)
    const at = bytes.indexOf('{"seq":100,"type":"","time":0,"data":')
    expect(at).toBeGreaterThan(0)
    bytes[at + 8] = '7'.charCodeAt(0) // seq 170: a record that reads as a pointer, but not of its checksum
    await writeFile(log, bytes)

    const again = await open()
    const res = await fetch(`${await serve(again)}/damaged?offset=-1`)
    expect(res.status).toBe(503)
    const body = await res.text()
    expect(body).toContain('CORRUPT_LOG')
    expect(body).not.toContain('proposed a patch')
    expect(body, 'the server’s files are not named to the client').not.toContain(dir)
    expect((await again.verify()).damaged.map((d) => [d.id, d.code])).toEqual([['damaged', 'CORRUPT_LOG']])
  })
})

describe('HEAD while a stream is appended to', () => {
  it('answers with what the appends answered so far: never behind an append answered, the last one at the end', async () => {
    const store = await open()
    const url = `${await serve(store)}/busy`
    expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
    const behind: string[] = []
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        for (let k = 0; k < 25; k++) {
          const res = await fetch(url, { method: 'POST', headers: json, body: JSON.stringify(message(w * 100 + k)) })
          expect(res.status).toBe(204)
          const answered = res.headers.get('stream-next-offset')!
          const seen = (await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset')!
          if (!(seen >= answered)) behind.push(`HEAD ${seen} after an append answered ${answered}`) // offsets sort as strings
        }
      }),
    )
    expect(behind).toEqual([])
    const read = await fetch(`${url}?offset=-1`)
    expect(((await read.json()) as unknown[]).length).toBe(100)
    expect((await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset')).toBe(read.headers.get('stream-next-offset'))
  })

  it('reads the stream again once the app wrote to its session (the writer let go of)', async () => {
    const store = await open()
    const url = `${await serve(store)}/shared`
    expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
    expect((await fetch(url, { method: 'POST', headers: json, body: JSON.stringify(message(0)) })).status).toBe(204)
    const before = (await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset')!
    const session = await store.openSession('shared')
    await session.append({ type: 'note', data: { by: 'the app' } })
    await session.close()
    const after = (await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset')!
    expect(after > before).toBe(true)
    const read = await fetch(`${url}?offset=-1`)
    expect(((await read.json()) as unknown[]).length).toBe(2)
    expect(after).toBe(read.headers.get('stream-next-offset'))
  })

  it('is gone once a DELETE sent during an append is answered, forks standing on the stream (it is kept for them)', async () => {
    const store = await open()
    const base = await serve(store)
    const answers: number[] = []
    for (let i = 0; i < 8; i++) {
      const url = `${base}/forked-${i}`
      expect((await fetch(url, { method: 'PUT', headers: json })).status).toBe(201)
      expect((await fetch(url, { method: 'POST', headers: json, body: JSON.stringify(message(0)) })).status).toBe(204)
      expect((await fetch(`${url}-fork`, { method: 'PUT', headers: { ...json, 'stream-forked-from': `/v1/stream/forked-${i}` } })).status).toBe(201)
      // An append, and the DELETE right behind it (it arrives while the append is written).
      const appended = fetch(url, { method: 'POST', headers: json, body: JSON.stringify(message(1)) })
      await new Promise((resolve) => setTimeout(resolve, 1))
      expect((await fetch(url, { method: 'DELETE' })).status).toBe(204)
      expect((await appended).status).toBe(204)
      answers.push((await fetch(url, { method: 'HEAD' })).status)
      // And an append after it does not bring it back.
      expect((await fetch(url, { method: 'POST', headers: json, body: JSON.stringify(message(2)) })).status).not.toBe(204)
      expect((await fetch(url, { method: 'HEAD' })).status).not.toBe(200)
    }
    expect(answers.filter((status) => status === 200)).toEqual([])
  })
})
