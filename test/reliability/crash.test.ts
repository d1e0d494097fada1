// Reliability: SIGKILL of a writing process, and its engine thread exiting mid-append — nothing acknowledged is lost (§7 durability)
// Crash: a child process drives the built client under strict durability (appends to three
// sessions at once, spawns, forks) and is SIGKILLed at random moments, CRASH_ROUNDS times in
// all (default 32, in four independent stores at once; `npm run test:crash` runs 400, about
// three minutes, kept out of the README's test command for its time). After every kill the store is checked:
// every acknowledged event is there and identical; no seq is missing; no checkpoint is ahead
// of its log; every projection read cold equals a full refold (store.verify); acknowledged
// children are in their parent's catalog and acknowledged forks hold their source's prefix.
// Every fourth round also leaves a torn tail (garbage after the last record), which the next
// append must cut and report.
import { type ChildProcess, spawn } from 'node:child_process'
import { appendFile, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sealedFs } from '../support/sealed'
import { folderOf } from '../../src/backends/fs/layout'
import type { StorageAdapter } from '../../src/storage/types'
import { openStore, type Session } from 'sessionfold'
import { encodeEvent } from '../../src/core/validate'
import { ensureBuilt } from '../support/ensure-built'
import { readAll } from '../support/helpers'

/** What the crash child writes as the k-th event of the append tagged `tag` (see the fixture). */
const crashData = (tag: string, k: number) => ({ tag, k, pad: 'p'.repeat(((tag.length + k) * 37) % 400) })

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 32)
const LANES = 4
const fixture = join(__dirname, '../fixtures/crash-client.mjs')

interface Acked {
  appends: { id: string; first: number; last: number; tag: string }[]
  spawns: { parent: string; child: string }[]
  forks: { source: string; fork: string; at: number }[]
}

interface Tally {
  rounds: number
  acked: number
  durableUnacked: number
  tornCut: number
  spawns: number
  forks: number
  checkpoints: number
  maxEvents: number
}

const dirs: string[] = []
beforeAll(() => ensureBuilt())
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})

interface Child {
  process: ChildProcess
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  stderr(): string
}

/**
 * A crash child loaded and waiting for its orders (see the fixture): each lane starts the next
 * one while it checks the store after a kill, so its start-up (Node, the built client) overlaps
 * the check rather than adding to the round. It touches no store until runChild gives it one.
 */
function startChild(): Child {
  const child = spawn(process.execPath, [fixture], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
  child.stdin!.on('error', () => {}) // killed before it read its orders (the spare at the end of a lane)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return { process: child, exited, stderr: () => stderr }
}

/** Runs one started child on `dir` until it is killed; returns the lines it acknowledged. */
function runChild({ process: child, exited, stderr }: Child, dir: string, round: number, worker: boolean): Promise<string[]> {
  // Kill after a random number of acknowledgements (1-50), or at a random time once the first arrived.
  const killAfter = 1 + Math.floor(Math.random() * 50)
  const byTime = Math.random() < 0.3
  const lines: string[] = []
  let buffered = ''
  let timer: NodeJS.Timeout | undefined
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      const parts = buffered.split('\n')
      buffered = parts.pop()!
      for (const line of parts) {
        lines.push(line)
        if (byTime && lines.length === 1) timer = setTimeout(() => child.kill('SIGKILL'), Math.random() * 300)
        if (!byTime && lines.length === killAfter) child.kill('SIGKILL')
      }
    })
    void exited.then(({ code, signal }) => {
      clearTimeout(guard)
      clearTimeout(timer)
      if (signal !== 'SIGKILL') reject(new Error(`crash child ended by itself (code ${code}): ${stderr()}`))
      else resolve(lines) // a partial last line was never acknowledged
    })
    child.stdin!.write(`${JSON.stringify([dir, round, worker ? 'worker' : 'thread'])}\n`)
  })
}

function record(lines: string[], acked: Acked, tally: Tally): void {
  for (const line of lines) {
    const [kind, a, b, c, d] = line.split(' ')
    if (kind === 'ack') {
      acked.appends.push({ id: a!, first: Number(b), last: Number(c), tag: d! })
      tally.acked += Number(c) - Number(b) + 1
    } else if (kind === 'spawn') {
      acked.spawns.push({ parent: a!, child: b! })
      tally.spawns++
    } else if (kind === 'fork') {
      acked.forks.push({ source: a!, fork: b!, at: Number(c) })
      tally.forks++
    } else throw new Error(`unexpected line from the crash child: ${line}`)
  }
}

/** Everything the store must show after a kill. */
async function check(dir: string, acked: Acked, tally: Tally): Promise<void> {
  const adapter = await sealedFs({ dir })
  const cache = new Map<string, Awaited<ReturnType<typeof readAll>>>()
  const eventsOf = async (id: string) => {
    let events = cache.get(id)
    if (!events) cache.set(id, (events = await readAll(adapter, id)))
    return events
  }
  try {
    // No seq missing, nothing beyond the length; no checkpoint ahead of its log.
    let total = 0
    for (const id of await adapter.listIds({ limit: 10_000 })) {
      const info = (await adapter.getSession(id))!
      const events = await eventsOf(id)
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
      expect(events.length).toBe(info.length)
      total += info.length
      const row = (await adapter.getCheckpoint(id)) as { rows?: Record<string, { seq: number }> } | undefined
      if (row?.rows) {
        tally.checkpoints++
        for (const unit of Object.values(row.rows)) expect(unit.seq).toBeLessThan(info.length)
      }
    }
    tally.maxEvents = Math.max(tally.maxEvents, total)
    // Every acknowledged append, event for event.
    for (const { id, first, last, tag } of acked.appends) {
      const events = await eventsOf(id)
      expect(events.length).toBeGreaterThan(last)
      for (let seq = first; seq <= last; seq++) {
        expect(events[seq]!.type).toBe('crash/test')
        expect(events[seq]!.data).toEqual(crashData(tag, seq - first))
      }
    }
    for (const { parent, child } of acked.spawns) {
      const info = await adapter.getSession(child)
      expect(info?.header).toMatchObject({ origin: 'subagent', parentSession: parent })
      expect((await eventsOf(child))[1]!.data).toEqual(crashData(child, 0))
    }
    for (const { source, fork, at } of acked.forks) {
      const [src, copy] = [await eventsOf(source), await eventsOf(fork)]
      expect(copy.slice(0, at)).toEqual(src.slice(0, at))
    }
  } finally {
    await adapter.close()
  }
  // Cold reads: every checkpoint is sound and gives what a full refold gives; acknowledged
  // children are in their parents' catalogs.
  const store = await openStore({ storage: 'fs', dir, worker: false })
  try {
    const report = await store.verify()
    expect(report.damaged).toEqual([])
    for (const parent of new Set(acked.spawns.map((s) => s.parent))) {
      const view = await store.observe(parent)
      const catalog = view.projections.get('subagentCatalog') as { id: string }[]
      const listed = new Set(catalog.map((e) => e.id))
      for (const s of acked.spawns) if (s.parent === parent) expect(listed.has(s.child)).toBe(true)
      await view.close()
    }
  } finally {
    await store.close()
  }
}

/** Garbage after the last record of one root's log, as a write torn by a power cut leaves: the log's size before it, and its length. */
async function tearTail(dir: string, round: number): Promise<{ size: number; bytes: number }> {
  const id = ['r0', 'r1', 'R2'][round % 3]!
  const bytes = 1 + Math.floor(Math.random() * 300)
  const file = join(dir, 'sessions', folderOf(id), 'events.log')
  const { size } = await stat(file)
  await appendFile(file, Buffer.from(Array.from({ length: bytes }, () => Math.floor(Math.random() * 256))))
  return { size, bytes }
}

/** The next append cuts the torn tail and reports it; the marker it writes is acknowledged like any other. */
async function cutTail(dir: string, round: number, torn: { size: number; bytes: number }, acked: Acked, tally: Tally): Promise<void> {
  const id = ['r0', 'r1', 'R2'][round % 3]!
  const repairs: { offset: number; bytes: number }[] = []
  const adapter: StorageAdapter = await sealedFs({ dir, onRepair: (r) => repairs.push(r) })
  const length = (await adapter.getSession(id))!.length
  const tag = `marker.${round}`
  await adapter.append(id, [encodeEvent({ seq: length, type: 'crash/test', time: 1, data: crashData(tag, 0) }, id)])
  await adapter.close()
  // The cut ends where the garbage ends and takes all of it. It may start before it: the killed
  // process can have left part of a batch (Linux ends a write between pages for SIGKILL), which
  // no COMMIT closes; nothing of it was acknowledged (check() of later rounds proves that).
  expect(repairs).toEqual([expect.objectContaining({ sessionId: id })])
  expect(repairs[0]!.offset + repairs[0]!.bytes).toBe(torn.size + torn.bytes)
  expect(repairs[0]!.offset).toBeLessThanOrEqual(torn.size)
  acked.appends.push({ id, first: length, last: length, tag })
  tally.tornCut++
}

/** Rounds on one store before a lane starts a fresh one: keeps the checks after each kill bounded. */
const ROUNDS_PER_STORE = 10

async function lane(lane: number, rounds: number, tally: Tally): Promise<void> {
  let dir = ''
  let acked: Acked = { appends: [], spawns: [], forks: [] }
  let next = startChild()
  try {
    for (let round = 0; round < rounds; round++) {
      if (round % ROUNDS_PER_STORE === 0) {
        if (dir) await countUnacked(dir, acked, tally)
        dir = await mkdtemp(join(tmpdir(), `sessionfold-crash-${lane}-`))
        dirs.push(dir)
        acked = { appends: [], spawns: [], forks: [] }
      }
      const lines = await runChild(next, dir, round, round % 2 === 1)
      next = startChild() // loads while this round is checked
      record(lines, acked, tally)
      let torn: { size: number; bytes: number } | undefined
      if (round % 4 === 3) torn = await tearTail(dir, round)
      await check(dir, acked, tally) // a torn tail is skipped by readers, never damage
      if (torn) await cutTail(dir, round, torn, acked, tally)
      tally.rounds++
    }
  } finally {
    next.process.kill('SIGKILL') // the spare: it never had a store
    await next.exited
  }
  if (dir) await countUnacked(dir, acked, tally)
}

/** Durable but never acknowledged: evidence that kills landed mid-append. */
async function countUnacked(dir: string, acked: Acked, tally: Tally): Promise<void> {
  const adapter = await sealedFs({ dir })
  for (const id of ['r0', 'r1', 'R2']) {
    const length = (await adapter.getSession(id))?.length ?? 0
    const ours = acked.appends.filter((a) => a.id === id).reduce((n, a) => n + a.last - a.first + 1, 0)
    const facts = acked.spawns.filter((s) => s.parent === id).length
    tally.durableUnacked += Math.max(0, length - ours - facts)
  }
  await adapter.close()
}

describe('crash: SIGKILL of a process appending under strict durability', () => {
  it(`loses nothing acknowledged, ${ROUNDS} kills`, async () => {
    const tally: Tally = { rounds: 0, acked: 0, durableUnacked: 0, tornCut: 0, spawns: 0, forks: 0, checkpoints: 0, maxEvents: 0 }
    const per = Math.ceil(ROUNDS / LANES)
    await Promise.all(Array.from({ length: LANES }, (_, i) => lane(i, Math.max(0, Math.min(per, ROUNDS - i * per)), tally)))
    console.log(
      `crash: ${tally.rounds} kills, ${tally.acked} acknowledged events, ${tally.spawns} spawns, ${tally.forks} forks, ` +
        `${tally.durableUnacked} durable but unacknowledged (catalog facts of killed spawns included), ${tally.tornCut} torn tails cut and reported, ` +
        `${tally.checkpoints} checkpoint rows checked, up to ${tally.maxEvents} events per store`,
    )
    expect(tally.rounds).toBe(ROUNDS)
    expect(tally.spawns).toBeGreaterThan(0)
    expect(tally.forks).toBeGreaterThan(0)
    expect(tally.tornCut).toBeGreaterThan(0)
  }, 900_000)
})

describe("crash: the engine's worker thread exits mid-append", () => {
  const ROOTS = ['w0', 'w1', 'W2']
  const WORKER_ROUNDS = 12
  it(`loses nothing acknowledged, ${WORKER_ROUNDS} times; the dead thread's locks are free`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-crash-worker-'))
    dirs.push(dir)
    const acked: Acked = { appends: [], spawns: [], forks: [] }
    const tally: Tally = { rounds: 0, acked: 0, durableUnacked: 0, tornCut: 0, spawns: 0, forks: 0, checkpoints: 0, maxEvents: 0 }
    let terminated = 0
    for (let round = 0; round < WORKER_ROUNDS; round++) {
      process.env.SESSIONFOLD_EXIT_AFTER_MS = String(50 + Math.floor(Math.random() * 250))
      const store = await openStore({
        storage: 'fs',
        dir,
        workerUrl: new URL('../fixtures/exiting-worker.ts', import.meta.url),
        checkpoint: { everyEvents: 16 },
      })
      const sessions: Session[] = []
      try {
        for (const id of ROOTS) sessions.push(await store.createSession({ id }).catch(() => store.openSession(id)))
        for (let n = 0; ; n++) {
          await Promise.all(
            sessions.map(async (s, i) => {
              if ((n + i) % 9 === 4) {
                const child = await s.spawn({
                  mode: 'one-shot',
                  id: `${s.id}-c${round}x${n}`,
                  events: [{ type: 'crash/test', data: crashData(`${s.id}-c${round}x${n}`, 0) }],
                })
                acked.spawns.push({ parent: s.id, child: child.id })
                return
              }
              const tag = `${s.id}.${round}.${n}`
              const r = await s.append(Array.from({ length: 1 + ((n + i) % 20) }, (_, k) => ({ type: 'crash/test', data: crashData(tag, k) })))
              acked.appends.push({ id: s.id, first: r.firstSeq, last: r.lastSeq, tag })
            }),
          )
        }
      } catch (err) {
        // Creating or opening can lose the race too: then nothing of this round was acknowledged.
        expect((err as { code?: string }).code).toBe('WORKER_TERMINATED')
        terminated++
      }
      await store.close()
      await check(dir, acked, tally)
      // The thread's writer locks went with it: the sessions open for writing again.
      const again = await openStore({ storage: 'fs', dir, worker: false })
      for (const id of ROOTS) {
        const info = await again.listSessions({ after: undefined, limit: 10_000 })
        if (info.some((h) => h.id === id)) await (await again.openSession(id)).close()
      }
      await again.close()
    }
    console.log(
      `worker exits: ${terminated} of ${WORKER_ROUNDS} rounds ended by WORKER_TERMINATED, ${acked.appends.length} appends and ${acked.spawns.length} spawns acknowledged and found`,
    )
    expect(terminated).toBe(WORKER_ROUNDS)
    expect(acked.appends.length).toBeGreaterThan(WORKER_ROUNDS)
  }, 300_000)
})
