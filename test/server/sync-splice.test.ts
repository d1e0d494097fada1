// Contract: §13 a history that continues — over HTTP push and pull, no log ends with two histories (docs/CONTRACT.md)
// Devices A and B and the server hold session "talk" (event 0). Apart, A writes A-1 and B writes
// B-1; B reconnects first, so the server holds B's history. A reconnects: its push of A-1 and the
// server's B-1 are conflicts, and so is A's next push (A-2, from seq 2), which the server once
// appended after B-1: the server's log became `0 | B-1 | A-2`, and so did B's on its next pull.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Replication, type Store } from 'sessionfold'
import { createSyncHandler, toNodeListener } from '../../src/sync/server/index'
import { append, eventsOf, texts } from '../support/splice'
import { until } from '../support/helpers'

let dir: string
const cleanups: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-http-splice-'))
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function open(name: string): Promise<Store> {
  const store = await openStore({ storage: 'fs', dir: join(dir, name) })
  cleanups.push(() => store.close())
  return store
}

async function serve(store: Store): Promise<string> {
  const server = createServer(toNodeListener(createSyncHandler({ store, authorize: () => true })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('HTTP sync keeps each history whole', () => {
  for (const live of [false, true] as const) {
    it(`onConflict 'report': a device's writes after a conflict stay its own; the server and the other device keep theirs (live: ${live})`, async () => {
      const server = await open('server')
      const url = await serve(server)
      const a = await open('a')
      const b = await open('b')
      const connect = (store: Store): Replication => {
        const r = store.connect(url, { live, onConflict: 'report' }) // what sync never does; the forks are test/server/http-forks.test.ts
        cleanups.push(() => r.close())
        return r
      }
      let ra = connect(a)
      let rb = connect(b)
      const talk = await a.createSession({ id: 'talk' })
      await talk.append({ type: 'msg', data: { text: 'common' } })
      await talk.close()
      await ra.whenSynced()
      await until(async () => (await b.listSessions()).length === 1 && (await eventsOf(b, 'talk')).length === 1, 20_000)
      await ra.close()
      await rb.close()
      // Apart.
      await append(a, 'talk', 'A-1')
      await append(b, 'talk', 'B-1')
      rb = connect(b)
      await rb.whenSynced()
      expect(texts(await eventsOf(server, 'talk'))).toEqual(['common', 'B-1'])
      ra = connect(a)
      await until(() => ra.conflicts.some((c) => c.id === 'talk'), 20_000)
      // A goes on writing its own history: its next push starts at seq 2.
      await append(a, 'talk', 'A-2')
      await ra.whenSynced()
      await append(b, 'talk', 'B-2')
      await rb.whenSynced()
      await ra.whenSynced()
      expect(texts(await eventsOf(server, 'talk'))).toEqual(['common', 'B-1', 'B-2'])
      expect(texts(await eventsOf(b, 'talk'))).toEqual(['common', 'B-1', 'B-2'])
      expect(texts(await eventsOf(a, 'talk'))).toEqual(['common', 'A-1', 'A-2'])
      expect(ra.conflicts).toEqual([expect.objectContaining({ id: 'talk', reason: 'event', seq: 1 })])
      expect(ra.conflicts[0]!.chain).toMatchObject({ source: expect.stringMatching(/^[0-9a-f]{32}$/), target: expect.stringMatching(/^[0-9a-f]{32}$/) })
      expect(rb.conflicts).toEqual([])
    })
  }
})
