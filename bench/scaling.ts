// Scaling benchmark (npm run bench:scaling): how cost grows with the length of a session, in Node on
// the fs adapter.
//   (1) cold open: the time to the first projection values from a new engine and adapter
//       (Engine.coldRead) at 1k, 10k, 100k and 1M events, with a checkpoint 200 events behind the
//       end and by full refold; against better-sqlite3 (WAL, bench/sqlite-peer.ts) opened anew, every
//       event selected in seq order and folded by app code. The projection state is the same size
//       at every length: what grows is the log.
//   (2) memory: the heap a live session adds at 1k, 10k and 100k events (BENCH_HEAP_SIZES), and per
//       live session with 300 small sessions open at once.
// Ratios pair runs of the same round (rotating), after a warm-up round. Settings: BENCH_COLD_SIZES,
// BENCH_COLD_ROUNDS, BENCH_HEAP_SIZES, BENCH_HEAP_ROUNDS, BENCH_SESSIONS.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createFsAdapter } from '../src/backends/fs'
import { LOG_FILE, sessionDir } from '../src/backends/fs/layout'
import type { CheckpointRow } from '../src/storage/types'
import type { SessionEvent, SessionId } from '../src/core/model'
import { logModel, rootHeader } from './log-model'
import type { ProjectionSnapshot } from '../src/core/projection'
import { BUILTIN_PROJECTIONS } from '../src/core/units'
import { encodeEvent, type EncodedEvent } from '../src/core/validate'
import { Engine } from '../src/engine'
import { checkpointRowOf, foldEvent, initSlots } from '../src/engine/units'
import { openSqlitePeer, type AppFold } from './sqlite-peer'
import { benchRoot, finishBench, fmt, pairRatios, summarize, type Figure } from './stats'

const list = (name: string, fallback: number[]): number[] => {
  const v = process.env[name]
  const xs = v === undefined || v === '' ? fallback : v.split(',').map((s) => Number(s.trim()))
  if (xs.some((x) => !(Number.isSafeInteger(x) && x > 0))) throw new Error(`bad ${name}=${v}`)
  return xs
}
const env = (name: string, fallback: number): number => {
  const v = process.env[name]
  const x = v === undefined || v === '' ? fallback : Number(v)
  if (!(Number.isSafeInteger(x) && x > 0)) throw new Error(`bad ${name}=${v}`)
  return x
}

const CONFIG = {
  coldSizes: list('BENCH_COLD_SIZES', [1_000, 10_000, 100_000, 1_000_000]),
  coldRounds: env('BENCH_COLD_ROUNDS', 5),
  /** Cold opens with checkpoint per size per round (their median is the round's figure: they take milliseconds). */
  checkpointRepeats: 5,
  behind: 200,
  buildBatch: 10_000,
  /** 1M events through Engine.append take 10–30 s here: the heap stops at 100k to keep the suite under 10 minutes. */
  heapSizes: list('BENCH_HEAP_SIZES', [1_000, 10_000, 100_000]),
  heapRounds: env('BENCH_HEAP_ROUNDS', 5),
  heapBatch: 1_000,
  /** Small sessions open at once for the per-session heap (each is created durably: 4 fsyncs). */
  sessions: env('BENCH_SESSIONS', 300),
  eventsPerSmallSession: 20,
  gcPasses: 6,
  eventBytes: 300,
  turnLength: 200,
  catalogEvery: 331,
  /**
   * Catalog facts only before this seq: every log holds the same 3 children, so its projection
   * state (and checkpoint row) is the same size at every length and what grows is the log alone.
   * (bench/projections.ts measures a log whose catalog grows with it.)
   */
  catalogUntil: 1_000,
}

const TARGETS = {
  /** Cold open with checkpoint at the largest size over the smallest: at most. */
  checkpointLargestVsSmallest: 2,
  /** Full refold over cold open with checkpoint at 100k: at least. */
  refoldVsCheckpoint100k: 50,
}

const log = (msg: string) => process.stderr.write(`${msg}\n`)

function getGc(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc
  if (typeof exposed === 'function') return exposed
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
}
const gc = getGc()
function heapUsed(): number {
  for (let i = 0; i < CONFIG.gcPasses; i++) gc()
  return process.memoryUsage().heapUsed
}

// ---- events (the shape of bench/projections.ts: turns, catalog facts, ~300-byte app events) ----

const eventAt = logModel(CONFIG)
const header = rootHeader

interface ColdLog {
  size: number
  dir: string
  id: SessionId
  row: CheckpointRow
  logBytes: number
  sqlitePath: string
  buildMs: number
}

/**
 * The logs are kept under bench/.tmp/scaling (gitignored) between runs, keyed by everything that
 * shapes them, so a rerun skips building the 1M-event log (about 300 MiB and 20 s here).
 */
const CACHE = new URL('./.tmp/scaling/', import.meta.url).pathname
const CACHE_KEY = JSON.stringify({
  format: 1,
  behind: CONFIG.behind,
  eventBytes: CONFIG.eventBytes,
  turnLength: CONFIG.turnLength,
  catalogEvery: CONFIG.catalogEvery,
  catalogUntil: CONFIG.catalogUntil,
})

async function coldLog(size: number): Promise<ColdLog> {
  const dir = join(CACHE, `cold-${size}`)
  const ready = join(dir, 'ready.json')
  try {
    const saved = JSON.parse(fs.readFileSync(ready, 'utf8')) as { key: string; log: ColdLog }
    if (saved.key === CACHE_KEY && fs.existsSync(saved.log.sqlitePath)) {
      log(`reusing the ${fmt(size, 0)}-event log cached in ${dir}`)
      return saved.log
    }
  } catch {
    // not cached yet
  }
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const c = await buildColdLog(dir, size)
  fs.writeFileSync(ready, JSON.stringify({ key: CACHE_KEY, log: c }))
  log(
    `built a ${fmt(size, 0)}-event log (${fmt(c.logBytes / 2 ** 20, 1)} MiB, checkpoint row ${fmt(JSON.stringify(c.row).length / 1024, 1)} KiB) and its sqlite copy in ${fmt(c.buildMs, 0)} ms`,
  )
  return c
}

/** The log through the fs adapter (relaxed), its checkpoint row `behind` events before the end, and the same events in sqlite. */
async function buildColdLog(root: string, size: number): Promise<ColdLog> {
  const t0 = performance.now()
  const dir = join(root, 'store')
  const id: SessionId = `cold-${size}`
  const cut = size - CONFIG.behind
  const adapter = createFsAdapter({ dir, durability: 'relaxed' })
  const sqlitePath = join(root, 'peer.sqlite')
  const peer = openSqlitePeer(sqlitePath, 'NORMAL')
  await adapter.createSession(header(id))
  const slots = initSlots(BUILTIN_PROJECTIONS, header(id))
  for (let from = 0; from < size; from += CONFIG.buildBatch) {
    const batch: EncodedEvent[] = []
    for (let seq = from; seq < Math.min(size, from + CONFIG.buildBatch); seq++) {
      const e = encodeEvent(eventAt(seq), id)
      batch.push(e)
      if (seq < cut) foldEvent(slots, JSON.parse(e.json) as SessionEvent)
    }
    await adapter.append(id, batch)
    peer.append(id, batch)
  }
  peer.db.pragma('wal_checkpoint(TRUNCATE)')
  peer.close()
  const { row, skipped } = checkpointRowOf(header(id), slots)
  if (skipped.length > 0 || Object.values(row.rows).some((u) => u.seq !== cut - 1)) throw new Error('checkpoint row is not as of the cut')
  await adapter.putCheckpoint(id, row)
  await adapter.close()
  const logBytes = fs.statSync(join(sessionDir(dir, id), LOG_FILE)).size
  return { size, dir, id, row, logBytes, sqlitePath, buildMs: performance.now() - t0 }
}

/** New engine + adapter, coldRead: the first projection values. */
async function coldOpen(c: ColdLog): Promise<{ ms: number; snapshot: ProjectionSnapshot }> {
  const t0 = performance.now()
  const engine = new Engine({ storage: createFsAdapter({ dir: c.dir }) })
  const { snapshot, length } = await engine.coldRead(c.id)
  const ms = performance.now() - t0
  await engine.close()
  if (length !== c.size) throw new Error(`cold read of ${c.id} saw ${length} events`)
  if (Object.keys(snapshot.faults).length > 0) throw new Error(`cold read of ${c.id} has faults`)
  return { ms, snapshot }
}

/** The peer: open the database, select every event of the session, fold in app code. */
function sqliteOpen(c: ColdLog): { ms: number; fold: AppFold } {
  const t0 = performance.now()
  const peer = openSqlitePeer(c.sqlitePath, 'NORMAL')
  const fold = peer.fold(c.id)
  const ms = performance.now() - t0
  peer.close()
  if (fold.length !== c.size) throw new Error(`sqlite peer read ${fold.length} events of ${c.id}`)
  return { ms, fold }
}

/** The values both must agree on: catalog ids in order, and the timing. */
function checkSame(snapshot: ProjectionSnapshot, fold: AppFold, what: string): void {
  const catalog = (snapshot.values.subagentCatalog as { id: string }[] | null) ?? []
  const timing = snapshot.values.subagentTiming as { turns: number; settledMs: number; runningSince: number | null } | null
  const a = JSON.stringify({ ids: catalog.map((e) => e.id), timing })
  const b = JSON.stringify({ ids: fold.catalog.map((e) => e.id), timing: fold.timing })
  if (a !== b) throw new Error(`${what}: sessionfold and the sqlite peer disagree`)
}

type ColdVariant = 'checkpoint' | 'refold' | 'sqlite'

async function benchCold() {
  const logs: ColdLog[] = []
  for (const size of CONFIG.coldSizes) logs.push(await coldLog(size))
  const samples = new Map<number, Record<ColdVariant, number[]>>(logs.map((c) => [c.size, { checkpoint: [], refold: [], sqlite: [] }]))
  for (let r = 0; r <= CONFIG.coldRounds; r++) {
    const warmUp = r === 0
    const order = r % 2 === 0 ? logs : [...logs].reverse()
    const line: string[] = []
    for (const c of order) {
      const s = samples.get(c.size)!
      const a = createFsAdapter({ dir: c.dir })
      const variants: [ColdVariant, () => Promise<number>][] = [
        [
          'checkpoint',
          async () => {
            await a.putCheckpoint(c.id, c.row)
            const runs: number[] = []
            let last: ProjectionSnapshot | undefined
            for (let k = 0; k < CONFIG.checkpointRepeats; k++) {
              const x = await coldOpen(c)
              runs.push(x.ms)
              last = x.snapshot
            }
            checkSame(last!, sqliteCheck(c), `cold open with checkpoint, ${c.size}`)
            return summarize(runs).median
          },
        ],
        [
          'refold',
          async () => {
            await a.deleteCheckpoint(c.id)
            const x = await coldOpen(c)
            checkSame(x.snapshot, sqliteCheck(c), `full refold, ${c.size}`)
            return x.ms
          },
        ],
        ['sqlite', async () => sqliteOpen(c).ms],
      ]
      const k = r % variants.length
      for (const [name, run] of [...variants.slice(k), ...variants.slice(0, k)]) {
        const ms = await run()
        if (!warmUp) s[name].push(ms)
        line.push(`${fmt(c.size, 0)} ${name} ${fmt(ms)}`)
      }
      await a.putCheckpoint(c.id, c.row)
      await a.close()
    }
    log(`cold ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.coldRounds}`}: ${line.join(', ')} ms`)
  }
  const bySize = logs.map((c) => {
    const s = samples.get(c.size)!
    return {
      size: c.size,
      logBytes: c.logBytes,
      buildMs: c.buildMs,
      checkpointRowBytes: JSON.stringify(c.row).length,
      checkpoint: summarize(s.checkpoint),
      refold: summarize(s.refold),
      sqlite: summarize(s.sqlite),
      refoldOverCheckpoint: summarize(pairRatios(s.refold, s.checkpoint)),
      sqliteOverCheckpoint: summarize(pairRatios(s.sqlite, s.checkpoint)),
      sqliteOverRefold: summarize(pairRatios(s.sqlite, s.refold)),
    }
  })
  const smallest = samples.get(CONFIG.coldSizes[0]!)!
  const largest = samples.get(CONFIG.coldSizes.at(-1)!)!
  const largestOverSmallest = summarize(pairRatios(largest.checkpoint, smallest.checkpoint))
  return { bySize, largestOverSmallest }
}

const peerChecks = new Map<number, AppFold>()
/** The peer's fold of a log, computed once (untimed), to check sessionfold's values against. */
function sqliteCheck(c: ColdLog): AppFold {
  let f = peerChecks.get(c.size)
  if (!f) peerChecks.set(c.size, (f = sqliteOpen(c).fold))
  return f
}

/** Heap a live session of `events` events adds to an engine (fs adapter). */
/** Lets the checkpoint an append started finish, so the heap holds the session at rest, not a write in flight. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 150))

async function heapOfSession(root: string, tag: string, events: number): Promise<number> {
  const engine = new Engine({ storage: createFsAdapter({ dir: join(root, 'heap'), durability: 'relaxed' }) })
  const id = `heap-${tag}`
  await engine.createSession({ id })
  await engine.release(id, 'writer')
  const before = heapUsed()
  await engine.openSession(id)
  for (let from = 0; from < events; from += CONFIG.heapBatch) {
    const inputs = []
    for (let seq = from; seq < Math.min(events, from + CONFIG.heapBatch); seq++) {
      const { type, time, data } = eventAt(seq)
      inputs.push({ type, time, data })
    }
    await engine.append(id, inputs, { expectedSeq: from })
  }
  if (engine.liveSeq(id) !== events - 1) throw new Error(`live session ${id} is at seq ${engine.liveSeq(id)}`)
  await settle()
  const live = heapUsed()
  await engine.close()
  fs.rmSync(sessionDir(join(root, 'heap'), id), { recursive: true, force: true })
  return live - before
}

/** Heap per live session with `n` small sessions open at once in one engine. */
async function heapPerSession(root: string, tag: string, n: number): Promise<number> {
  const engine = new Engine({ storage: createFsAdapter({ dir: join(root, `many-${tag}`), durability: 'relaxed' }) })
  await engine.createSession({ id: 'warm-up' })
  const before = heapUsed()
  const ids: SessionId[] = []
  for (let i = 0; i < n; i++) {
    const id = `s-${String(i).padStart(5, '0')}`
    await engine.createSession({ id })
    const inputs = Array.from({ length: CONFIG.eventsPerSmallSession }, (_, k) => {
      const { type, time, data } = eventAt(k)
      return { type, time, data }
    })
    await engine.append(id, inputs, { expectedSeq: 0 })
    ids.push(id)
  }
  await settle()
  const live = heapUsed()
  for (const id of ids) if (engine.liveSeq(id) !== CONFIG.eventsPerSmallSession - 1) throw new Error(`session ${id} is not live`)
  await engine.close()
  fs.rmSync(join(root, `many-${tag}`), { recursive: true, force: true })
  return (live - before) / n
}

async function benchHeap(root: string) {
  // Warm-up: compiles the append, fold and checkpoint paths.
  await heapOfSession(root, 'warm-up', 20_000)
  await heapPerSession(root, 'warm-up', 50)
  const bySize = new Map<number, number[]>(CONFIG.heapSizes.map((n) => [n, []]))
  const perSession: number[] = []
  for (let r = 1; r <= CONFIG.heapRounds; r++) {
    const line: string[] = []
    const sizes = r % 2 === 0 ? [...CONFIG.heapSizes].reverse() : CONFIG.heapSizes
    for (const n of sizes) {
      const bytes = await heapOfSession(root, `${r}-${n}`, n)
      bySize.get(n)!.push(bytes)
      line.push(`${fmt(n, 0)} events ${fmt(bytes / 1024, 1)} KiB`)
    }
    const per = await heapPerSession(root, String(r), CONFIG.sessions)
    perSession.push(per)
    line.push(`${fmt(per / 1024, 1)} KiB per live session (${fmt(CONFIG.sessions, 0)} open)`)
    log(`heap round ${r}/${CONFIG.heapRounds}: ${line.join(', ')}`)
  }
  return {
    bySize: CONFIG.heapSizes.map((n) => ({ events: n, bytes: summarize(bySize.get(n)!) })),
    perLiveSession: summarize(perSession),
  }
}

async function main(): Promise<void> {
  const started = performance.now()
  const { root, cleanup } = await benchRoot('sessionfold-bench-scaling-')
  try {
    log(`temp dir ${root}`)
    const cold = await benchCold()
    const heap = await benchHeap(root)

    const at100k = cold.bySize.find((x) => x.size === 100_000)
    const targets = [
      {
        name: `cold open with checkpoint: ${fmt(CONFIG.coldSizes.at(-1)!, 0)} events / ${fmt(CONFIG.coldSizes[0]!, 0)} events`,
        perRound: cold.largestOverSmallest,
        target: `≤ ${TARGETS.checkpointLargestVsSmallest}`,
        result: cold.largestOverSmallest.median <= TARGETS.checkpointLargestVsSmallest ? 'PASS' : 'MISS',
      },
      ...(at100k
        ? [
            {
              name: 'full refold / cold open with checkpoint, 100,000 events',
              perRound: at100k.refoldOverCheckpoint,
              target: `≥ ${TARGETS.refoldVsCheckpoint100k}`,
              result: at100k.refoldOverCheckpoint.median >= TARGETS.refoldVsCheckpoint100k ? 'PASS' : 'MISS',
            },
          ]
        : []),
    ]

    finishBench(
      'scaling',
      'sessionfold scaling benchmark: fs adapter, new engine + adapter per cold open',
      [
        ...cold.bySize.flatMap((x): Figure[] => [
          [`cold open, ${fmt(x.size, 0)} events, with checkpoint`, x.checkpoint, 'ms', 2],
          [`the same, full refold`, x.refold, 'ms', 1],
          ['the same, better-sqlite3 + app fold', x.sqlite, 'ms', 1],
        ]),
        ...heap.bySize.map((x): Figure => [`heap of a live session of ${fmt(x.events, 0)} events`, x.bytes, 'bytes', 0]),
        [`heap per live session, ${fmt(CONFIG.sessions, 0)} of ${CONFIG.eventsPerSmallSession} events`, heap.perLiveSession, 'bytes', 0],
      ],
      [...targets, ...cold.bySize.map((x) => ({ name: `cold open at ${fmt(x.size, 0)} events: sqlite / checkpoint`, perRound: x.sqliteOverCheckpoint }))],
      {
        config: CONFIG,
        cold: { unit: 'ms', ...cold },
        heap: { unit: 'bytes', ...heap },
        targets,
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
  } finally {
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
