// Projection benchmark of the engine (npm run bench:projections).
//
//   (a) one `subagent/catalog` append through Engine.append (memory adapter, no watchers) on a
//       session that already holds D = 10,000 catalog entries, against D = 10; with the default
//       checkpoint policy, and (for information) with the throttled checkpoints switched off.
//       Also for information: the pure fold (foldEvent on the catalog unit alone) at both D.
//   (b) a cold read (Engine.coldRead, session not open) of a 100,000-event log on the fs adapter
//       whose checkpoint is 200 events behind the log's end, against the same cold read with the
//       checkpoint deleted (a full refold); as three readers: a new adapter and engine (process
//       start), an adapter already in use that has not loaded this log, and a warm engine.
//   (c) full-refold throughput (events/s of that cold read without checkpoint) against a raw
//       read of the same events.log (fs.readFileSync, recordAt per record, JSON.parse of each
//       payload).
//   (d) heap held by a live 100,000-event session (fs adapter, appended through the engine in
//       batches) beyond the heap of its projection states.
//
// The machine is shared and noisy: every figure is the median of several rounds, with min and
// max, after one unrecorded warm-up round; every comparison is a ratio of runs made back to back
// in the same round, in alternating order. Results also go to bench/results-projections.json.
//
// Heap figures need a callable gc: the npm script runs node with --expose-gc; run directly
// (npx tsx bench/projections.ts) the script enables it through v8.setFlagsFromString.
// BENCH_ONLY=a,b,c,d runs a subset ((b) and (c) share their runs).
import * as fs from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createFsAdapter } from '../src/backends/fs'
import { CHECKPOINT_FILE, LOG_FILE, sessionDir } from '../src/backends/fs/layout'
import { recordAt } from '../src/backends/fs/record-format'
import { createMemoryAdapter } from '../src/backends/memory'
import type { CheckpointRow, StorageAdapter } from '../src/storage/types'
import type { Json, SessionEvent, SessionId } from '../src/core/model'
import { TIME0, logModel, rootHeader } from './log-model'
import type { ProjectionSnapshot } from '../src/core/projection'
import { BUILTIN_PROJECTIONS, subagentCatalogUnit } from '../src/core/units'
import type { CatalogState } from '../src/core/units/catalog'
import { CATALOG } from '../src/core/units/payloads'
import { encodeEvent, type EncodedEvent } from '../src/core/validate'
import { Engine, type EngineOptions } from '../src/engine'
import { checkpointRowOf, foldEvent, initSlots, restoreSlots, type UnitSlot } from '../src/engine/units'
import { benchRoot, checkSettings, env, fmt, fmtSummary, pairRatios, printTable, resultsPath, summarize, type Summary } from './stats'

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
  /** foldEvent calls per sample of the pure fold. */
  foldsPerRun: env('BENCH_FOLDS', 50_000),
  foldRounds: 9,
  // (b), (c)
  logEvents: env('BENCH_LOG_EVENTS', 100_000),
  /** Events after the checkpoint's watermark. */
  behind: 200,
  buildBatch: 5_000,
  readRounds: env('BENCH_READ_ROUNDS', 9),
  /** Cold reads with checkpoint per round (their median is the round's figure). */
  checkpointRepeats: 5,
  // (d)
  heapEvents: env('BENCH_HEAP_EVENTS', 100_000),
  heapBatch: 1_000,
  heapRounds: env('BENCH_HEAP_ROUNDS', 5),
  /** Events of the unrecorded warm-up session of (d). */
  heapWarmupEvents: 20_000,
  /** Copies of the states measured together, for their per-copy heap. */
  stateCopies: 20,
  gcPasses: 6,
  // the log's shape, (b) to (d)
  eventBytes: 300,
  turnLength: 200,
  catalogEvery: 331,
}

const TARGETS = {
  appendLargeVsSmall: 1.5, // at most
  refoldVsCheckpoint: 50, // at least
  refoldVsRaw: 0.5, // at least
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

const header = rootHeader

/** The fact of (a), as the brief gives it. */
const FACT = { type: CATALOG, data: { v: 2, childId: 'c123', childCreatedAt: 1, mode: 'one-shot' } } satisfies { type: string; data: Json }

const logEventAt = logModel(CONFIG)

// ---- helpers ------------------------------------------------------------------------------

interface Ratio {
  name: string
  perRound: Summary
  ofMedians: number
  target: string
  pass: boolean
}

function ratioOf(name: string, a: Summary, b: Summary, target: string, passes: (x: number) => boolean): Ratio {
  const perRound = summarize(pairRatios(a.samples, b.samples))
  return { name, perRound, ofMedians: a.median / b.median, target, pass: passes(perRound.median) }
}

const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 2)} MiB`
const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`

/** Runs steps in the given order, or reversed on odd rounds, so drift favours no side. */
async function alternate(round: number, steps: (() => Promise<void>)[]): Promise<void> {
  const order = round % 2 === 0 ? steps : [...steps].reverse()
  for (const step of order) await step()
}

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
    await engine.append(id, Array.from({ length: Math.min(CONFIG.prefillBatch, d - done) }, () => FACT))
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

/** The catalog unit's state after `d` facts, and the parsed events of the next `n` facts. */
function foldFixture(d: number, n: number): { base: CatalogState; baseSeq: number; events: SessionEvent[] } {
  let state = subagentCatalogUnit.init(header('fold'), 0)
  const fact = (seq: number) => JSON.parse(encodeEvent({ seq, time: TIME0, ...FACT }, 'fold').json) as SessionEvent
  for (let seq = 0; seq < d; seq++) state = subagentCatalogUnit.apply(state, fact(seq))
  return { base: state, baseSeq: d - 1, events: Array.from({ length: n }, (_, i) => fact(d + i)) }
}

/** foldEvent on a slot of the catalog unit alone, from the same base state each run. Returns ns per fold. */
function foldRun(f: { base: CatalogState; baseSeq: number; events: SessionEvent[] }): number {
  const slots: UnitSlot[] = [{ def: subagentCatalogUnit, state: f.base, seq: f.baseSeq }]
  const t0 = performance.now()
  for (const e of f.events) foldEvent(slots, e)
  const ns = ((performance.now() - t0) * 1e6) / f.events.length
  if (slots[0]!.fault || (slots[0]!.state as CatalogState).entries.length !== f.base.entries.length + f.events.length) throw new Error('fold run went wrong')
  return ns
}

interface AppendResults {
  us: Record<Policy, { small: Summary; large: Summary }>
  fold: { small: Summary; large: Summary }
  /** checkpointRowOf + JSON.stringify of the catalog state alone, ms, and the row's JSON length. */
  row: { small: Summary; large: Summary; bytes: { small: number; large: number } }
  ratios: { appendDefault: Ratio; appendOff: Ratio; fold: Ratio }
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
          async () => { total.small += await appendRun(engine, `small-${k}`, n) },
          async () => { total.large += await appendRun(engine, `large-${k}`, n) },
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

  const fixtures = { small: foldFixture(small, CONFIG.foldsPerRun), large: foldFixture(large, CONFIG.foldsPerRun) }
  const folds = { small: [] as number[], large: [] as number[] }
  for (let r = 0; r <= CONFIG.foldRounds; r++) {
    await alternate(r, (['small', 'large'] as const).map((size) => async () => {
      const ns = foldRun(fixtures[size])
      if (r > 0) folds[size].push(ns)
    }))
  }
  log(`pure fold: ${fmt(summarize(folds.small).median, 0)} ns at D=${small}, ${fmt(summarize(folds.large).median, 0)} ns at D=${large}`)

  // What one checkpoint of the catalog costs at each D: the row (checkpointRowOf) and its JSON.
  const rowMs = { small: [] as number[], large: [] as number[] }
  const rowBytes = { small: 0, large: 0 }
  for (let r = 0; r <= CONFIG.foldRounds; r++) {
    await alternate(r, (['small', 'large'] as const).map((size) => async () => {
      const f = fixtures[size]
      const t0 = performance.now()
      const { row } = checkpointRowOf(header('fold'), [{ def: subagentCatalogUnit, state: f.base, seq: f.baseSeq }])
      const json = JSON.stringify(row)
      const ms = performance.now() - t0
      rowBytes[size] = json.length
      if (r > 0) rowMs[size].push(ms)
    }))
  }

  const us = {
    default: { small: summarize(samples.default.small), large: summarize(samples.default.large) },
    off: { small: summarize(samples.off.small), large: summarize(samples.off.large) },
  }
  const fold = { small: summarize(folds.small), large: summarize(folds.large) }
  const row = { small: summarize(rowMs.small), large: summarize(rowMs.large), bytes: rowBytes }
  const atMost = (x: number) => x <= TARGETS.appendLargeVsSmall
  return {
    us,
    fold,
    row,
    ratios: {
      appendDefault: ratioOf(`(a) append at D=${fmt(large, 0)} / D=${small}`, us.default.large, us.default.small, `<= ${TARGETS.appendLargeVsSmall}`, atMost),
      appendOff: ratioOf(`append at D=${fmt(large, 0)} / D=${small}, throttled checkpoints off`, us.off.large, us.off.small, `<= ${TARGETS.appendLargeVsSmall}`, atMost),
      fold: ratioOf(`pure fold at D=${fmt(large, 0)} / D=${small}`, fold.large, fold.small, '—', () => true),
    },
  }
}

// ---- (b), (c) cold reads ------------------------------------------------------------------

/**
 * How cold the reader is. `new`: a new adapter and engine, as at process start (the adapter's
 * one-time setup is timed). `ready`: an adapter already in use (set up before timing) that has
 * not loaded this session's log, and a new engine. `warm`: one engine and adapter that read this
 * session before (the adapter keeps the log's offsets; the session is still not open).
 */
type Reader = 'new' | 'ready' | 'warm'
const READERS: readonly Reader[] = ['new', 'ready', 'warm']
const READER_LABELS: Record<Reader, string> = {
  new: 'new adapter + engine',
  ready: 'adapter in use, log not loaded',
  warm: 'warm engine (log loaded)',
}

interface ReadResults {
  logBytes: number
  buildMs: number
  checkpointBytes: number
  catalogEntries: number
  ms: { checkpoint: Record<Reader, Summary>; refold: Record<Reader, Summary>; raw: Summary; rawNoCrc: Summary }
  eventsPerSecond: { refold: Record<Reader, Summary>; raw: Summary; rawNoCrc: Summary }
  ratios: { cold: Record<Reader, Ratio>; throughput: Ratio; throughputNoCrc: Ratio }
  breakdown: Breakdown
}

/** Writes the log straight through the adapter, then the checkpoint row as of seq length-behind-1. */
async function buildLog(dir: string, id: SessionId): Promise<{ row: CheckpointRow; buildMs: number }> {
  const L = CONFIG.logEvents
  const cut = L - CONFIG.behind
  const adapter = createFsAdapter({ dir })
  const t0 = performance.now()
  await adapter.createSession(header(id))
  const slots = initSlots(BUILTIN_PROJECTIONS, header(id))
  for (let from = 0; from < L; from += CONFIG.buildBatch) {
    const batch: EncodedEvent[] = []
    for (let seq = from; seq < Math.min(L, from + CONFIG.buildBatch); seq++) {
      const e = encodeEvent(logEventAt(seq), id)
      batch.push(e)
      // What a cold read folds: the stored JSON, parsed.
      if (seq < cut) foldEvent(slots, JSON.parse(e.json) as SessionEvent)
    }
    await adapter.append(id, batch)
  }
  const { row, skipped } = checkpointRowOf(header(id), slots)
  if (skipped.length > 0 || Object.values(row.rows).some((u) => u.seq !== cut - 1)) throw new Error('checkpoint row is not as of the cut')
  await adapter.putCheckpoint(id, row)
  await adapter.close()
  return { row, buildMs: performance.now() - t0 }
}

/** One cold read as `reader`. Returns its time and snapshot. */
async function coldRead(reader: Reader, dir: string, id: SessionId, warm: Engine): Promise<{ ms: number; snapshot: ProjectionSnapshot }> {
  let storage: StorageAdapter | undefined
  if (reader === 'ready') {
    storage = createFsAdapter({ dir })
    if ((await storage.getSession('not-there')) !== undefined) throw new Error('unexpected session') // sets the adapter up
  }
  const t0 = performance.now()
  const engine = reader === 'warm' ? warm : new Engine({ storage: storage ?? createFsAdapter({ dir }) })
  const { snapshot, length } = await engine.coldRead(id)
  const ms = performance.now() - t0
  if (engine !== warm) await engine.close()
  if (length !== CONFIG.logEvents) throw new Error(`cold read saw ${length} events`)
  return { ms, snapshot }
}

/** The raw limit: the whole events.log at once, recordAt (checksum included) and JSON.parse per record. */
function rawRead(path: string, checkCrc: boolean): number {
  const t0 = performance.now()
  const buf = fs.readFileSync(path)
  let seq = 0
  for (let at = 0; at < buf.length; seq++) {
    let start: number
    let end: number
    if (checkCrc) {
      const f = recordAt(buf, at)
      if (f.kind !== 'ok') throw new Error(`raw read: bad record at ${at}`)
      start = f.start
      end = f.end
    } else {
      start = at + 9
      end = start + buf.readUInt32LE(at + 4)
    }
    const e = JSON.parse(buf.toString('utf8', start, end)) as SessionEvent
    if (e.seq !== seq) throw new Error(`raw read: seq ${e.seq} at ${at}, expected ${seq}`)
    at = end
  }
  const ms = performance.now() - t0
  if (seq !== CONFIG.logEvents) throw new Error(`raw read found ${seq} events`)
  return ms
}

const median3 = (xs: number[]) => summarize(xs).median

interface Breakdown {
  runs: number
  /** Mean ms per fresh cold read with checkpoint, and of the adapter calls inside it. */
  total: number
  getSession: number
  getCheckpoint: number
  readEvents: number
  /** The rest: engine and adapter construction, restoreSlots, folding the tail, the snapshot. */
  rest: number
  /** restoreSlots alone on the stored row (median ms). */
  restoreSlots: number
}

/** Where a fresh cold read with checkpoint spends its time: the adapter's calls timed from outside (untimed for the targets). */
async function coldBreakdown(dir: string, id: SessionId, runs: number): Promise<Breakdown> {
  const acc = { getSession: 0, getCheckpoint: 0, readEvents: 0 }
  let total = 0
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    const a = createFsAdapter({ dir })
    const timedAdapter: StorageAdapter = {
      ...a,
      kind: a.kind,
      async getSession(x) {
        const t = performance.now()
        try { return await a.getSession(x) } finally { acc.getSession += performance.now() - t }
      },
      async getCheckpoint(x) {
        const t = performance.now()
        try { return await a.getCheckpoint(x) } finally { acc.getCheckpoint += performance.now() - t }
      },
      async *readEvents(x, range) {
        let t = performance.now()
        for await (const page of a.readEvents(x, range)) {
          acc.readEvents += performance.now() - t
          yield page
          t = performance.now()
        }
        acc.readEvents += performance.now() - t
      },
    }
    const engine = new Engine({ storage: timedAdapter })
    await engine.coldRead(id)
    total += performance.now() - t0
    await engine.close()
  }
  const rowJson = fs.readFileSync(join(sessionDir(dir, id), CHECKPOINT_FILE), 'utf8')
  const restore: number[] = []
  for (let i = 0; i < runs; i++) {
    const row = JSON.parse(rowJson) as unknown
    const t0 = performance.now()
    restoreSlots(BUILTIN_PROJECTIONS, header(id), row, CONFIG.logEvents)
    restore.push(performance.now() - t0)
  }
  const mean = (x: number) => x / runs
  return {
    runs, total: mean(total), getSession: mean(acc.getSession), getCheckpoint: mean(acc.getCheckpoint), readEvents: mean(acc.readEvents),
    rest: mean(total - acc.getSession - acc.getCheckpoint - acc.readEvents), restoreSlots: median3(restore),
  }
}

async function benchReads(root: string): Promise<ReadResults> {
  const L = CONFIG.logEvents
  const dir = join(root, 'reads')
  const id: SessionId = 'bench-log'
  const { row, buildMs } = await buildLog(dir, id)
  const logPath = join(sessionDir(dir, id), LOG_FILE)
  const logBytes = fs.statSync(logPath).size
  const checkpointBytes = JSON.stringify(row).length
  log(`built a ${fmt(L, 0)}-event log (${mib(logBytes)}) and a ${kib(checkpointBytes)} checkpoint row in ${fmt(buildMs, 0)} ms`)

  // The row as stored must be usable: every unit kept, folding resumes `behind` events before the end.
  const admin: StorageAdapter = createFsAdapter({ dir })
  const restored = restoreSlots(BUILTIN_PROJECTIONS, header(id), await admin.getCheckpoint(id), L)
  if (restored.kept !== BUILTIN_PROJECTIONS.length || restored.from !== L - CONFIG.behind) {
    throw new Error(`stored checkpoint: kept ${restored.kept} units, from ${restored.from}`)
  }

  const warm = new Engine({ storage: createFsAdapter({ dir }) })
  const byReader = () => ({ new: [] as number[], ready: [] as number[], warm: [] as number[] })
  const ms = { checkpoint: byReader(), refold: byReader(), raw: [] as number[], rawNoCrc: [] as number[] }
  let reference: string | undefined
  let catalogEntries = 0
  const check = (snapshot: ProjectionSnapshot, what: string) => {
    const json = JSON.stringify(snapshot)
    reference ??= json
    if (json !== reference) throw new Error(`${what} differs from the first cold read`)
    if (Object.keys(snapshot.faults).length > 0) throw new Error(`${what} has faults: ${JSON.stringify(snapshot.faults)}`)
    catalogEntries = (snapshot.values.subagentCatalog as unknown[] | null)?.length ?? -1
  }

  for (let r = 0; r <= CONFIG.readRounds; r++) {
    const warmUp = r === 0
    const withCheckpoint = async () => {
      await admin.putCheckpoint(id, row)
      const runs = byReader()
      for (let k = 0; k < CONFIG.checkpointRepeats; k++) {
        for (const reader of READERS) {
          const x = await coldRead(reader, dir, id, warm)
          check(x.snapshot, `cold read with checkpoint (${reader})`)
          runs[reader].push(x.ms)
        }
      }
      if (!warmUp) for (const reader of READERS) ms.checkpoint[reader].push(median3(runs[reader]))
    }
    const refold = async () => {
      await admin.deleteCheckpoint(id)
      for (const reader of READERS) {
        const x = await coldRead(reader, dir, id, warm)
        check(x.snapshot, `full refold (${reader})`)
        if (!warmUp) ms.refold[reader].push(x.ms)
      }
    }
    const raw = async () => {
      const a = rawRead(logPath, true)
      const b = rawRead(logPath, false)
      if (!warmUp) {
        ms.raw.push(a)
        ms.rawNoCrc.push(b)
      }
    }
    // Three steps: rotate who goes first, and reverse on odd rounds.
    const steps = [withCheckpoint, refold, raw]
    await alternate(r, [...steps.slice(r % 3), ...steps.slice(0, r % 3)])
    if (warmUp) {
      log('read warm-up done')
    } else {
      const last = (xs: Record<Reader, number[]>, d: number) => READERS.map((k) => fmt(xs[k].at(-1)!, d)).join(' / ')
      log(`read round ${r}/${CONFIG.readRounds}: with checkpoint ${last(ms.checkpoint, 2)} ms, refold ${last(ms.refold, 0)} ms (new / ready / warm); ` +
        `raw ${fmt(ms.raw.at(-1)!, 0)} ms (${fmt(ms.rawNoCrc.at(-1)!, 0)} without crc)`)
    }
  }
  await admin.putCheckpoint(id, row)
  await warm.close()
  await admin.close()
  const breakdown = await coldBreakdown(dir, id, 30)

  const summaries = (xs: Record<Reader, number[]>) => ({ new: summarize(xs.new), ready: summarize(xs.ready), warm: summarize(xs.warm) })
  const rate = (xs: number[]) => summarize(xs.map((x) => (L / x) * 1000))
  const s = { checkpoint: summaries(ms.checkpoint), refold: summaries(ms.refold), raw: summarize(ms.raw), rawNoCrc: summarize(ms.rawNoCrc) }
  const eps = { refold: { new: rate(ms.refold.new), ready: rate(ms.refold.ready), warm: rate(ms.refold.warm) }, raw: rate(ms.raw), rawNoCrc: rate(ms.rawNoCrc) }
  const atLeast = (t: number) => (x: number) => x >= t
  const cold = (reader: Reader) => ratioOf(`(b) full refold / cold read with checkpoint, ${READER_LABELS[reader]}`, s.refold[reader], s.checkpoint[reader],
    `>= ${TARGETS.refoldVsCheckpoint}`, atLeast(TARGETS.refoldVsCheckpoint))
  return {
    logBytes, buildMs, checkpointBytes, catalogEntries, ms: s, eventsPerSecond: eps, breakdown,
    ratios: {
      cold: { new: cold('new'), ready: cold('ready'), warm: cold('warm') },
      throughput: ratioOf('(c) full refold events/s (new adapter) / raw read+parse events/s', eps.refold.new, eps.raw, `>= ${TARGETS.refoldVsRaw}`, atLeast(TARGETS.refoldVsRaw)),
      throughputNoCrc: ratioOf('full refold events/s / raw without crc', eps.refold.new, eps.rawNoCrc, `>= ${TARGETS.refoldVsRaw}`, atLeast(TARGETS.refoldVsRaw)),
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
  const { row } = checkpointRowOf(head, (['subagent', 'subagentCatalog', 'subagentTiming'] as const).map((key) => {
    const def = BUILTIN_PROJECTIONS.find((d) => d.key === key)!
    return { def, state: engine.liveState(id, key)!.state, seq: events - 1 }
  }))
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
    events, before, half, live, released, closed, session, statesHeap, rowJsonBytes: rowJson.length,
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
    log(`heap round ${r}/${CONFIG.heapRounds}: ${fmt(h.events, 0)} events appended in ${fmt(h.appendMs, 0)} ms; session ${kib(h.session)}, ` +
      `states ${kib(h.statesHeap)} (row ${kib(h.rowJsonBytes)} of JSON), retained beyond states ${kib(h.retained)}; ` +
      `after release ${kib(h.released - h.before)}, after close ${kib(h.closed - h.before)} vs before`)
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
    const sample = Array.from({ length: 1000 }, (_, i) => encodeEvent(logEventAt(10_000 + i), 'x').json.length)
    const avgBytes = sample.reduce((a, b) => a + b, 0) / sample.length
    log(`log events: ${fmt(avgBytes, 1)} bytes of JSON on average; temp dir ${root}`)

    const appends = ONLY.has('a') ? await benchAppends() : undefined
    const reads = ONLY.has('b') || ONLY.has('c') ? await benchReads(root) : undefined
    const heap = ONLY.has('d') ? await benchHeap(root) : undefined

    // ---- report ----
    const n = (x: number) => fmt(x, 0)
    console.log('')
    console.log('sessionfold projections benchmark')
    console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} cpus, temp dir under ${os.tmpdir()}`)
    console.log('figures: median (min–max) of the rounds; ratios are per round (both sides run back to back), median (min–max)')
    const ratios: Ratio[] = []
    if (appends) {
      const { us, fold, row: rowCost } = appends
      const row = (label: string, s: Summary, unit: string) => [label, String(s.n), fmt(s.median, 2), fmt(s.min, 2), fmt(s.max, 2), unit]
      console.log('')
      console.log(`(a) one subagent/catalog append (Engine.append on the memory adapter, no watchers): per round, ${CONFIG.appendSessions} runs of ` +
        `${n(CONFIG.appendsPerRun)} sequential appends at each D, each run on a freshly prefilled session`)
      printTable(
        ['scenario', 'runs', 'median', 'min', 'max', 'unit'],
        [
          row(`append, D=${CONFIG.catalogSmall}, default checkpoints`, us.default.small, 'µs/append'),
          row(`append, D=${n(CONFIG.catalogLarge)}, default checkpoints`, us.default.large, 'µs/append'),
          row(`append, D=${CONFIG.catalogSmall}, throttled checkpoints off*`, us.off.small, 'µs/append'),
          row(`append, D=${n(CONFIG.catalogLarge)}, throttled checkpoints off*`, us.off.large, 'µs/append'),
          row(`pure fold (foldEvent, catalog unit alone), D=${CONFIG.catalogSmall}`, fold.small, 'ns/fold'),
          row(`pure fold (foldEvent, catalog unit alone), D=${n(CONFIG.catalogLarge)}`, fold.large, 'ns/fold'),
          row(`checkpoint row of the catalog (checkpointRowOf + JSON.stringify), D=${CONFIG.catalogSmall}, ${kib(rowCost.bytes.small)}`, rowCost.small, 'ms/row'),
          row(`checkpoint row of the catalog (checkpointRowOf + JSON.stringify), D=${n(CONFIG.catalogLarge)}, ${kib(rowCost.bytes.large)}`, rowCost.large, 'ms/row'),
        ],
      )
      console.log(`  D grows by at most ${n(CONFIG.appendsPerRun)} during a run. default: checkpoint.everyEvents 256, everyMs 2000, so each run writes the row (all D entries) once.`)
      console.log('  * everyEvents 1e12, everyMs 1e9: no checkpoint inside a run; shows what the checkpoints cost at each D.')
      const ckUs = (us.default.large.median - us.off.large.median) * 256
      console.log(`  checkpoint share at D=${n(CONFIG.catalogLarge)}: ${fmt(us.default.large.median - us.off.large.median, 2)} µs per append, i.e. ~${fmt(ckUs / 1000, 2)} ms per checkpoint row (every 256 appends)`)
      ratios.push(appends.ratios.appendDefault)
    }
    if (reads) {
      const { ms, eventsPerSecond: eps } = reads
      console.log('')
      console.log(`(b), (c) cold reads of a ${n(CONFIG.logEvents)}-event log on the fs adapter: ${mib(reads.logBytes)}, ${n(reads.catalogEntries)} catalog entries, ` +
        `${n(CONFIG.logEvents / CONFIG.turnLength)} turns; checkpoint row ${kib(reads.checkpointBytes)} of JSON, ${CONFIG.behind} events behind the end`)
      const line = (label: string, x: Summary, d: number, rate?: Summary) => [label, String(x.n), fmt(x.median, d), fmt(x.min, d), fmt(x.max, d), rate ? n(rate.median) : '']
      printTable(
        ['scenario', 'runs', 'ms median', 'min', 'max', 'events/s'],
        [
          ...READERS.map((k) => line(`cold read with checkpoint, ${READER_LABELS[k]}*`, ms.checkpoint[k], 2)),
          ...READERS.map((k) => line(`full refold (no checkpoint), ${READER_LABELS[k]}`, ms.refold[k], 1, eps.refold[k])),
          line('raw: readFileSync + recordAt (crc) + JSON.parse', ms.raw, 1, eps.raw),
          line('(ref) raw without crc check', ms.rawNoCrc, 1, eps.rawNoCrc),
        ],
      )
      console.log(`* each run is the median of ${CONFIG.checkpointRepeats} cold reads. new: createFsAdapter + new Engine + coldRead, the adapter's one-time setup`)
      console.log('  (mkdir, tmp/trash sweep) included; ready: the adapter was set up before timing but has not loaded this log; warm: the same engine')
      console.log('  and adapter every time (the log\'s offsets are cached; the checkpoint and the events are read again). The OS page cache is warm.')
      console.log('  Every cold read\'s snapshot is checked equal to the others\' (with and without checkpoint).')
      const b = reads.breakdown
      console.log(`  where a "new" cold read with checkpoint goes (mean of ${b.runs} more, the adapter's calls timed from outside): ${fmt(b.total, 2)} ms =`)
      console.log(`  getSession (adapter setup + opening the log) ${fmt(b.getSession, 2)} + getCheckpoint ${fmt(b.getCheckpoint, 2)} + readEvents of the tail ${fmt(b.readEvents, 2)}` +
        ` + the rest ${fmt(b.rest, 2)} (engine, restoreSlots, folding ${CONFIG.behind} events, snapshot; restoreSlots alone ${fmt(b.restoreSlots, 2)} ms)`)
      ratios.push(reads.ratios.cold.new, reads.ratios.cold.ready, reads.ratios.cold.warm, reads.ratios.throughput)
    }
    if (heap) {
      console.log('')
      console.log(`(d) heap of a live ${n(CONFIG.heapEvents)}-event session (fs adapter, Engine.append in batches of ${n(CONFIG.heapBatch)}, heapUsed after ${CONFIG.gcPasses} gc passes)`)
      printTable(
        ['round', 'session (live - before)', 'states heap', 'row JSON', 'retained beyond states', 'growth/event, 2nd half', 'after release', 'after close', 'external Δ'],
        heap.rounds.map((h, i) => [
          String(i + 1), kib(h.session), kib(h.statesHeap), kib(h.rowJsonBytes), kib(h.retained), `${fmt(h.perEventSecondHalf, 2)} B`,
          kib(h.released - h.before), kib(h.closed - h.before), kib(h.externalDelta),
        ]),
      )
      console.log('  before: engine and adapter made, session created and released; live: after openSession + the appends.')
      console.log(`  states heap: heap of ${CONFIG.stateCopies} copies of the three unit states (restored from their row) / ${CONFIG.stateCopies}.`)
      console.log('  after release / after close: heap vs before once the writer is released (the adapter may keep its log state) and the engine closed.')
    }
    console.log('')
    console.log('Targets')
    const targetRows = ratios.map((x) => [x.name, fmtSummary(x.perRound, 2), fmt(x.ofMedians, 2), x.target, x.pass ? 'PASS' : 'MISS'])
    if (heap) {
      targetRows.push(['(d) heap retained by a live session beyond its states', `${kib(heap.retained.median)} (${kib(heap.retained.min)}–${kib(heap.retained.max)})`, '', `< ${mib(TARGETS.retainedBytes)}`, heap.pass ? 'PASS' : 'MISS'])
    }
    printTable(['measure', 'per round median (min–max)', 'of medians', 'target', 'result'], targetRows)
    if (appends) {
      const x = appends.ratios
      console.log(`  for reference, not targets: ${x.appendOff.name} = ${fmtSummary(x.appendOff.perRound, 2)}; ${x.fold.name} = ${fmtSummary(x.fold.perRound, 2)}`)
    }
    if (reads) console.log(`  for reference, not a target: ${reads.ratios.throughputNoCrc.name} = ${fmtSummary(reads.ratios.throughputNoCrc.perRound, 2)}`)
    const totalS = (performance.now() - started) / 1000
    console.log('')
    console.log(`total ${fmt(totalS, 1)} s`)

    const ratioJson = (x: Ratio) => ({ name: x.name, perRound: x.perRound, ofMedians: x.ofMedians, target: x.target, result: x.pass ? 'PASS' : 'MISS' })
    const results = {
      benchmark: 'projections',
      date: new Date().toISOString(),
      environment: { node: process.version, platform: os.platform(), arch: os.arch(), cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, tmpdir: os.tmpdir() },
      config: CONFIG,
      logEventJsonBytes: avgBytes,
      appends: appends && { unit: { append: 'µs', fold: 'ns' }, ...appends, ratios: Object.fromEntries(Object.entries(appends.ratios).map(([k, v]) => [k, ratioJson(v)])) },
      reads: reads && {
        unit: 'ms', ...reads,
        ratios: {
          cold: Object.fromEntries(READERS.map((k) => [k, ratioJson(reads.ratios.cold[k])])),
          throughput: ratioJson(reads.ratios.throughput),
          throughputNoCrc: ratioJson(reads.ratios.throughputNoCrc),
        },
      },
      heap: heap && { unit: 'bytes', ...heap, target: TARGETS.retainedBytes, result: heap.pass ? 'PASS' : 'MISS' },
      targets: [...ratios.map(ratioJson), ...(heap ? [{ name: '(d) heap retained beyond states', median: heap.retained.median, target: `< ${TARGETS.retainedBytes}`, result: heap.pass ? 'PASS' : 'MISS' }] : [])],
      totalSeconds: totalS,
    }
    const out = resultsPath('projections')
    fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
    console.log(`results written to ${out}`)
  } finally {
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
