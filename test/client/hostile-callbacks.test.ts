// Contract: §12 sync, §16 follow — an app's callback that fails is its own: a headers function that throws what String() cannot show goes offline and retries, a subscriber that throws stops nothing (docs/CONTRACT.md)
// connect()'s headers function throwing Object.create(null) left an unhandled rejection and the
// status at `connecting` (String(err) threw in the catch), and follow()'s stopped for good with
// `error`; a follow subscriber that threw stopped the copy, and its close() rejected. (Other
// throws and shapes, checked by an audit, already went offline and retried.) Both worker modes.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { createStreamsHandler, createSyncHandler, toNodeListener } from '../../src/sync/server/index'

let dir: string
let server: Server | undefined
const stores: Store[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-probe-'))
})
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {})
  if (server) {
    server.closeAllConnections()
    await new Promise((r) => server!.close(r))
    server = undefined
  }
  await rm(dir, { recursive: true, force: true })
})

async function serve(): Promise<string> {
  const remote = await openStore({ storage: 'memory', worker: false })
  stores.push(remote)
  await (await remote.createSession({ id: 'r' })).append({ type: 'app/a' })
  const sync = createSyncHandler({ store: remote, authorize: () => true })
  const streams = createStreamsHandler({ store: remote, authorize: () => true })
  server = createServer(toNodeListener((req) => (new URL(req.url).pathname.startsWith('/v1/stream') ? streams(req) : sync(req))))
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const HEADERS: Record<string, () => unknown> = {
  'throws a null-prototype object': () => {
    throw Object.create(null)
  },
}

describe.each(['worker', 'inThread'] as const)('%s', (mode) => {
  const open = () => openStore({ storage: 'fs', dir, worker: mode === 'worker' })

  it.each(Object.keys(HEADERS))('connect with a headers function that %s reports an error state, no leak', async (name) => {
    const base = await serve()
    const store = await open()
    stores.push(store)
    const rep = store.connect(base, { headers: HEADERS[name] as never })
    await sleep(1500)
    console.log(mode, 'connect headers', name, JSON.stringify(rep.state))
    expect(['offline', 'error']).toContain(rep.status)
    await rep.close()
  })

  it.each(Object.keys(HEADERS))('follow with a headers function that %s keeps retrying, no leak', async (name) => {
    const base = await serve()
    const store = await open()
    stores.push(store)
    const f = store.follow(`${base}/v1/stream/r`, { headers: HEADERS[name] as never })
    await sleep(1500)
    console.log(mode, 'follow headers', name, JSON.stringify(f.state))
    expect(['offline', 'error']).toContain(f.status)
    await f.close()
  })

  it('a follow subscriber that throws does not stop the copy or leak', async () => {
    const base = await serve()
    const store = await open()
    stores.push(store)
    const f = store.follow(`${base}/v1/stream/r`)
    let calls = 0
    f.subscribe(() => {
      if (++calls > 1) throw new Error('subscriber threw')
    })
    await sleep(1500)
    console.log(mode, 'follow subscriber', calls, JSON.stringify(f.state))
    let closed: unknown = 'ok'
    await f.close().catch((e) => {
      closed = e
    })
    console.log(mode, 'follow close', String(closed))
    const v = await store.observe('r').then(
      async (v) => {
        const t: string[] = []
        for await (const e of v.events()) t.push(e.type)
        return t
      },
      (e) => String(e),
    )
    console.log(mode, 'copied', JSON.stringify(v))
    expect(closed).toBe('ok')
    expect(v).toEqual(['app/a'])
  })

  it('a replication subscriber that throws does not stop it or leak', async () => {
    const base = await serve()
    const store = await open()
    stores.push(store)
    const rep = store.connect(base)
    let calls = 0
    rep.subscribe(() => {
      if (++calls > 1) throw new Error('subscriber threw')
    })
    await rep.whenSynced()
    console.log(mode, 'rep subscriber', calls, JSON.stringify(rep.state))
    expect((await store.listSessions()).map((h) => h.id)).toEqual(['r'])
    await rep.close()
  })
})
