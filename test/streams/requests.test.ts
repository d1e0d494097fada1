// The Durable Streams requests of a store (store.streamRequest: the protocol's handler, follow)
// cross its worker together: those made in one task go in one call, and each is answered as soon
// as it is ready (src/client/stream-queue.ts, src/host/stream-replies.ts). These check what that
// must not change: a request held up (a stream whose session the app keeps open for writing)
// holds up no other, a worker that dies fails every request in flight with WORKER_TERMINATED,
// and a closed store refuses with CLOSED, as a rejection.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import type { StreamAnswer, StreamRequest } from '../../src/core/streams'
import { expectCode } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-stream-requests-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const fixture = (name: string) => new URL(`../fixtures/${name}`, import.meta.url)
const append = (id: string, type: string): StreamRequest => ({ op: 'append', id, contentType: 'application/json', body: { json: [{ type }] }, close: false })
const request = (store: Store, r: StreamRequest): Promise<StreamAnswer> => store.streamRequest(r)

describe('stream requests across the worker', () => {
  it('answers each request of a task as it is ready: one held up behind the app’s writer holds up none of the others', async () => {
    const store = await openStore({ storage: 'fs', dir })
    try {
      for (const id of ['held', 'free']) await (await store.createSession({ id })).close()
      const writer = await store.openSession('held') // the app keeps it open for writing
      const settled: string[] = []
      const track = (name: string, p: Promise<StreamAnswer>) => p.then((a) => void settled.push(`${name} ${a.status}`))
      // Made in one task: they go to the engine in one call.
      const held = track('held', request(store, append('held', 'app/one')))
      const free = Promise.all([1, 2, 3].map((n) => track(`free${n}`, request(store, { op: 'head', id: 'free' }))))
      const freeAppend = track('free-append', request(store, append('free', 'app/one')))
      await Promise.all([free, freeAppend])
      expect(settled.sort()).toEqual(['free-append appended', 'free1 ok', 'free2 ok', 'free3 ok'])
      await writer.close()
      await held
      expect(settled).toContain('held appended')
      const events: string[] = []
      for await (const e of (await store.observe('held')).events()) events.push(e.type)
      expect(events).toContain('app/one')
    } finally {
      await store.close()
    }
  })

  it('fails every request in flight with WORKER_TERMINATED when the worker dies, and refuses the next', async () => {
    const store = await openStore({ dir, workerUrl: fixture('dying-worker.ts') })
    try {
      await (await store.createSession({ id: 'w' })).close()
      await store.observe('w') // its fold of app/die ends the worker's thread
      const outcomes = await Promise.allSettled([request(store, append('w', 'app/die')), request(store, { op: 'head', id: 'w' })])
      for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as { code?: string }).code).toBe('WORKER_TERMINATED')
      await expectCode(request(store, { op: 'head', id: 'w' }), 'WORKER_TERMINATED')
    } finally {
      await store.close().catch(() => {})
    }
  })

  for (const worker of [true, false]) {
    it(`settles every request when the store closes with one held up behind the app’s writer (${worker ? 'worker' : 'this thread'})`, async () => {
      const store = await openStore({ storage: 'fs', dir, worker })
      for (const id of ['held', 's']) await (await store.createSession({ id })).close()
      await store.openSession('held')
      const outcome = (p: Promise<StreamAnswer>) =>
        p.then(
          (a) => a.status,
          (err: { code?: string }) => err.code,
        )
      const held = outcome(request(store, append('held', 'app/one')))
      await new Promise((resolve) => setTimeout(resolve, 50))
      const queued = outcome(request(store, { op: 'head', id: 's' })) // waits for the task's others: one is unanswered
      await store.close()
      // Neither is left waiting once close() returned: each was answered (the app's writer closes with the store) or met the close.
      const settled = await Promise.race([Promise.all([held, queued]), new Promise((resolve) => setTimeout(() => resolve('pending'), 2000))])
      expect(settled).not.toBe('pending')
      const [h, q] = settled as string[]
      expect(h).toMatch(/^(appended|CLOSED|locked)$/)
      expect(q).toMatch(/^(ok|CLOSED)$/)
    })
  }

  it('refuses with CLOSED once the store closed, as a rejection (never a throw); one asked in the same task as the close settles', async () => {
    const store = await openStore({ storage: 'fs', dir })
    await (await store.createSession({ id: 's' })).close()
    const answered = await request(store, { op: 'head', id: 's' })
    expect(answered.status).toBe('ok')
    // Sent before the close's own call (it goes first), it is answered or meets the engine closing: never left waiting.
    const before = request(store, { op: 'head', id: 's' }).then(
      (a) => a.status,
      (err: { code?: string }) => err.code,
    )
    await store.close()
    expect(await before).toMatch(/^(ok|CLOSED)$/)
    let thrown: unknown
    let refused: Promise<StreamAnswer> | undefined
    try {
      refused = request(store, { op: 'head', id: 's' })
    } catch (err) {
      thrown = err
    }
    expect(thrown).toBeUndefined()
    await expectCode(refused!, 'CLOSED')
  })
})
