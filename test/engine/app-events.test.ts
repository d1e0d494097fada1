import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineEvent, defineProjection, openStore, sync, type OpenStoreOptions, type SessionEvent, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'
import { createMemoryAdapter } from '../../src/backends/memory'
import { Engine } from '../../src/engine'
import { appV1, appV2, appV3, messageV2 } from '../fixtures/chat-events'
import { filesOf } from '../support/files'
import { eventsOf, expectCode } from '../support/helpers'

let dir: string
let n = 0
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-app-events-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})
const fresh = () => join(dir, `store-${++n}`)

/** The session's events as the store keeps them (a change batch carries them as stored). */
async function stored(store: Store, id: string): Promise<SessionEvent[]> {
  const { batch } = await store.changesSince(null, { sessions: [id] })
  return batch.sessions.find((s) => s.header.id === id)?.events ?? []
}

const MODES: [string, (dir: string) => OpenStoreOptions][] = [
  ['in this thread', (d) => ({ dir: d, worker: false, ...appV3 })],
  ['worker_threads (serveEngine({ events }))', (d) => ({ dir: d, workerUrl: new URL('../fixtures/chat-v3-worker.ts', import.meta.url) })],
]

describe.each(MODES)('an append is checked by its definition (%s)', (_name, options) => {
  it('refuses data that fails the latest version, naming the field, and writes nothing; stamps what passes', async () => {
    const d = fresh()
    const store = await openStore(options(d))
    try {
      const chat = await store.createSession({ id: 'chat' })
      await chat.append({ type: 'fixture/message', data: { role: 'user', parts: ['hello'] } })
      await chat.close()
      const w = await store.openSession('chat')
      const before = await filesOf(d)
      const bad = [
        () => w.append({ type: 'fixture/message', data: { text: 'an old shape' } } as never),
        () => w.append({ type: 'fixture/message', data: { role: 'robot', parts: ['x'] } } as never),
        () => w.append({ type: 'fixture/message', data: { role: 'user', parts: [] } }),
        () => w.append({ type: 'fixture/message' } as never),
        // One bad event in a batch: the batch is refused whole.
        () =>
          w.append([
            { type: 'turn/start' },
            { type: 'fixture/message', data: { role: 'user', parts: ['fine'] } },
            { type: 'fixture/message', data: { role: 'user', parts: 'not a list' } } as never,
          ]),
        () => w.spawn({ mode: 'one-shot', id: 'kid', events: [{ type: 'fixture/message', data: { parts: ['x'] } }] }),
        // The reserved events are described the same way.
        () => w.append({ type: 'subagent/catalog', data: { v: 9, childId: 'x' } } as never),
        () => w.append({ type: 'subagent/descriptor', data: { v: 2, mode: 'continuable' } } as never),
        () => w.append({ type: 'session/meta', data: { title: 5 } } as never),
      ]
      for (const run of bad) {
        const err = await expectCode(run, 'INVALID_ARGUMENT')
        expect(err.message).toMatch(/fixture\/message|subagent\/catalog|subagent\/descriptor|session\/meta|label/)
      }
      const err = await expectCode(() => w.append({ type: 'fixture/message', data: { role: 'robot', parts: ['x'] } } as never), 'INVALID_ARGUMENT')
      expect(err.message).toContain('role')
      expect(err.message).toContain('session "chat" at seq 1')
      expect(await store.listSessions()).toHaveLength(1)
      expect(await filesOf(d)).toEqual(before)
      await w.close()
      const [first] = await stored(store, 'chat')
      expect(first).toEqual({ seq: 0, type: 'fixture/message', time: first!.time, v: 3, data: { role: 'user', parts: ['hello'] } })
    } finally {
      await store.close()
    }
  })
})

describe('versions', () => {
  it('a store written by the first version is read and written by the second and third: every read at the latest shape, stored bytes unchanged', async () => {
    const d = fresh()
    const v1 = await openStore({ dir: d, worker: false, ...appV1 })
    const first = await v1.createSession({ id: 'chat' })
    await first.append([{ type: 'fixture/message', data: { text: 'hi' } }, { type: 'turn/start' }, { type: 'fixture/message', data: { text: 'there' } }])
    expect(first.projections.get('transcript' as never)).toEqual(['hi', 'there'])
    await first.close()
    const storedByV1 = await stored(v1, 'chat')
    await v1.close()
    expect(storedByV1.map((e) => e.v)).toEqual([undefined, undefined, undefined])

    const v2 = await openStore({ dir: d, worker: false, ...appV2 })
    const second = await v2.openSession('chat')
    expect(second.projections.get('transcript' as never)).toEqual(['user: hi', 'user: there'])
    await second.append({ type: 'fixture/message', data: { role: 'assistant', text: 'yo' } })
    expect(second.projections.get('transcript' as never)).toEqual(['user: hi', 'user: there', 'assistant: yo'])
    expect((await eventsOf(v2, 'chat')).filter((e) => e.type === 'fixture/message').map((e) => [e.v, e.data])).toEqual([
      [2, { role: 'user', text: 'hi' }],
      [2, { role: 'user', text: 'there' }],
      [2, { role: 'assistant', text: 'yo' }],
    ])
    await second.close()
    await v2.close()

    const v3 = await openStore({ dir: d, worker: false, ...appV3 })
    const shown = ['user: hi', 'user: there', 'assistant: yo']
    try {
      // Stored as written: the first version's events without a version, the second's with 2.
      const kept = await stored(v3, 'chat')
      expect(kept.slice(0, 3)).toEqual(storedByV1)
      expect(kept[3]).toMatchObject({ v: 2, data: { role: 'assistant', text: 'yo' } })
      const latest = [
        { role: 'user', parts: ['hi'] },
        { role: 'user', parts: ['there'] },
        { role: 'assistant', parts: ['yo'] },
      ]
      // events(), with and without a list of types.
      const all = await eventsOf(v3, 'chat')
      expect(all.filter((e) => e.type === 'fixture/message').map((e) => [e.v, e.data])).toEqual(latest.map((m) => [3, m]))
      const view = await v3.observe('chat')
      const typed: unknown[] = []
      for await (const e of view.events({ types: ['fixture/message'] })) typed.push(e.data)
      expect(typed).toEqual(latest)
      // A cold fold (no checkpoint of this unit version fits: it refolds the log).
      expect(view.projections.get('transcript' as never)).toEqual(shown)
      await view.close()
      // Time travel folds the same way.
      const past = await v3.observe('chat', { at: 3 })
      expect(past.projections.get('transcript' as never)).toEqual(shown.slice(0, 2))
      await past.close()
      // The Durable Streams read path.
      const server: Server = createServer(toNodeListener(createStreamsHandler({ store: v3, authorize: () => true })))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      try {
        const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream/chat?offset=-1`)
        const body = (await response.json()) as SessionEvent[]
        expect(body.filter((e) => e.type === 'fixture/message').map((e) => [e.v, e.data])).toEqual(latest.map((m) => [3, m]))
        // A POST to the session's stream is checked like any append: the old shape is refused.
        const post = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([{ type: 'fixture/message', data: { text: 'old' } }]),
        })
        expect(post.status).toBe(400)
      } finally {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
      // Sync carries the stored events; the other store reads them at its latest version, and a
      // second sync finds the same history (the chain of the stored bytes agrees).
      const other = await openStore({ storage: 'memory', worker: false, ...appV3 })
      try {
        const result = await sync(v3, other)
        expect(result.conflicts).toEqual([])
        expect(await stored(other, 'chat')).toEqual(kept)
        const copy = await other.observe('chat')
        expect(copy.projections.get('transcript' as never)).toEqual(shown)
        await copy.close()
        const w = await v3.openSession('chat')
        await w.append({ type: 'fixture/message', data: { role: 'user', parts: ['more'] } })
        await w.close()
        expect((await sync(v3, other)).conflicts).toEqual([])
        expect((await stored(other, 'chat')).at(-1)).toMatchObject({ v: 3, data: { parts: ['more'] } })
      } finally {
        await other.close()
      }
      expect((await stored(v3, 'chat')).slice(0, 4)).toEqual(kept)
    } finally {
      await v3.close()
    }
  })

  it('an event of a version the code does not know faults the units that read it, and is never dropped', async () => {
    const d = fresh()
    const newer = await openStore({ dir: d, worker: false, ...appV3 })
    const s = await newer.createSession({ id: 'chat' })
    await s.append([{ type: 'turn/start' }, { type: 'fixture/message', data: { role: 'user', parts: ['from', ' the future'] } }, { type: 'turn/end' }])
    await s.close()
    await newer.close()
    const older = await openStore({ dir: d, worker: false, ...appV2 })
    try {
      const view = await older.observe('chat')
      const { values, faults } = view.projections.snapshot()
      expect(faults).toEqual({ transcript: 'corrupt' })
      expect((values as Record<string, unknown>).transcript).toBeNull()
      expect(values.subagentTiming).toMatchObject({ turns: 1, runningSince: null })
      const events = await eventsOf(older, 'chat')
      expect(events).toHaveLength(3)
      expect(events[1]).toMatchObject({ type: 'fixture/message', v: 3, data: { role: 'user', parts: ['from', ' the future'] } })
      await view.close()
    } finally {
      await older.close()
    }
  })
})

describe('definitions', () => {
  it('defineEvent refuses what is not a definition; a reserved type, or one type twice, is refused when the store opens', async () => {
    const schema = z.object({ a: z.string() })
    await expectCode(() => defineEvent({ type: '', schema }), 'INVALID_ARGUMENT')
    await expectCode(() => defineEvent({ type: 'a', schema: { parse: () => 1 } as never }), 'INVALID_ARGUMENT')
    await expectCode(() => defineEvent({ type: 'a', schema, versions: [schema] } as never), 'INVALID_ARGUMENT')
    await expectCode(() => defineEvent({ type: 'a', versions: [] } as never), 'INVALID_ARGUMENT')
    await expectCode(() => defineEvent({ type: 'a', versions: [schema, schema] } as never), 'INVALID_ARGUMENT')
    await expectCode(() => defineEvent({ type: 'a', versions: [schema, { schema, up: 1 }] } as never), 'INVALID_ARGUMENT')
    await expectCode(() => defineEvent({ type: 'a', schema, extra: 1 } as never), 'INVALID_ARGUMENT')
    const d = fresh()
    await expectCode(() => openStore({ dir: d, worker: false, events: [defineEvent({ type: 'turn/start', schema })] }), 'INVALID_ARGUMENT')
    await expectCode(() => openStore({ dir: d, worker: false, events: [messageV2, messageV2] }), 'INVALID_ARGUMENT')
    await expectCode(() => openStore({ dir: d, events: [messageV2] }), 'INVALID_ARGUMENT') // in a worker: serveEngine takes them
    await expect(readdir(d)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('a body that gives its own version is refused: an append is stored at its definition’s version', async () => {
    const engine = new Engine({ storage: createMemoryAdapter(), events: appV3.events })
    try {
      await engine.createSession({ id: 's' })
      const body = (v: number, data: unknown) => `{"type":"fixture/message","time":1,"v":${v},"data":${JSON.stringify(data)}}`
      await expectCode(() => engine.appendBodies('s', [body(3, { role: 'user', parts: ['x'] })]), 'INVALID_ARGUMENT')
      await expectCode(() => engine.appendBodies('s', [`{"type":"app/x","time":1,"v":7,"data":null}`]), 'INVALID_ARGUMENT')
      expect((await engine.reader.info('s')).length).toBe(0)
      await engine.appendBodies('s', ['{"type":"fixture/message","time":1,"data":{"role":"user","parts":["x"]}}'])
      expect((await engine.reader.page('s', 0, undefined)).events[0]).toMatchObject({ v: 3 })
    } finally {
      await engine.close()
    }
  })

  it('a unit that names its types is handed only those', async () => {
    const seen: string[] = []
    const picky = defineProjection({
      key: 'picky',
      stateVersion: 1,
      stateSchema: z.number(),
      types: ['app/a', 'app/c'],
      init: () => 0,
      apply: (n: number, e) => (seen.push(e.type), n + 1),
      view: { schema: z.number(), view: (n: number) => n },
    })
    const store = await openStore({ storage: 'memory', worker: false, projections: [picky] })
    const s = await store.createSession()
    await s.append([{ type: 'app/a' }, { type: 'app/b' }, { type: 'app/c' }, { type: 'app/b' }])
    expect(s.projections.get('picky' as never)).toBe(2)
    expect(seen).toEqual(['app/a', 'app/c'])
    await expectCode(() => defineProjection({ ...picky, types: [] as never }), 'INVALID_ARGUMENT')
    await store.close()
  })
})
