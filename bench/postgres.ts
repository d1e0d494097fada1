// The PostgreSQL store through the public API (npm run bench:postgres, issue 16): what an app
// gets from openStore({ storage: 'postgres', url }) with its defaults (the engine in a
// worker_threads worker, durability strict), on a throwaway cluster on 127.0.0.1 with the
// server's defaults (fsync on, synchronous_commit on: durable figures).
//
//   (1) batched durable appends: batches of 100 events of about 300 bytes, each awaited before
//       the next (`session.append(batch)`), through openStore({ storage: 'postgres' }) and with
//       worker: false, against the same rows (the same JSON bodies, made before the clock
//       starts) inserted with the same driver (`postgres`) straight into a plain events table
//       of the same shape ((session_id, seq) primary key, body text), one transaction per batch.
//       Diagnostics: the adapter alone, and the same calls on storage 'memory' (no database).
//   (2) 8 child processes, each opening its own store and writing 50 sessions at once (single
//       events, each session's appends awaited one after another, as fast as they go; then
//       again paced: each session one append every 4 s, then every 2 s) while observing the 50
//       sessions of the next process (store.observe(id), projections.subscribe): the aggregate
//       events/s, and the time from an append acked in one process until a subscriber in
//       another process is called with a snapshot that includes it (wall-clock timestamps,
//       performance.timeOrigin + performance.now(), matched by session and seq; each event also
//       carries its send time in its data).
//   (3) cold open: a new store's observe(id) until it resolves with its first snapshot, for a
//       session of 100,000 events against one of 1,000, both closed by their writer (which
//       writes the close checkpoint). Also the bytes on disk per event (pg_total_relation_size
//       of the events table, its indexes and TOAST included).
//
// Every figure is the median over rounds (min and max beside it) after one unrecorded warm-up
// round; ratios pair runs of the same round, in an order that rotates from round to round.
// Results go to bench/results-postgres.json (or BENCH_OUT). Settings: BENCH_PG_ROUNDS,
// BENCH_PG_BATCHES, BENCH_PG_PROCS, BENCH_PG_SESSIONS, BENCH_PG_SECONDS, BENCH_PG_BIG,
// BENCH_PG_PACE_MS, BENCH_PG_BUSY_PACE_MS, BENCH_PG_SMALL, BENCH_PG_OPEN_ROUNDS.
import { fork, type ChildProcess } from 'node:child_process'
import * as fs from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { createPostgresAdapter } from '../src/backends/postgres'
import { HEADER_VERSION } from '../src/core/limits'
import { openStore, type EventInput, type SessionView, type Store } from '../src/index-node'
import { encodeEventInput } from '../src/core/validate'
import { startCluster, type PgCluster } from '../test/support/postgres'
import { messageInput, rotate, runRounds, sourceState } from './common'
import { checkSettings, env, fmt, fmtSummary, headlineRatio, type HeadlineRatio, printTable, resultsPath, summarize } from './stats'

const CONFIG = {
  eventBytes: 300,
  batch: 100,
  /** (1) batches per run, each of `batch` events. */
  batches: env('BENCH_PG_BATCHES', 50),
  /**
   * Rounds of (1), after one unrecorded warm-up round. A round takes a few seconds, and one
   * round's ratio ranged from 0.53 to 0.85 on a shared 2-core machine: 11 give a steadier median.
   */
  rounds: env('BENCH_PG_ROUNDS', 11),
  /** (2) child processes, sessions written by each, seconds of appending. */
  procs: env('BENCH_PG_PROCS', 8),
  sessions: env('BENCH_PG_SESSIONS', 50),
  seconds: env('BENCH_PG_SECONDS', 6),
  /** (2) the paced runs: ms between one session's appends (each of procs × sessions). */
  paceMs: env('BENCH_PG_PACE_MS', 4000),
  busyPaceMs: env('BENCH_PG_BUSY_PACE_MS', 2000),
  /** (3) events in the big and the small session, and rounds of cold opens. */
  big: env('BENCH_PG_BIG', 100_000),
  small: env('BENCH_PG_SMALL', 1_000),
  openRounds: env('BENCH_PG_OPEN_ROUNDS', 7),
  /** Events per append while building the sessions of (3) (untimed). */
  buildBatch: 2_000,
}

const TARGETS = {
  /** (1) openStore({ storage: 'postgres' }) events/s ÷ direct driver inserts events/s, at least. */
  batchedWorker: 0.7,
  /** (2) ack → subscriber in another process, p99 ms, at most: in the first paced run (a load that leaves the machine some room). */
  followP99Ms: 100,
  /** (3) cold open of the big session ÷ the small one, at most. */
  coldOpen: 2,
}

const LAYER = {
  worker: "openStore({ storage: 'postgres' }) in a worker",
  thread: "openStore({ storage: 'postgres', worker: false })",
  raw: 'direct driver baseline',
} as const

const log = (s: string) => process.stderr.write(`${s}\n`)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// ---- (2) the child process ----------------------------------------------------------------

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
        await Promise.all(writers.map(async (w) => {
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
        }))
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

interface Concurrent {
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
async function runConcurrent(url: string, schema: string, observe: boolean, paceMs = 0): Promise<Concurrent> {
  const file = fileURLToPath(import.meta.url)
  const kids: ChildProcess[] = []
  const waitAll = <T extends FromChild['kind']>(kind: T) => Promise.all(kids.map((k) => new Promise<Extract<FromChild, { kind: T }>>((resolve, reject) => {
    const onMessage = (m: FromChild) => {
      if (m.kind !== kind) return
      k.off('message', onMessage)
      resolve(m as Extract<FromChild, { kind: T }>)
    }
    k.on('message', onMessage)
    k.once('exit', (code) => reject(new Error(`a child exited (${code}) while waiting for ${kind}`)))
  })))
  try {
    for (let i = 0; i < CONFIG.procs; i++) {
      kids.push(fork(file, ['--child'], { execArgv: ['--import', 'tsx', ...(process.env.BENCH_PG_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PG_CPU_PROF}`] : [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }))
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
    if (process.env.BENCH_PG_DEBUG) log(`slow (>50 ms), [ms after start, latency, session]: ${JSON.stringify(slow.sort((a, b) => a[0] - b[0]).map(([a, b, c]) => [Math.round(a), Math.round(b), c]))}`)
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

// ---- (1) batched appends ------------------------------------------------------------------

let runs = 0

/** `batches` appended one after another to a new session (created before the clock starts); events/s. */
async function runBatched(store: Store, batches: readonly EventInput[][]): Promise<number> {
  const session = await store.createSession()
  const t0 = performance.now()
  for (const b of batches) await session.append(b)
  const ms = performance.now() - t0
  const events = batches.length * batches[0]!.length
  await session.close()
  await store.deleteSession(session.id)
  return (events / ms) * 1000
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  const source = sourceState()
  log('starting a throwaway PostgreSQL cluster (fsync on)')
  const cluster: PgCluster = await startCluster()
  const stores: Store[] = []
  const sqls: postgres.Sql[] = []
  try {
    const url = await cluster.createDatabase('bench')
    const serverVersion = (await cluster.psql('SHOW server_version')).trim()
    const settings = (await cluster.psql("SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync','synchronous_commit','wal_sync_method','shared_buffers')")).trim()
    log(`PostgreSQL ${serverVersion}: ${settings}`)

    // ---- (1) ----
    const worker = await openStore({ storage: 'postgres', url, schema: 'bench_worker' })
    const thread = await openStore({ storage: 'postgres', url, schema: 'bench_thread', worker: false })
    // Checkpoints are a cache of the folded state, written beside the appends: the same store with
    // them pushed past the run shows what they cost a batch.
    const deferred = await openStore({ storage: 'postgres', url, schema: 'bench_deferred', checkpoint: { everyEvents: 1_000_000_000, everyMs: 3_600_000 } })
    const memWorker = await openStore({ storage: 'memory' })
    const memThread = await openStore({ storage: 'memory', worker: false })
    stores.push(worker, thread, deferred, memWorker, memThread)
    const adapter = createPostgresAdapter({ url, schema: 'bench_adapter' })
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    sqls.push(sql)
    await sql.unsafe('CREATE SCHEMA bench_raw; CREATE TABLE bench_raw.events (session_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))')
    const input = messageInput(CONFIG.eventBytes)
    const events = CONFIG.batches * CONFIG.batch
    const batches: EventInput[][] = Array.from({ length: CONFIG.batches }, () => Array.from({ length: CONFIG.batch }, () => input))
    const stamp = Date.now()
    const bodies = batches.map((b, i) => b.map((e, j) => encodeEventInput(e, i * CONFIG.batch + j, 'bench-raw', { now: stamp }).json))
    const bodyBytes = bodies.flat().reduce((n, b) => n + Buffer.byteLength(b), 0) / events

    const runRaw = async (): Promise<number> => {
      const id = `raw-${runs++}`
      const ids = Array.from({ length: CONFIG.batch }, () => id)
      const seqs = bodies.map((b, i) => b.map((_, j) => i * CONFIG.batch + j))
      const t0 = performance.now()
      for (let i = 0; i < bodies.length; i++) {
        await sql.begin((tx) => [tx.unsafe('INSERT INTO bench_raw.events (session_id, seq, body) SELECT * FROM unnest($1::text[], $2::int8[], $3::text[])', [ids, seqs[i]!, bodies[i]!])])
      }
      const ms = performance.now() - t0
      await sql.unsafe('DELETE FROM bench_raw.events WHERE session_id = $1', [id])
      return (events / ms) * 1000
    }
    const runAdapter = async (): Promise<number> => {
      const id = `adapter-${runs++}`
      const encoded = batches.map((b, i) => b.map((e, j) => encodeEventInput(e, i * b.length + j, id, { now: stamp })))
      await adapter.createSession({ version: HEADER_VERSION, id, createdAt: stamp, seedLength: 0, delegationDepth: 0, origin: 'root' })
      const t0 = performance.now()
      for (const b of encoded) await adapter.append(id, b)
      const ms = performance.now() - t0
      await adapter.deleteSession(id)
      return (events / ms) * 1000
    }
    const BATCHED = [
      { key: 'raw', label: 'postgres driver: one transaction per batch, INSERT … unnest into a plain events table', layer: LAYER.raw, run: runRaw },
      { key: 'worker', label: "openStore({ storage: 'postgres' }): session.append(batch), each awaited", layer: LAYER.worker, run: () => runBatched(worker, batches) },
      { key: 'thread', label: "openStore({ storage: 'postgres', worker: false }): the same", layer: LAYER.thread, run: () => runBatched(thread, batches) },
      { key: 'deferred', label: "(diagnostic) openStore({ storage: 'postgres', checkpoint: { everyEvents: 1e9 } }): checkpoints pushed past the run", layer: 'diagnostic (public API, checkpoints deferred)', run: () => runBatched(deferred, batches) },
      { key: 'adapter', label: '(diagnostic) the postgres adapter alone, strict: append(events already numbered and encoded)', layer: 'diagnostic (adapter level)', run: runAdapter },
      { key: 'memWorker', label: "(diagnostic) openStore({ storage: 'memory' }): the same calls, no database", layer: 'diagnostic (no database)', run: () => runBatched(memWorker, batches) },
      { key: 'memThread', label: "(diagnostic) openStore({ storage: 'memory', worker: false }): the same calls", layer: 'diagnostic (no database)', run: () => runBatched(memThread, batches) },
    ]
    const batchedRuns = await runRounds(BATCHED, CONFIG.rounds, events, log, fmt)
    const bS = new Map(BATCHED.map((x) => [x.key, summarize(batchedRuns.get(x.key)!)]))
    for (const s of stores.splice(0)) await s.close()
    await adapter.close()

    // ---- (2) ----
    log(`concurrent: ${CONFIG.procs} processes × ${CONFIG.sessions} sessions for ${CONFIG.seconds} s`)
    const concurrent = await runConcurrent(url, 'bench_procs', true)
    // The same writers with nobody observing: what following 400 sessions from 8 engines costs the writers.
    const writersOnly = await runConcurrent(url, 'bench_procs_solo', false)
    log(`concurrent, no observers: ${fmt(writersOnly.eventsPerSecond, 0)} events/s`)
    // Latency under a given load rather than at saturation (where it is the length of the queue):
    // the same writers and observers, each session appending once every paceMs, then busyPaceMs.
    const paceMs = CONFIG.paceMs
    const paced = await runConcurrent(url, 'bench_procs_paced', true, paceMs)
    const pacedRate = (CONFIG.procs * CONFIG.sessions * 1000) / paceMs
    const busy = await runConcurrent(url, 'bench_procs_busy', true, CONFIG.busyPaceMs)
    log(`concurrent, paced at ${fmt(pacedRate, 0)} events/s: ${fmt(paced.eventsPerSecond, 0)} events/s, ack → other process p50 ${fmt(paced.latency.p50, 1)} ms, p99 ${fmt(paced.latency.p99, 1)} ms`)
    log(`concurrent: ${fmt(concurrent.eventsPerSecond, 0)} events/s, ack → other process p50 ${fmt(concurrent.latency.p50, 1)} ms, p99 ${fmt(concurrent.latency.p99, 1)} ms`)

    // ---- (3) ----
    const build = await openStore({ storage: 'postgres', url, schema: 'bench_open' })
    stores.push(build)
    const buildStart = performance.now()
    const sizes = { big: CONFIG.big, small: CONFIG.small }
    const ids: Record<'big' | 'small' | 'warm', string> = { big: '', small: '', warm: '' }
    const sizesAll = { ...sizes, warm: 10 }
    for (const k of ['big', 'small', 'warm'] as const) {
      const s = await build.createSession()
      ids[k] = s.id
      for (let done = 0; done < sizesAll[k]; done += CONFIG.buildBatch) {
        await s.append(Array.from({ length: Math.min(CONFIG.buildBatch, sizesAll[k] - done) }, () => input))
      }
      await s.close() // writes its close checkpoint
    }
    const buildSeconds = (performance.now() - buildStart) / 1000
    await stores.pop()!.close()
    const checkpoints = Number((await cluster.psql(`SELECT count(*) FROM bench_open.checkpoints WHERE session_id IN ('${ids.big}', '${ids.small}')`, 'bench')).trim())
    if (checkpoints !== 2) throw new Error(`expected a checkpoint row for both sessions, found ${checkpoints}`)
    const rowCount = Number((await cluster.psql('SELECT count(*) FROM bench_open.events', 'bench')).trim())
    const onDisk = {
      events: rowCount,
      eventsTable: Number((await cluster.psql("SELECT pg_total_relation_size('bench_open.events')", 'bench')).trim()),
      checkpointsTable: Number((await cluster.psql("SELECT pg_total_relation_size('bench_open.checkpoints')", 'bench')).trim()),
      bodyBytes,
    }
    const bytesPerEvent = onDisk.eventsTable / rowCount
    log(`built ${fmt(rowCount, 0)} events in ${fmt(buildSeconds, 1)} s; events table ${fmt(onDisk.eventsTable / 2 ** 20, 1)} MiB, ${fmt(bytesPerEvent, 0)} B/event`)

    const openRuns = { big: [] as number[], small: [] as number[] }
    for (let r = 0; r <= CONFIG.openRounds; r++) {
      const warmUp = r === 0
      // A new store each round: nothing of the session is in its memory.
      const store = await openStore({ storage: 'postgres', url, schema: 'bench_open' })
      // A first observe of a third, tiny session: what a store's first observe costs once (its
      // growth listener, the worker's first read) weighs on neither size.
      // It stays open through the timed opens: the store keeps following (listening) meanwhile.
      const warm = await store.observe(ids.warm)
      const line: string[] = []
      for (const k of rotate(['big', 'small'] as const, r)) {
        const t0 = performance.now()
        const view = await store.observe(ids[k])
        const snap = view.projections.snapshot()
        const ms = performance.now() - t0
        if (snap.asOfSeq < sizes[k] - 1) throw new Error(`cold open of ${k}: asOfSeq ${snap.asOfSeq}, expected ${sizes[k] - 1}`)
        await view.close()
        if (!warmUp) openRuns[k].push(ms)
        line.push(`${k} ${fmt(ms, 1)} ms`)
      }
      await warm.close()
      await store.close()
      log(`cold open ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.openRounds}`}: ${line.join(', ')}`)
    }
    const oS = { big: summarize(openRuns.big), small: summarize(openRuns.small) }

    // ---- report ----
    const msPerBatch = (key: string) => (CONFIG.batch / bS.get(key)!.median) * 1000
    const breakdown = {
      rows: [
        ['direct driver: one transaction, one INSERT (the baseline)', msPerBatch('raw')],
        ['the adapter alone (append_group: fence and length checks, INSERT, UPDATE and NOTIFY in one statement, commit)', msPerBatch('adapter')],
        ['client + engine in this thread, no database (validate, stringify, fold, views)', msPerBatch('memThread')],
        ['client + engine through the worker, no database (the same, and the hop)', msPerBatch('memWorker')],
        ["openStore({ storage: 'postgres', worker: false })", msPerBatch('thread')],
        ["openStore({ storage: 'postgres' }), checkpoints pushed past the run", msPerBatch('deferred')],
        ["openStore({ storage: 'postgres' }) (the worker)", msPerBatch('worker')],
      ] as [string, number][],
      floorThread: msPerBatch('raw') / (msPerBatch('adapter') + msPerBatch('memThread')),
      floorWorker: msPerBatch('raw') / (msPerBatch('adapter') + msPerBatch('memWorker')),
    }
    const what = `batched durable appends (${CONFIG.batches} × ${CONFIG.batch} events of ~${CONFIG.eventBytes} B) vs the same rows inserted with the driver, one transaction per batch`
    const headline: HeadlineRatio[] = [
      headlineRatio('pg-batched-worker', what, LAYER.worker, 'openStore events/s ÷ driver events/s', bS.get('worker')!, bS.get('raw')!, { atLeast: TARGETS.batchedWorker }),
      headlineRatio('pg-batched-thread', what, LAYER.thread, 'openStore events/s ÷ driver events/s', bS.get('thread')!, bS.get('raw')!),
      headlineRatio('pg-cold-open', `cold open (new store, observe → first snapshot) of a ${fmt(CONFIG.big, 0)}-event session vs a ${fmt(CONFIG.small, 0)}-event one, both checkpointed`,
        LAYER.worker, `time at ${fmt(CONFIG.big, 0)} ÷ time at ${fmt(CONFIG.small, 0)}`, oS.big, oS.small, { atMost: TARGETS.coldOpen }),
    ]

    console.log('')
    console.log("sessionfold PostgreSQL benchmark: openStore({ storage: 'postgres' }) with its defaults (worker, strict)")
    console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? '?'}); PostgreSQL ${serverVersion} on 127.0.0.1 (${settings})`)
    if (source.commit) console.log(`source: commit ${source.commit}${source.dirty?.length ? `, with uncommitted changes to ${source.dirty.join(', ')}` : ''}`)
    console.log('figures: median (min–max) over rounds; ratios are per round, median (min–max)')
    console.log('')
    console.log(`(1) Batched durable appends, events/s: ${CONFIG.batches} batches of ${CONFIG.batch} events (${fmt(bodyBytes, 0)} bytes per body), each awaited; ${CONFIG.rounds} rounds`)
    printTable(['variant', 'layer', 'events/s median (min–max)'], BATCHED.map((x) => [x.label, x.layer, fmtSummary(bS.get(x.key)!, 0)]), ['left', 'left', 'right'])
    console.log('')
    console.log("Where a batch's time goes (ms per batch of 100, from the medians above)")
    printTable(['part', 'ms per batch'], breakdown.rows.map(([k, v]) => [k, fmt(v, 3)]), ['left', 'right'])
    console.log(`  floor: driver ÷ (adapter + client and engine without a database): in this thread ${fmt(breakdown.floorThread, 2)}, through the worker ${fmt(breakdown.floorWorker, 2)}`)
    console.log('')
    console.log(`(2) ${CONFIG.procs} processes × ${CONFIG.sessions} sessions, single-event appends (each session's awaited one after another) for ${CONFIG.seconds} s, each process observing another's ${CONFIG.sessions}`)
    printTable(['figure', 'value'], [
      ['aggregate events/s', fmt(concurrent.eventsPerSecond, 0)],
      ['events appended', fmt(concurrent.events, 0)],
      ['(diagnostic) aggregate events/s, the same writers with no observers', fmt(writersOnly.eventsPerSecond, 0)],
      ['ack → observer in another process, p50 ms', fmt(concurrent.latency.p50, 1)],
      ['p90 ms', fmt(concurrent.latency.p90, 1)],
      ['p99 ms', fmt(concurrent.latency.p99, 1)],
      ['max ms', fmt(concurrent.latency.max, 1)],
      ['acks matched (unmatched)', `${fmt(concurrent.latency.n, 0)} (${concurrent.latency.unmatched})`],
      ['CPU per event: the node processes, the whole machine (µs); machine busy', `${fmt(concurrent.cpu.nodeUsPerEvent, 0)}, ${fmt(concurrent.cpu.machineUsPerEvent, 0)}; ${fmt(concurrent.cpu.machineBusyPercent, 0)} %`],
      ['(no observers) CPU per event: node, machine (µs); busy', `${fmt(writersOnly.cpu.nodeUsPerEvent, 0)}, ${fmt(writersOnly.cpu.machineUsPerEvent, 0)}; ${fmt(writersOnly.cpu.machineBusyPercent, 0)} %`],
      ...([[paced, paceMs], [busy, CONFIG.busyPaceMs]] as const).flatMap(([r, every]) => [
        [`paced: every session one append per ${fmt(every, 0)} ms, events/s`, fmt(r.eventsPerSecond, 0)],
        ['  ack → observer in another process, p50 / p90 / p99 / max ms', `${fmt(r.latency.p50, 1)} / ${fmt(r.latency.p90, 1)} / ${fmt(r.latency.p99, 1)} / ${fmt(r.latency.max, 1)}`],
        ['  acks matched (unmatched)', `${fmt(r.latency.n, 0)} (${r.latency.unmatched})`],
        ['  CPU per event: node, machine (µs); machine busy', `${fmt(r.cpu.nodeUsPerEvent, 0)}, ${fmt(r.cpu.machineUsPerEvent, 0)}; ${fmt(r.cpu.machineBusyPercent, 0)} %`],
      ]),
    ], ['left', 'right'])
    const followPass = paced.latency.p99 <= TARGETS.followP99Ms
    console.log(`  follow p99, every session one append per ${fmt(paceMs, 0)} ms: ${fmt(paced.latency.p99, 1)} ms, target ≤ ${TARGETS.followP99Ms} ms: ${followPass ? 'PASS' : 'MISS'}`)
    console.log('')
    console.log(`(3) Cold open, ms from store.observe(id) until its first snapshot; a new store per round; ${CONFIG.openRounds} rounds`)
    printTable(['session', 'ms median (min–max)'], [[`${fmt(CONFIG.big, 0)} events, checkpointed`, fmtSummary(oS.big, 1)], [`${fmt(CONFIG.small, 0)} events, checkpointed`, fmtSummary(oS.small, 1)]], ['left', 'right'])
    console.log(`  on disk: events table (heap, primary key, TOAST) ${fmt(onDisk.eventsTable / 2 ** 20, 1)} MiB for ${fmt(rowCount, 0)} events: ${fmt(bytesPerEvent, 0)} B per event (body ${fmt(bodyBytes, 0)} B); ${fmt(bytesPerEvent * 100_000 / 2 ** 20, 1)} MiB per 100k events`)
    console.log('')
    console.log('Headline figures')
    printTable(
      ['figure', 'layer', 'ratio', 'per round median (min–max)', 'of medians', 'target', 'result'],
      headline.map((x) => [x.figure, x.layer, x.ratio, fmtSummary(x.perRound, 2), fmt(x.ofMedians, 2), x.target || '(information)', x.result]),
      ['left', 'left', 'left', 'right', 'right', 'right', 'left'],
    )
    for (const x of headline) {
      if (x.pass !== false) continue
      if (x.id === 'pg-batched-worker') {
        console.log(`  ${x.id} MISS: per batch, the driver takes ${fmt(msPerBatch('raw'), 2)} ms; the adapter ${fmt(msPerBatch('adapter'), 2)} ms (one statement: the INSERT, and the session row's lock and update, the lease check and the NOTIFY beside it);` +
          ` the client and engine ${fmt(msPerBatch('memWorker'), 2)} ms through the worker, ${fmt(msPerBatch('memThread'), 2)} ms in this thread;` +
          ` with checkpoints pushed past the run the store takes ${fmt(msPerBatch('deferred'), 2)} ms against ${fmt(msPerBatch('worker'), 2)} ms.`)
      } else if (x.id === 'pg-cold-open') {
        console.log(`  ${x.id} MISS: ${fmt(oS.big.median, 1)} ms against ${fmt(oS.small.median, 1)} ms (medians); the fastest opens took ${fmt(oS.big.min, 1)} and ${fmt(oS.small.min, 1)} ms,` +
          ` and the per-round ratios ranged ${fmt(x.perRound.min, 2)}–${fmt(x.perRound.max, 2)}: when they spread this wide, the load on the machine decides the median; rerun on a quiet machine.`)
      }
    }
    const totalSeconds = (performance.now() - started) / 1000
    console.log('')
    console.log(`total ${fmt(totalSeconds, 1)} s`)

    const results = {
      benchmark: 'postgres',
      date: new Date().toISOString(),
      source,
      environment: { node: process.version, platform: os.platform(), arch: os.arch(), cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, postgres: serverVersion, settings },
      config: CONFIG,
      targets: TARGETS,
      layers: LAYER,
      headline,
      batched: { unit: 'events/s', bodyBytes, breakdown, variants: BATCHED.map((x) => ({ key: x.key, label: x.label, layer: x.layer, summary: bS.get(x.key) })) },
      concurrent,
      writersOnly: { eventsPerSecond: writersOnly.eventsPerSecond, events: writersOnly.events, cpu: writersOnly.cpu },
      paced: { ...paced, paceMs, askedEventsPerSecond: pacedRate, targetP99Ms: TARGETS.followP99Ms, result: followPass ? 'PASS' : 'MISS' },
      busy: { ...busy, paceMs: CONFIG.busyPaceMs, askedEventsPerSecond: (CONFIG.procs * CONFIG.sessions * 1000) / CONFIG.busyPaceMs },
      coldOpen: { unit: 'ms', buildSeconds, big: oS.big, small: oS.small },
      onDisk: { ...onDisk, bytesPerEvent },
      totalSeconds,
    }
    const out = resultsPath('postgres')
    fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
    console.log(`results written to ${out}`)
  } finally {
    for (const s of stores.splice(0)) await s.close().catch((err) => log(`closing a store: ${err}`))
    for (const s of sqls) await s.end({ timeout: 5 }).catch(() => {})
    await cluster.stop()
  }
}

if (process.argv.includes('--child')) {
  void child()
} else {
  main().catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
}
