// Contract: §16 Durable Streams, store.follow — a stream of the protocol's reference server
// (@durable-streams/server, file-backed, started here on 127.0.0.1) copied into a session of an
// fs store, folded like any session, live; through a restart of the server (offline, then
// online, nothing lost or copied twice) and of this store (it resumes from the offset it
// reached); bad options are INVALID_ARGUMENT and start nothing; a headers function and a fetch
// of the app are used for every request (against createStreamsHandler letting in a token only).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DurableStreamTestServer } from '@durable-streams/server'
import { openStore, type Store } from 'sessionfold'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'
import type { FollowState } from '../../src/sync/follow'
import { eventsOf, expectCode, until } from '../support/helpers'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-follow-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function reference(port = 0): Promise<DurableStreamTestServer> {
  const server = new DurableStreamTestServer({ port, host: '127.0.0.1', dataDir: join(dir, 'reference'), longPollTimeout: 1000 })
  await server.start()
  cleanups.push(() => stop(server))
  return server
}

/**
 * Stops the reference server as a killed process would: its stop() closes the listener and
 * waits for every connection to end, and a follower's keep-alive connection, long-polling
 * again as soon as it is answered, never does; so its connections are closed too.
 */
async function stop(server: DurableStreamTestServer): Promise<void> {
  const stopping = server.stop()
  ;(server as unknown as { server?: Server | null }).server?.closeAllConnections()
  await stopping
}

async function open(name = 'store'): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name) })
  cleanups.push(() => store.close())
  return store
}

const post = async (url: string, body: unknown) => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  expect(response.ok, await response.text()).toBe(true)
}

describe('store.follow', () => {
  it("copies a stream of the reference server into a session, live, folded; through the server's restart and this store's", async () => {
    let server = await reference()
    const port = Number(new URL(server.url).port)
    const url = `${server.url}/v1/stream/agent-7`
    expect((await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' } })).status).toBe(201)
    await post(url, [{ type: 'turn/start', data: { by: 'go' }, time: 100 }, { note: 'not an event' }, 'hello'])

    let store = await open()
    let follow = store.follow(url, { maxBackoffMs: 300 })
    const statuses: FollowState['status'][] = []
    follow.subscribe((s) => {
      if (statuses.at(-1) !== s.status) statuses.push(s.status)
    })
    await until(async () => (await eventsOf(store, 'agent-7').catch(() => [])).length === 3, 10_000)
    const view = await store.observe('agent-7')
    expect(view.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 0, runningSince: 100 })
    expect((await eventsOf(store, 'agent-7')).map((e) => [e.type, e.data])).toEqual([
      ['turn/start', { by: 'go' }],
      ['message', { note: 'not an event' }],
      ['message', 'hello'],
    ])
    // Live: what the server gets next arrives, and folds.
    await post(url, { type: 'turn/end', time: 400 })
    await until(() => view.projections.get('subagentTiming')?.settledMs === 300, 10_000)

    // The server goes away and comes back on the same port and files.
    await stop(server)
    await until(() => follow.status === 'offline', 10_000)
    server = await reference(port)
    await post(url, { type: 'msg', data: 'after the restart' })
    await until(async () => (await eventsOf(store, 'agent-7')).length === 5, 15_000)
    expect(follow.status).toBe('online')
    expect(statuses).toEqual(['connecting', 'online', 'offline', 'online'])

    // This store closes and opens again: the copy resumes from its offset, nothing twice.
    await view.close()
    await follow.close()
    await store.close()
    await post(url, { type: 'msg', data: 'while this store was closed' })
    store = await open()
    follow = store.follow(url)
    await post(url, { type: 'msg', data: 'after it came back' })
    await until(async () => (await eventsOf(store, 'agent-7')).length === 7, 10_000)
    expect((await eventsOf(store, 'agent-7')).slice(4).map((e) => e.data)).toEqual(['after the restart', 'while this store was closed', 'after it came back'])
    await until(() => follow.state.copied === 2, 10_000) // told once the engine's answer is back, just after the events are visible
    await follow.close()

    // Closed by its writer: the copy ends with it.
    await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })
    const last = store.follow(url)
    await until(() => last.status === 'closed', 10_000)
    await last.close()
    expect(await eventsOf(store, 'agent-7')).toHaveLength(7)
  })

  it('refuses bad options with INVALID_ARGUMENT, and a session that copies another stream with SESSION_EXISTS', async () => {
    const server = await reference()
    const store = await open()
    const url = `${server.url}/v1/stream/s1`
    await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '[{"a":1}]' })
    for (const [u, o] of [
      ['not a url', {}],
      ['ftp://127.0.0.1/x', {}],
      [`${server.url}/v1/stream/has.dot`, {}],
      [url, { id: 'no spaces' }],
      [url, { pollMs: -1 }],
      [url, { nope: true }],
      [url, { headers: 'x' }],
      [url, { headers: { a: 1n } }],
      [url, { fetch: 'x' }],
      [url, { live: () => true }],
    ] as const) {
      await expectCode(
        Promise.resolve().then(() => store.follow(u, o as never)),
        'INVALID_ARGUMENT',
      )
    }
    expect(await store.listSessions()).toEqual([])
    const first = store.follow(url, { id: 'copy' })
    await until(async () => (await eventsOf(store, 'copy').catch(() => [])).length === 1, 10_000)
    await first.close()
    await fetch(`${server.url}/v1/stream/s2`, { method: 'PUT', headers: { 'content-type': 'application/json' } })
    const other = store.follow(`${server.url}/v1/stream/s2`, { id: 'copy' })
    await until(() => other.status === 'error', 10_000)
    expect(other.state.error?.code).toBe('SESSION_EXISTS')
    await other.close()
  })

  it("takes a headers function and a fetch of the app: called for every request, the stream's server sees the headers", async () => {
    // The stream's server: createStreamsHandler over another store, letting in only a bearer token.
    const source = await open('source')
    const seen: (string | null)[] = []
    const server = createServer(
      toNodeListener(
        createStreamsHandler({
          store: source,
          authorize: ({ request }) => {
            seen.push(request.headers.get('authorization'))
            return request.headers.get('authorization') === 'Bearer t0k3n' || 'unauthenticated'
          },
        }),
      ),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream/agent`
    const put = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: 'Bearer t0k3n' } })
    expect(put.status).toBe(201)
    const post = (body: unknown) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer t0k3n' }, body: JSON.stringify(body) })
    expect((await post([{ type: 'turn/start' }, { type: 'note', data: 1 }])).status).toBe(204)

    const store = await open()
    let asked = 0
    let fetched = 0
    const follow = store.follow(url, {
      headers: async () => {
        asked++
        return { authorization: 'Bearer t0k3n' }
      },
      fetch: (input, init) => {
        fetched++
        return fetch(input, init)
      },
    })
    await until(async () => (await eventsOf(store, 'agent').catch(() => [])).length === 2, 10_000)
    expect((await post([{ type: 'turn/end' }])).status).toBe(204)
    await until(async () => (await eventsOf(store, 'agent').catch(() => [])).length === 3, 10_000)
    await follow.close()
    expect((await eventsOf(store, 'agent')).map((e) => e.type)).toEqual(['turn/start', 'note', 'turn/end'])
    expect(fetched).toBeGreaterThanOrEqual(2)
    expect(asked).toBe(fetched)
    expect(seen.every((h) => h === 'Bearer t0k3n')).toBe(true)
  })
})
