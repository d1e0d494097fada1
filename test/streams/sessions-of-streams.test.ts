// Contract: §16 "a stream created through the protocol is a session of the store (a fork stream
// is a fork session), so observe, projections, time travel, sync … apply to it", with §9 (time
// travel) and §12 (sync over HTTP). Streams are made and written only through the protocol
// (PUT, then POSTs, from fetch to a real node:http server on 127.0.0.1 over an fs store); what
// is checked is what the SDK shows of them: observe now and as of an earlier point, their
// projections (built-in and an app's own), and their arrival in other stores through
// store.connect to a createSyncHandler server.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineProjection, openStore, type OpenStoreOptions, type SessionEvent, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'
import { connect, serve as serveSync } from '../support/sync-server'
import { dumpStore, eventsOf, until } from '../support/helpers'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-stream-sessions-'))
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

/** A Durable Streams server over `store` (anyone may read and write): `put` and `post` by fetch, as curl would. */
async function streamsOver(store: Store) {
  const server: Server = createServer(toNodeListener(createStreamsHandler({ store, authorize: () => true, longPollMs: 1000 })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream`
  return {
    base,
    put: async (id: string, headers: Record<string, string> = {}) => (await fetch(`${base}/${id}`, { method: 'PUT', headers })).status,
    post: async (id: string, body: unknown) =>
      (await fetch(`${base}/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status,
    read: async (id: string) => (await fetch(`${base}/${id}?offset=-1`)).json(),
  }
}

/** What a session's view shows as of `at` (the whole log without it): its events, the last seq folded, its projection values. */
async function seen(store: Store, id: string, at?: number) {
  const view = await store.observe(id, at === undefined ? undefined : { at })
  try {
    const events: Pick<SessionEvent, 'seq' | 'type' | 'data'>[] = []
    for await (const { seq, type, data } of view.events()) events.push({ seq, type, data })
    const { asOfSeq, values } = view.projections.snapshot()
    return { events, asOfSeq, values: values as Record<string, unknown> }
  } finally {
    await view.close()
  }
}

/** An app's projection over a JSON stream's messages (events `stream/json`, the message as data): how many, and the turn-shaped ones. */
const messages = defineProjection({
  key: 'messages',
  stateVersion: 1,
  stateSchema: z.object({ count: z.number(), turns: z.array(z.string()) }),
  types: ['stream/json'],
  init: () => ({ count: 0, turns: [] as string[] }),
  apply: (state: { count: number; turns: string[] }, e) => {
    const type = (e.data as { type?: unknown } | null)?.type
    return { count: state.count + 1, turns: typeof type === 'string' && type.startsWith('turn/') ? [...state.turns, type] : state.turns }
  },
  view: { schema: z.object({ count: z.number(), turns: z.array(z.string()) }), view: (state: { count: number; turns: string[] }) => state },
})

describe('a stream made through the protocol is a session', () => {
  it('a JSON stream: each message an event (stream/json), folded by projections, observed as of an earlier point', async () => {
    // worker: false, so the store folds the app's own projection.
    const store = await open('store', { worker: false, projections: [messages] })
    const http = await streamsOver(store)
    expect(await http.put('chat', { 'content-type': 'application/json' })).toBe(201)
    const sent = [{ text: 'hello' }, { type: 'turn/start', time: 1000 }, 42, 'words', { type: 'turn/end', time: 1750 }, null]
    expect(await http.post('chat', sent.slice(0, 2))).toBe(204) // an array body: each element a message
    expect(await http.post('chat', sent[2])).toBe(204)
    expect(await http.post('chat', sent.slice(3))).toBe(204)
    expect(await http.read('chat')).toEqual(sent)

    const header = (await store.listSessions()).find((h) => h.id === 'chat')
    expect(header).toMatchObject({ id: 'chat', origin: 'root', seedLength: 0 })
    // A stream of any JSON keeps values, not events: a message shaped like turn/start is the data of
    // a stream/json event (so the built-in subagentTiming does not count it; an app's projection can).
    const events = sent.map((data, seq) => ({ seq, type: 'stream/json', data }))
    const now = await seen(store, 'chat')
    expect(now.events).toEqual(events)
    expect(now.asOfSeq).toBe(5)
    expect(now.values.messages).toEqual({ count: 6, turns: ['turn/start', 'turn/end'] })
    expect(now.values.subagentTiming).toEqual({ turns: 0, settledMs: 0, runningSince: null })

    // As it was after its first two messages: those events only, the projections folded to there.
    const then = await seen(store, 'chat', 2)
    expect(then.events).toEqual(events.slice(0, 2))
    expect(then.asOfSeq).toBe(1)
    expect(then.values.messages).toEqual({ count: 2, turns: ['turn/start'] })
    expect((await seen(store, 'chat', 0)).values.messages).toEqual({ count: 0, turns: [] })
    expect(await seen(store, 'chat', 6)).toEqual(now)
    // A frozen view does not follow appends; a live one does.
    const frozen = await store.observe('chat', { at: 3 })
    const live = await store.observe('chat')
    expect(await http.post('chat', { type: 'turn/start', time: 2000 })).toBe(204)
    await until(() => (live.projections.get('messages' as never) as unknown as { count: number } | undefined)?.count === 7)
    expect(live.projections.get('messages' as never)).toEqual({ count: 7, turns: ['turn/start', 'turn/end', 'turn/start'] })
    expect(frozen.projections.get('messages' as never)).toEqual({ count: 3, turns: ['turn/start'] })
    expect(frozen.projections.snapshot().asOfSeq).toBe(2)
    await frozen.close()
    await live.close()
  })

  it('a fork stream of a session (Stream-Forked-From) is a fork session: its turns fold into subagentTiming, observed as of each point', async () => {
    const store = await open('store')
    const http = await streamsOver(store)
    const agent = await store.createSession({ id: 'agent' })
    await agent.append([
      { type: 'turn/start', data: { by: 'sdk' } },
      { type: 'turn/end', data: null },
    ])
    await agent.close()
    const before = await seen(store, 'agent')
    expect(await http.put('run', { 'stream-forked-from': '/v1/stream/agent' })).toBe(201)
    expect((await store.listSessions()).find((h) => h.id === 'run')).toMatchObject({ origin: 'fork', forkedFrom: 'agent', seedLength: 2 })
    // The fork takes events, as its source's own stream does; other values are refused.
    expect(await http.post('run', { type: 'turn/start', data: { by: 'curl' }, time: 1000 })).toBe(204)
    expect(
      await http.post('run', [
        { type: 'note', data: 'thinking' },
        { type: 'turn/end', time: 1750 },
      ]),
    ).toBe(204)
    expect(await http.post('run', { text: 'not an event' })).toBe(400)

    const now = await seen(store, 'run')
    expect(now.events.map((e) => e.type)).toEqual(['turn/start', 'turn/end', 'turn/start', 'note', 'turn/end'])
    expect(now.events.slice(0, 2)).toEqual(before.events) // its seed: the source's events
    expect(now.asOfSeq).toBe(4)
    const timing = async (at: number) =>
      (await seen(store, 'run', at)).values.subagentTiming as { turns: number; settledMs: number; runningSince: number | null }
    const seeded = await timing(2)
    expect(seeded).toEqual(before.values.subagentTiming) // as of its seed: its source's value
    expect(seeded.runningSince).toBeNull()
    expect(await timing(3)).toEqual({ ...seeded, turns: seeded.turns + 1, runningSince: 1000 }) // in the turn curl started
    expect(await timing(4)).toEqual(await timing(3))
    expect(await timing(5)).toEqual({ turns: seeded.turns + 1, settledMs: seeded.settledMs + 750, runningSince: null })
    expect(now.values.subagentTiming).toEqual(await timing(5))
    const then = await seen(store, 'run', 3)
    expect(then.events).toEqual(now.events.slice(0, 3))
    expect(then.asOfSeq).toBe(2)
    // The source did not move.
    expect(await seen(store, 'agent')).toEqual(before)
  })
})

describe('a stream made through the protocol reaches other stores by sync (store.connect)', () => {
  it('its session, a fork stream as a fork session, and appends made later: the same headers, events and projections there, also as of earlier points', async () => {
    // The store behind the streams server pushes to a sync server; a device pulls from it. Ids u1-… (the sync server's user1).
    const streams = await open('streams')
    const hub = await open('hub')
    const device = await open('device')
    const http = await streamsOver(streams)
    const sync = await serveSync(hub, cleanups)
    const pushing = connect(streams, sync.url, 'user1', cleanups, { live: true })
    const pulling = connect(device, sync.url, 'user1', cleanups, { live: true })

    expect(await http.put('u1-json', { 'content-type': 'application/json' })).toBe(201)
    expect(await http.post('u1-json', [{ n: 1 }, 'two', { type: 'turn/start', time: 5 }])).toBe(204)
    // A fork of the JSON stream at its second message, and one of a session the SDK made.
    expect(await http.put('u1-json-fork', { 'stream-forked-from': '/v1/stream/u1-json', 'stream-fork-offset': '0000000000000002_0000000000000000' })).toBe(201)
    expect(await http.post('u1-json-fork', ['fork only'])).toBe(204)
    const agent = await streams.createSession({ id: 'u1-agent' })
    await agent.append({ type: 'app/msg', data: { text: 'hi' } })
    await agent.close()
    expect(await http.put('u1-run', { 'stream-forked-from': '/v1/stream/u1-agent' })).toBe(201)
    expect(await http.post('u1-run', { type: 'turn/start', time: 1000 })).toBe(204)

    const ids = ['u1-agent', 'u1-json', 'u1-json-fork', 'u1-run']
    const listed = async (store: Store) => (await store.listSessions()).map((h) => h.id).sort()
    await pushing.whenSynced()
    await until(async () => (await listed(device)).join() === ids.join() && (await eventsOf(device, 'u1-run')).length === 2, 15_000)
    await pulling.whenSynced()
    const there = await dumpStore(device)
    expect(there).toEqual(await dumpStore(streams))
    expect(await dumpStore(hub)).toEqual(there)
    expect(there['u1-json']?.header).toMatchObject({ origin: 'root', seedLength: 0 })
    expect(there['u1-json-fork']?.header).toMatchObject({ origin: 'fork', forkedFrom: 'u1-json', seedLength: 2 })
    expect(there['u1-json-fork']?.events.map((e) => e.data)).toEqual([{ n: 1 }, 'two', 'fork only'])
    expect(there['u1-run']?.header).toMatchObject({ origin: 'fork', forkedFrom: 'u1-agent', seedLength: 1 })
    expect(there['u1-run']?.values).toMatchObject({ subagentTiming: { turns: 1, settledMs: 0, runningSince: 1000 } })

    // Appended through the protocol later: it reaches the device live, and the device travels in time over it as the streams store does.
    expect(
      await http.post('u1-run', [
        { type: 'note', data: 'thinking' },
        { type: 'turn/end', time: 1750 },
      ]),
    ).toBe(204)
    await until(async () => (await eventsOf(device, 'u1-run')).length === 4, 15_000)
    for (const at of [1, 2, 3, 4]) expect(await seen(device, 'u1-run', at), `at ${at}`).toEqual(await seen(streams, 'u1-run', at))
    expect((await seen(device, 'u1-run', 2)).values.subagentTiming).toEqual({ turns: 1, settledMs: 0, runningSince: 1000 })
    expect((await seen(device, 'u1-run')).values.subagentTiming).toEqual({ turns: 1, settledMs: 750, runningSince: null })
    expect(pushing.conflicts).toEqual([])
    expect(pulling.conflicts).toEqual([])
  })
})
