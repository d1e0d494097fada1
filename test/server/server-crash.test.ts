// Contract: §12 exactly once — the sync server SIGKILLed in the middle of pushes loses nothing acknowledged and appends nothing twice (docs/CONTRACT.md)
// The server is a process of its own over an fs store (test/fixtures/sync-server-process.ts);
// it is killed with SIGKILL as pushes arrive, several times, and started again on the same
// folder and port. The device's replication retries; at the end the server's store holds the
// device's sessions exactly, verify finds no damage, and nothing was reported as a conflict.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { dumpStore } from '../support/helpers'
import { spawnFixture, type Child } from '../support/fixture-process'

let dir: string
let server: Child | undefined
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-server-crash-'))
})
afterEach(async () => {
  server?.process.kill('SIGKILL')
  await server?.exited
  await rm(dir, { recursive: true, force: true })
})

async function start(port = 0): Promise<{ child: Child; port: number }> {
  const child = spawnFixture('sync-server-process.ts', [join(dir, 'server'), String(port)])
  server = child
  const first = await child.line()
  expect(first).toMatch(/^port \d+$/)
  return { child, port: Number(first.split(' ')[1]) }
}

it('a server killed mid-push, again and again, ends with every event of the device once', async () => {
  const device = await openStore({ storage: 'fs', dir: join(dir, 'device') })
  try {
    let { child, port } = await start()
    const replication = device.connect(`http://127.0.0.1:${port}`, { headers: { authorization: 'Bearer user1' }, pollMs: 20, maxBackoffMs: 200 })
    const sessions = []
    for (let s = 0; s < 4; s++) {
      const session = await device.createSession({ id: `u1-s${s}` })
      sessions.push(session)
    }
    // Writes keep coming while the server dies: 5 kills, each as a push arrives.
    const writing = (async () => {
      for (let round = 0; round < 40; round++) {
        await Promise.all(
          sessions.map((s, i) => s.append(Array.from({ length: 50 }, (_, k) => ({ type: 'app/n', data: { i, round, k, pad: 'x'.repeat(150) } })))),
        )
        await new Promise((r) => setTimeout(r, 10))
      }
    })()
    for (let kill = 0; kill < 5; kill++) {
      for (let line = await child.line(); !line.startsWith('push'); line = await child.line());
      child.process.kill('SIGKILL')
      await child.exited
      ;({ child } = await start(port))
    }
    await writing
    await replication.whenSynced()
    expect(replication.conflicts).toEqual([])
    await replication.close()
    child.process.kill('SIGKILL')
    await child.exited
    server = undefined
    const serverStore = await openStore({ storage: 'fs', dir: join(dir, 'server'), worker: false })
    try {
      expect((await serverStore.verify()).damaged).toEqual([])
      const mine = await dumpStore(device)
      expect(await dumpStore(serverStore)).toEqual(mine)
      expect(Object.values(mine).reduce((n, s) => n + s.events.length, 0)).toBe(4 * 40 * 50)
    } finally {
      await serverStore.close()
    }
  } finally {
    await device.close()
  }
}, 120_000)
