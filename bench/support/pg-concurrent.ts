// Part (2) of bench/postgres.ts: child processes (this file run with --child), each with its own
// PostgreSQL store, appending to its sessions while observing another process's; the aggregate
// events/s, the ack → subscriber time across processes, and the CPU they took.
import { fork, type ChildProcess } from 'node:child_process'
import * as fs from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { openStore, type SessionView, type Store } from '../../src/index-node'

const log = (s: string) => process.stderr.write(`${s}\n`)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type ToChild =
  | { kind: 'create'; url: string; schema: string; me: number; sessions: number }
  | { kind: 'observe'; ids: string[] }
  | { kind: 'go'; until: number; paceMs: number }
  | { kind: 'close' }
type FromChild =
  | { kind: 'ready' }
  | { kind: 'done'; acks: [string, number, number][]; seen: [string, number, number][]; events: number; ms: number; cpuMs: number }

async function child(): Promise<void> {
  let store: Store | undefined
  const writers: Awaited<ReturnType<Store['createSession']>>[] = []
  const views: SessionView[] = []
  /** [session, seq, wall ms] of every acked append and of every snapshot an observer got. */
  const acks: [string, number, number][] = []
  const seen: [string, number, number][] = []
  const send = (m: FromChild) => process.send!(m)
  process.on('message', async (m: ToChild) => {
    try {
      if (m.kind === 'create') {
        store = await openStore({ storage: 'postgres', url: m.url, schema: m.schema })
        for (let j = 0; j < m.sessions; j++) writers.push(await store.createSession({ id: `p${m.me}-s${j}` }))
        send({ kind: 'ready' })
      } else if (m.kind === 'observe') {
        for (const id of m.ids) {
          const view = await store!.observe(id)
          view.projections.subscribe((snap) => seen.push([id, snap.asOfSeq, now()]))
          views.push(view)
        }
        send({ kind: 'ready' })
      } else if (m.kind === 'go') {
        const t0 = now()
        const cpu0 = process.cpuUsage()
        let events = 0
        await Promise.all(
          writers.map(async (w) => {
            // Paced: one append every paceMs per session, the sessions spread over the interval.
            let next = t0 + Math.random() * m.paceMs
            while (now() < m.until) {
              if (m.paceMs > 0) {
                if (next >= m.until) break
                const wait = next - now()
                if (wait > 0) await sleep(wait)
                next += m.paceMs
              }
              const r = await w.append({ type: 'message/assistant', data: { sentAt: now(), text: 'the agent read the file and proposed a patch' } })
              acks.push([w.id, r.lastSeq, now()])
              events++
            }
          }),
        )
        const ms = now() - t0
        const cpu = process.cpuUsage(cpu0)
        const cpuMs = (cpu.user + cpu.system) / 1000
        // Give the observers time to hear the last appends before reporting.
        await sleep(1500)
        send({ kind: 'done', acks, seen, events, ms, cpuMs })
      } else if (m.kind === 'close') {
        for (const v of views) await v.close()
        for (const w of writers) await w.close()
        await store?.close()
        process.exit(0)
      }
    } catch (err) {
      console.error(err)
      process.exit(1)
    }
  })
}

export interface Concurrent {
  eventsPerSecond: number
  events: number
  /** ms from an append's ack in its writer's process until an observer in another process had it. */
  latency: { n: number; p50: number; p90: number; p99: number; max: number; unmatched: number }
  /** CPU while appending: of the 8 node processes (all threads), and of the whole machine (the server's included), µs per event. */
  cpu: { nodeUsPerEvent: number; machineUsPerEvent: number; machineBusyPercent: number }
}

/** Busy and total jiffies of the whole machine (/proc/stat), undefined where there is none. */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number)
    const total = f.reduce((a, b) => a + b, 0)
    return { busy: total - f[3]! - f[4]! - (f[7] ?? 0), total }
  } catch {
    return undefined
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

/** `paceMs` 0: every session appends as fast as it can; else one append per session every paceMs. */
export async function runConcurrent(
  CONFIG: { procs: number; sessions: number; seconds: number },
  url: string,
  schema: string,
  observe: boolean,
  paceMs = 0,
): Promise<Concurrent> {
  const file = fileURLToPath(import.meta.url)
  const kids: ChildProcess[] = []
  const waitAll = <T extends FromChild['kind']>(kind: T) =>
    Promise.all(
      kids.map(
        (k) =>
          new Promise<Extract<FromChild, { kind: T }>>((resolve, reject) => {
            const onMessage = (m: FromChild) => {
              if (m.kind !== kind) return
              k.off('message', onMessage)
              resolve(m as Extract<FromChild, { kind: T }>)
            }
            k.on('message', onMessage)
            k.once('exit', (code) => reject(new Error(`a child exited (${code}) while waiting for ${kind}`)))
          }),
      ),
    )
  try {
    for (let i = 0; i < CONFIG.procs; i++) {
      kids.push(
        fork(file, ['--child'], {
          execArgv: ['--import', 'tsx', ...(process.env.BENCH_PG_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PG_CPU_PROF}`] : [])],
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        }),
      )
    }
    let ready = waitAll('ready')
    kids.forEach((k, i) => k.send({ kind: 'create', url, schema, me: i, sessions: CONFIG.sessions } satisfies ToChild))
    await ready
    if (observe) {
      ready = waitAll('ready')
      const ids = (p: number) => Array.from({ length: CONFIG.sessions }, (_, j) => `p${p}-s${j}`)
      kids.forEach((k, i) => k.send({ kind: 'observe', ids: ids((i + 1) % CONFIG.procs) } satisfies ToChild))
      await ready
    }
    const done = waitAll('done')
    const until = now() + 300 + CONFIG.seconds * 1000
    for (const k of kids) k.send({ kind: 'go', until, paceMs } satisfies ToChild)
    await sleep(until - CONFIG.seconds * 1000 - now())
    const ticks0 = machineTicks()
    await sleep(until - now())
    const ticks1 = machineTicks()
    const results = await done
    const exited = kids.map((k) => new Promise((r) => k.once('exit', r)))
    for (const k of kids) k.send({ kind: 'close' } satisfies ToChild)
    await Promise.all(exited)
    // Events over the longest child's appending time (they start and stop on the same clock).
    const events = results.reduce((n, r) => n + r.events, 0)
    const ms = Math.max(...results.map((r) => r.ms))
    // Per session, the snapshots its observer got, in order; each ack matched to the first at or past its seq.
    const seenBy = new Map<string, [number, number][]>()
    for (const r of results) for (const [id, seq, t] of r.seen) (seenBy.get(id) ?? seenBy.set(id, []).get(id)!).push([seq, t])
    const lat: number[] = []
    const slow: [number, number, string][] = []
    let unmatched = 0
    for (const r of results) {
      for (const [id, seq, t] of r.acks) {
        if (!observe) continue
        const hit = seenBy.get(id)?.find(([s]) => s >= seq)
        if (!hit) {
          unmatched++
          continue
        }
        lat.push(hit[1] - t)
        if (process.env.BENCH_PG_DEBUG && hit[1] - t > 50) slow.push([t - (until - CONFIG.seconds * 1000), hit[1] - t, id])
      }
    }
    lat.sort((a, b) => a - b)
    if (process.env.BENCH_PG_DEBUG)
      log(
        `slow (>50 ms), [ms after start, latency, session]: ${JSON.stringify(slow.sort((a, b) => a[0] - b[0]).map(([a, b, c]) => [Math.round(a), Math.round(b), c]))}`,
      )
    const cores = os.cpus().length
    const machineMs = ticks0 && ticks1 ? ((ticks1.busy - ticks0.busy) / (ticks1.total - ticks0.total)) * cores * CONFIG.seconds * 1000 : NaN
    const nodeMs = results.reduce((n, r) => n + r.cpuMs, 0)
    return {
      cpu: {
        nodeUsPerEvent: (nodeMs / events) * 1000,
        machineUsPerEvent: (machineMs / events) * 1000,
        machineBusyPercent: ticks0 && ticks1 ? (100 * (ticks1.busy - ticks0.busy)) / (ticks1.total - ticks0.total) : NaN,
      },
      eventsPerSecond: (events / ms) * 1000,
      events,
      latency: { n: lat.length, p50: quantile(lat, 0.5), p90: quantile(lat, 0.9), p99: quantile(lat, 0.99), max: lat[lat.length - 1]!, unmatched },
    }
  } finally {
    for (const k of kids) if (k.exitCode === null) k.kill()
  }
}

if (process.argv.includes('--child')) void child()
