// Projection benchmark of the engine (npm run bench:projections), each a ratio of runs in the same rounds:
//   (a) one `subagent/catalog` append through Engine.append (memory adapter) on a session whose catalog
//       holds 10,000 entries, against 10; default checkpoints, and (information) throttled ones off.
//   (b), (c) cold read with a checkpoint against a full refold of 100,000 events, and the refold
//       against a raw read + JSON.parse of the same file (bench/support/cold-reads.ts).
//   (d) heap held by a live 100,000-event session beyond the heap of its projection states.
// Heap figures need gc: the npm script runs node with --expose-gc (else v8.setFlagsFromString).
// BENCH_ONLY=a,b,c,d runs a subset ((b) and (c) share their runs).
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createFsAdapter } from '../src/backends/fs'
import { createMemoryAdapter } from '../src/backends/memory'
import type { Json, SessionId } from '../src/core/model'
import { logModel } from './log-model'
import { BUILTIN_PROJECTIONS } from '../src/core/units'
import type { CatalogState } from '../src/core/units/catalog'
import { CATALOG } from '../src/core/units/payloads'
import { Engine, type EngineOptions } from '../src/engine'
import { checkpointRowOf, restoreSlots } from '../src/engine/units'
import { alternate } from './common'
import { READERS, READER_LABELS, READ_CONFIG, benchReads } from './support/cold-reads'
import { benchRoot, checkSettings, env, finishBench, fmt, ratio, summarize, type Figure, type Ratio, type Summary } from './stats'

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  // (a)
  catalogSmall: 10,
  catalogLarge: env('BENCH_CATALOG', 10_000),
  /**
   * Timed single-fact appends per run: 256, the default checkpoint.everyEvents, so each run
   * holds exactly one throttled checkpoint and a catalog grows by no more than 256 during it.
   */
  appendsPerRun: env('BENCH_APPENDS', 256),
  /** Runs per round of each D and policy, each on its own freshly prefilled session. */
  appendSessions: env('BENCH_APPEND_SESSIONS', 4),
  appendRounds: env('BENCH_APPEND_ROUNDS', 11),
  prefillBatch: 1_000,
  // (d)
  heapEvents: env('BENCH_HEAP_EVENTS', 100_000),
  heapBatch: 1_000,
  heapRounds: env('BENCH_HEAP_ROUNDS', 5),
  /** Events of the unrecorded warm-up session of (d). */
  heapWarmupEvents: 20_000,
  /** Copies of the states measured together, for their per-copy heap. */
  stateCopies: 20,
  gcPasses: 6,
  // the log's shape, (b) to (d): as in bench/support/cold-reads.ts
  eventBytes: 300,
  turnLength: 200,
  catalogEvery: 331,
}

const TARGETS = {
  appendLargeVsSmall: 1.5, // at most
  retainedBytes: 2 * 2 ** 20, // under
}

const ONLY = new Set((process.env.BENCH_ONLY ?? 'a,b,c,d').split(',').map((s) => s.trim()))

const log = (msg: string) => process.stderr.write(`${msg}\n`)

// ---- gc and heap --------------------------------------------------------------------------

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

/**
 * Collects the garbage other scenarios left, then waits for V8's concurrent sweeping to finish,
 * so neither lands on the next timed run (a gc() right before a few-ms run slows it down).
 */
async function settleHeap(): Promise<void> {
  gc()
  await new Promise((resolve) => setTimeout(resolve, 25))
}

function heapAll(): NodeJS.MemoryUsage {
  for (let i = 0; i < CONFIG.gcPasses; i++) gc()
  return process.memoryUsage()
}

// ---- events -------------------------------------------------------------------------------

/** The fact of (a), as the brief gives it. */
const FACT = { type: CATALOG, data: { v: 2, childId: 'c123', childCreatedAt: 1, mode: 'one-shot' } } satisfies { type: string; data: Json }

const logEventAt = logModel(CONFIG)

const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`

// ---- (a) appends at D entries -------------------------------------------------------------

type Policy = 'default' | 'off'
const POLICIES: Record<Policy, EngineOptions['checkpoint']> = {
  default: undefined,
  // No throttled checkpoint during a run (creation, release and turn/end still write one).
  off: { everyEvents: 1e12, everyMs: 1e9 },
}

/**
 * A session holding `d` catalog entries, open for writing and running: after the prefill it
 * takes one untimed run of single appends, so the timed runs see a session in its steady
 * state (the engine bounds checkpoint work by what the last checkpoint cost, which a session
 * learns from its first one; that one-time cost after opening is not the per-append cost).
 */
async function prefilled(engine: Engine, id: SessionId, d: number): Promise<void> {
  await engine.createSession({ id })
  for (let done = 0; done < d; done += CONFIG.prefillBatch) {
    await engine.append(
      id,
      Array.from({ length: Math.min(CONFIG.prefillBatch, d - done) }, () => FACT),
    )
  }
  await appendRun(engine, id, CONFIG.appendsPerRun)
}

const catalogLength = (engine: Engine, id: SessionId) => (engine.liveState(id, 'subagentCatalog')?.state as CatalogState | undefined)?.entries.length ?? -1

/** `n` single-fact appends, each awaited. Returns microseconds per append. */
async function appendRun(engine: Engine, id: SessionId, n: number): Promise<number> {
  const before = catalogLength(engine, id)
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await engine.append(id, FACT)
  const us = ((performance.now() - t0) * 1000) / n
  if (catalogLength(engine, id) !== before + n) throw new Error(`catalog of ${id} holds ${catalogLength(engine, id)} entries, expected ${before + n}`)
  return us
}

interface AppendResults {
  us: Record<Policy, { small: Summary; large: Summary }>
  ratios: { appendDefault: Ratio; appendOff: Ratio }
}

async function benchAppends(): Promise<AppendResults> {
  const { catalogSmall: small, catalogLarge: large, appendsPerRun: n, appendSessions: sessions } = CONFIG
  const samples = { default: { small: [] as number[], large: [] as number[] }, off: { small: [] as number[], large: [] as number[] } }
  for (let r = 0; r <= CONFIG.appendRounds; r++) {
    const warmUp = r === 0
    const line: string[] = []
    for (const policy of (r % 2 === 0 ? ['default', 'off'] : ['off', 'default']) as Policy[]) {
      const engine = new Engine({ storage: createMemoryAdapter(), checkpoint: POLICIES[policy] })
      for (let k = 0; k < sessions; k++) {
        await prefilled(engine, `small-${k}`, small)
        await prefilled(engine, `large-${k}`, large)
      }
      await settleHeap() // the prefills' garbage is collected before timing, not during it
      const total = { small: 0, large: 0 }
      for (let k = 0; k < sessions; k++) {
        await alternate(r + k, [
          async () => {
            total.small += await appendRun(engine, `small-${k}`, n)
          },
          async () => {
            total.large += await appendRun(engine, `large-${k}`, n)
          },
        ])
      }
      await engine.close()
      for (const size of ['small', 'large'] as const) {
        const us = total[size] / sessions
        if (!warmUp) samples[policy][size].push(us)
        line.push(`${policy}/${size === 'small' ? small : large} ${fmt(us, 1)}`)
      }
    }
    log(`append ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.appendRounds}`}: ${line.join(', ')} µs per append`)
  }

  const us = {
    default: { small: summarize(samples.default.small), large: summarize(samples.default.large) },
    off: { small: summarize(samples.off.small), large: summarize(samples.off.large) },
  }
  return {
    us,
    ratios: {
      appendDefault: ratio(`(a) append at D=${fmt(large, 0)} / D=${small}`, us.default.large, us.default.small, { atMost: TARGETS.appendLargeVsSmall }),
      appendOff: ratio(`append at D=${fmt(large, 0)} / D=${small}, throttled checkpoints off`, us.off.large, us.off.small),
    },
  }
}

// ---- (d) heap of a live session -----------------------------------------------------------

interface HeapRound {
  events: number
  /** heapUsed before openSession, after the appends (and halfway), after release, after close. */
  before: number
  half: number
  live: number
  released: number
  closed: number
  /** Bytes of the live session: live - before. */
  session: number
  /** Heap of one copy of the states, and the JSON length of their checkpoint row. */
  statesHeap: number
  rowJsonBytes: number
  /** session - statesHeap. */
  retained: number
  /** (live - half) / (events / 2): heap growth per event appended in the second half. */
  perEventSecondHalf: number
  externalDelta: number
  appendMs: number
}

async function heapRound(dir: string, id: SessionId, events: number): Promise<HeapRound> {
  const engine = new Engine({ storage: createFsAdapter({ dir }) })
  const head = await engine.createSession({ id })
  await engine.release(id, 'writer')
  const m0 = heapAll()
  const before = m0.heapUsed

  await engine.openSession(id)
  let half = Number.NaN
  const t0 = performance.now()
  let pausedMs = 0
  for (let from = 0; from < events; from += CONFIG.heapBatch) {
    const inputs = []
    for (let seq = from; seq < Math.min(events, from + CONFIG.heapBatch); seq++) {
      const { type, time, data } = logEventAt(seq)
      inputs.push({ type, time, data })
    }
    await engine.append(id, inputs, { expectedSeq: from })
    if (from + CONFIG.heapBatch === events / 2) {
      const p0 = performance.now()
      half = heapUsed()
      pausedMs += performance.now() - p0
    }
  }
  const appendMs = performance.now() - t0 - pausedMs
  const m1 = heapAll()
  const live = m1.heapUsed

  // The states themselves: `stateCopies` copies restored from their row, measured together.
  const { row } = checkpointRowOf(
    head,
    // Every built-in unit (sessionMeta since §14: the row of three no longer restored whole).
    BUILTIN_PROJECTIONS.map((def) => ({ def, state: engine.liveState(id, def.key as 'subagent')!.state, seq: events - 1 })),
  )
  const rowJson = JSON.stringify(row)
  const h0 = heapUsed()
  const copies: unknown[][] = []
  for (let k = 0; k < CONFIG.stateCopies; k++) {
    const { slots, kept } = restoreSlots(BUILTIN_PROJECTIONS, head, JSON.parse(rowJson), events)
    if (kept !== BUILTIN_PROJECTIONS.length) throw new Error('the states did not restore')
    copies.push(slots.map((s) => s.state))
  }
  const h1 = heapUsed()
  const statesHeap = (h1 - h0) / copies.length
  copies.length = 0

  await engine.release(id, 'writer')
  const released = heapUsed()
  await engine.close()
  const closed = heapUsed()
  const session = live - before
  return {
    events,
    before,
    half,
    live,
    released,
    closed,
    session,
    statesHeap,
    rowJsonBytes: rowJson.length,
    retained: session - statesHeap,
    perEventSecondHalf: (live - half) / (events / 2),
    externalDelta: m1.external - m0.external,
    appendMs,
  }
}

interface HeapResults {
  rounds: HeapRound[]
  session: Summary
  statesHeap: Summary
  retained: Summary
  perEventSecondHalf: Summary
  pass: boolean
}

async function benchHeap(root: string): Promise<HeapResults> {
  const dir = join(root, 'heap')
  // Warm-up: compiles the append, fold and checkpoint paths before anything is measured.
  const w = await heapRound(dir, 'heap-warmup', CONFIG.heapWarmupEvents)
  log(`heap warm-up (${fmt(w.events, 0)} events): session ${kib(w.session)}, states ${kib(w.statesHeap)}`)
  const rounds: HeapRound[] = []
  for (let r = 1; r <= CONFIG.heapRounds; r++) {
    const h = await heapRound(dir, `heap-${r}`, CONFIG.heapEvents)
    rounds.push(h)
    log(
      `heap round ${r}/${CONFIG.heapRounds}: ${fmt(h.events, 0)} events appended in ${fmt(h.appendMs, 0)} ms; session ${kib(h.session)}, ` +
        `states ${kib(h.statesHeap)} (row ${kib(h.rowJsonBytes)} of JSON), retained beyond states ${kib(h.retained)}; ` +
        `after release ${kib(h.released - h.before)}, after close ${kib(h.closed - h.before)} vs before`,
    )
  }
  const retained = summarize(rounds.map((h) => h.retained))
  return {
    rounds,
    session: summarize(rounds.map((h) => h.session)),
    statesHeap: summarize(rounds.map((h) => h.statesHeap)),
    retained,
    perEventSecondHalf: summarize(rounds.map((h) => h.perEventSecondHalf)),
    pass: retained.median < TARGETS.retainedBytes,
  }
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  const { root, cleanup } = await benchRoot('sessionfold-bench-proj-')
  try {
    checkSettings(CONFIG)
    if (CONFIG.appendsPerRun % 256 !== 0) throw new Error('BENCH_APPENDS must be a multiple of 256 (the default checkpoint.everyEvents)')
    if (CONFIG.heapEvents % (2 * CONFIG.heapBatch) !== 0) throw new Error('BENCH_HEAP_EVENTS must be a multiple of 2,000')
    const appends = ONLY.has('a') ? await benchAppends() : undefined
    const reads = ONLY.has('b') || ONLY.has('c') ? await benchReads(root) : undefined
    const heap = ONLY.has('d') ? await benchHeap(root) : undefined

    const figures: Figure[] = []
    const ratios: Ratio[] = []
    if (appends) {
      const { us } = appends
      for (const p of ['default', 'off'] as const) {
        figures.push(
          [`append, D=${CONFIG.catalogSmall}, checkpoints ${p}`, us[p].small, 'µs'],
          [`append, D=${fmt(CONFIG.catalogLarge, 0)}, checkpoints ${p}`, us[p].large, 'µs'],
        )
      }
      ratios.push(appends.ratios.appendDefault, appends.ratios.appendOff)
    }
    if (reads) {
      for (const k of READERS)
        figures.push(
          [`cold read with checkpoint, ${READER_LABELS[k]}`, reads.ms.checkpoint[k], 'ms', 2],
          [`full refold, ${READER_LABELS[k]}`, reads.ms.refold[k], 'ms', 1],
        )
      figures.push(['raw: readFileSync + recordAt (crc) + JSON.parse', reads.ms.raw, 'ms', 1])
      ratios.push(reads.ratios.cold.new, reads.ratios.cold.ready, reads.ratios.cold.warm, reads.ratios.throughput, reads.ratios.throughputNoCrc)
    }
    const heapTarget = heap && {
      name: '(d) heap retained beyond states',
      median: heap.retained.median,
      target: `< ${TARGETS.retainedBytes}`,
      result: heap.pass ? 'PASS' : 'MISS',
    }
    if (heap)
      figures.push(
        ['heap of the live session', heap.session, 'bytes'],
        ['heap of its states', heap.statesHeap, 'bytes'],
        ['retained beyond the states', heap.retained, 'bytes'],
      )
    const pr = heap ? [...ratios, { name: heapTarget!.name, perRound: heap.retained, target: heapTarget!.target, result: heapTarget!.result }] : ratios
    finishBench('projections', 'sessionfold projections benchmark (engine level)', figures, pr, {
      config: { ...CONFIG, ...READ_CONFIG },
      appends,
      reads,
      heap: heap && { unit: 'bytes', ...heap, target: TARGETS.retainedBytes, result: heap.pass ? 'PASS' : 'MISS' },
      targets: [...ratios, ...(heapTarget ? [heapTarget] : [])],
      totalSeconds: (performance.now() - started) / 1000,
    })
  } finally {
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
