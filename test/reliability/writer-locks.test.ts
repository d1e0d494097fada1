// Reliability: one writer per session across processes and threads; a dead writer's lock is taken over once (§6 client API)
// One writer per session across Node processes sharing a dir: lock files with the owner's pid.
import type { ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { writeFile } from 'node:fs/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { sealedFs } from '../support/sealed'
import { folderOf } from '../../src/backends/fs/layout'
import { createFsLocks, releaseThreadLocks } from '../../src/backends/fs/locks'
import { until } from '../contract/client'
import { expectCode } from '../support/helpers'
import { fullRefold } from '../support/refold'
import { spawnFixture, spawnHolder, type Child } from '../support/fixture-process'

let dir: string
let child: ChildProcess | undefined
const others: ChildProcess[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-locks-'))
})
afterEach(async () => {
  child?.kill('SIGKILL')
  for (const p of others.splice(0)) p.kill('SIGKILL')
  await rm(dir, { recursive: true, force: true })
})

/** Another process on the store, driven over stdin (fixtures/store-client.ts). */
type Writer = Child

async function writer(worker = false): Promise<Writer> {
  const w = spawnFixture('store-client.ts', [JSON.stringify({ dir, worker })])
  others.push(w.process)
  expect(await w.line()).toBe('ready')
  return w
}

const holder = (id: string): Promise<ChildProcess> => spawnHolder(join(__dirname, '../fixtures/lock-holder.ts'), [dir, id], others)

describe('writer locks across processes', () => {
  for (const worker of [false, true]) {
    it(`another process's writer makes openSession SESSION_LOCKED; observe works; a killed owner's lock is taken over (worker: ${worker})`, async () => {
      child = await holder('shared')
      const store = await openStore({ dir, worker })
      await expectCode(store.openSession('shared'), 'SESSION_LOCKED')
      await expectCode(store.deleteSession('shared'), 'SESSION_LOCKED')
      const view = await store.observe('shared')
      const events = []
      for await (const e of view.events()) events.push(e.type)
      expect(events).toEqual(['app/held'])
      const kid = await store.createSession({ id: 'mine' })
      const rows = await kid.spawn({ mode: 'one-shot', id: 'sub' }).then(() => kid.listChildren())
      expect(rows[0]).toMatchObject({ id: 'sub', activity: 'running' })
      child.kill('SIGKILL')
      await new Promise((r) => child!.once('exit', r))
      const s = await store.openSession('shared') // the dead owner's lock is taken over
      await s.append({ type: 'app/mine' })
      await store.close()
    })
  }

  it('listChildren shows a child held by another process as running', async () => {
    const store = await openStore({ dir, worker: false })
    const parent = await store.createSession({ id: 'p' })
    const kid = await parent.spawn({ mode: 'one-shot', id: 'k' })
    await kid.close()
    expect((await parent.listChildren())[0]).toMatchObject({ activity: 'inactive' })
    child = await holder('k')
    expect((await parent.listChildren())[0]).toMatchObject({ activity: 'running' })
    child.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))
    expect((await parent.listChildren())[0]).toMatchObject({ activity: 'inactive' })
    await store.close()
  })

  for (const worker of [false, true]) {
    it(`observe in this process follows another process's appends live, projections equal to a refold (worker: ${worker})`, async () => {
      const w = await writer()
      w.send('open s 0')
      expect(await w.line()).toBe('won s')
      const store = await openStore({ dir, worker })
      await expectCode(store.openSession('s'), 'SESSION_LOCKED')
      const view = await store.observe('s')
      const seqs: number[] = []
      view.projections.subscribe((snap) => seqs.push(snap.asOfSeq))
      w.send(`append ${JSON.stringify({ type: 'turn/start', time: 1000 })}`)
      expect(await w.line()).toMatch(/^ack 0 \d+$/)
      await until(() => view.projections.get('subagentTiming')?.turns === 1)
      w.send('spawn kid')
      expect(await w.line()).toBe('spawned kid')
      await until(() => view.projections.get('subagentCatalog')?.[0]?.id === 'kid')
      w.send(`append ${JSON.stringify({ type: 'turn/end', time: 1600 })}`)
      expect(await w.line()).toMatch(/^ack 2 \d+$/)
      await until(() => view.projections.get('subagentTiming')?.settledMs === 600)
      expect(seqs.at(-1)).toBe(2)
      const a = await sealedFs({ dir })
      expect(view.projections.snapshot()).toEqual(await fullRefold(a, 's'))
      await a.close()
      const types: string[] = []
      for await (const e of view.events()) types.push(e.type)
      expect(types).toEqual(['turn/start', 'subagent/catalog', 'turn/end'])
      // The writer closes: its lock goes with it, and this process may write.
      w.send('close')
      await w.exited
      const s = await store.openSession('s')
      expect(await s.append({ type: 'app/mine' })).toEqual({ firstSeq: 3, lastSeq: 3 })
      await store.close()
    })
  }

  it('processes racing for the lock of a SIGKILLed writer: exactly one takes it over, each round', async () => {
    child = await holder('s')
    child.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))
    let racers: Writer[] = await Promise.all([writer(), writer(), writer()])
    for (let round = 0; round < 2; round++) {
      const startAt = Date.now() + 200
      for (const r of racers) r.send(`open s ${startAt}`)
      const results = await Promise.all(racers.map((r) => r.line()))
      expect(
        results.filter((l) => l === 'won s'),
        results.join(', '),
      ).toHaveLength(1)
      expect(results.filter((l) => l === 'locked s')).toHaveLength(racers.length - 1)
      // The winner dies holding it: the next round races for its lock.
      const winner = racers[results.indexOf('won s')]!
      winner.process.kill('SIGKILL')
      await winner.exited
      racers = racers.filter((r) => r !== winner)
    }
  })

  it('writers racing in one instant for a dead lock: exactly one takes it over (50 rounds, 3 racers)', async () => {
    // A lock file of a process that is gone (SIGKILLed), copied per round.
    child = await holder('dead')
    child.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))
    const dead = await readFile(join(dir, 'locks', `${folderOf('dead')}.lock`), 'utf8')
    expect(JSON.parse(dead)).toMatchObject({ pid: child.pid })
    for (let round = 0; round < 50; round++) {
      const id = `r${round}`
      await writeFile(join(dir, 'locks', `${folderOf(id)}.lock`), dead)
      const racers = [createFsLocks(dir), createFsLocks(dir), createFsLocks(dir)]
      const results = await Promise.allSettled(racers.map((l) => l.acquire(id)))
      expect(
        results.filter((r) => r.status === 'fulfilled'),
        `round ${round}`,
      ).toHaveLength(1)
      for (const r of results) if (r.status === 'rejected') expect((r.reason as { code?: string }).code).toBe('SESSION_LOCKED')
    }
    expect((await readdir(join(dir, 'locks'))).filter((n) => n.includes('takeover'))).toEqual([])
  })

  it('tells the holder when another engine was refused its lock since a time (wanted), and forgets it on release', async () => {
    const [a, b] = [createFsLocks(dir), createFsLocks(dir)]
    const release = await a.acquire('w')
    const since = Date.now()
    expect(await a.wanted!('w', since)).toBe(false)
    await expectCode(b.acquire('w'), 'SESSION_LOCKED')
    expect(await a.wanted!('w', since)).toBe(true)
    expect(await a.wanted!('w', Date.now() + 5_000), 'a refusal before the time asked about').toBe(false)
    expect(await a.wanted!('other', since), 'another session').toBe(false)
    await release()
    expect(await b.wanted!('w', since), 'released: the want is gone with the lock').toBe(false)
    const again = await b.acquire('w')
    expect(await b.wanted!('w', since)).toBe(false)
    await again()
    expect((await readdir(join(dir, 'locks'))).filter((n) => n.includes(folderOf('w')))).toEqual([])
  })

  it('a thread that dies while writing a lock leaves none behind: the session is free at once', async () => {
    await mkdir(join(dir, 'locks'), { recursive: true })
    const worker = new Worker(new URL('../../src/client/node-boot.mjs', import.meta.url), {
      workerData: { entry: new URL('../fixtures/hanging-lock-worker.ts', import.meta.url).href, dir, id: 's' },
    })
    const thread = worker.threadId
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (m) => (m === 'writing' ? resolve() : reject(new Error(String(m)))))
      worker.once('error', reject)
    })
    await worker.terminate()
    await releaseThreadLocks(dir, thread) // what the client does when its worker exits
    const release = await createFsLocks(dir).acquire('s') // not 'busy' for two seconds
    expect(await readdir(join(dir, 'locks'))).toEqual([`${folderOf('s')}.lock`])
    await release()
  })

  it("when the engine's worker thread dies, close() returns once its locks are gone: every session opens at once", async () => {
    const store = await openStore({ dir, workerUrl: new URL('../fixtures/dying-worker.ts', import.meta.url) })
    const ids = Array.from({ length: 100 }, (_, i) => `held${i}`)
    const sessions = await Promise.all(ids.map((id) => store.createSession({ id })))
    await expectCode(sessions[0]!.append({ type: 'app/die' }), 'WORKER_TERMINATED')
    await store.close()
    const again = await openStore({ dir, worker: false })
    const opened = await Promise.allSettled(ids.map((id) => again.openSession(id)))
    expect(opened.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason?.message)).toEqual([])
    await again.close()
  })
})
