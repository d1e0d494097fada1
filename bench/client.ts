// Client benchmark: the store as an app sees it, through its worker (npm run bench:client).
//   (1) append-to-listener latency across worker_threads: openStore({ worker: true, storage: 'fs' }),
//       strict and relaxed; per append, the time from session.append to a subscribe listener on a
//       second handle (store.observe: the push path) and on the writing handle, and until append()
//       resolves; median and p99 per run. For information: messages, worker: false, lockstep and
//       paced runs (every append finds its subscribers quiet).
//   (2) a no-op store call against a raw comlink no-op (bench/noop-worker.mjs): listSessions on
//       empty fs and memory stores, listChildren without children (no storage); as the OS
//       schedules the threads and with the process pinned to one CPU (taskset -a).
//   (3) batched appends (100 events of ~300 B) through the worker against worker: false, fs strict
//       and memory; each pair runs A B B A in a round.
// Every comparison is a ratio of runs in the same round, after an unrecorded warm-up round.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { releaseProxy, wrap, type Remote } from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import type { AppendResult } from '../src/core/protocol'
import { openStore, type EventInput, type Session, type Store } from '../src/index-node'
import { LATENCY_VARIANTS, mean, progress, quantile, runLatency, type LatencyRun } from './support/latency'
import { messageInput, rotate, sourceState } from './common'
import { benchRoot, checkSettings, env, finishBench, fmt, ratio, summarize, type Figure, type Ratio } from './stats'

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  /** Appends per latency run (stream pacing). */
  latencyAppends: env('BENCH_LAT_APPENDS', 10_000),
  /** Appends per latency run with lockstep or paced pacing (each costs 5 ms or more). */
  pacedAppends: env('BENCH_PACED_APPENDS', 400),
  /** The pause of paced runs after the listeners heard an append: longer than the projection view's 1 ms notify interval. */
  paceMs: 6,
  /** Appends per variant in the warm-up round of (1), stream and paced. */
  latencyWarmUp: 1_000,
  pacedWarmUp: 40,
  latencyRounds: env('BENCH_LAT_ROUNDS', 4),
  /** Calls per no-op run (one after another). */
  noopCalls: env('BENCH_NOOP_CALLS', 2_000),
  /** Calls of one kind in a row; the kinds take turns block by block. */
  noopBlock: 50,
  noopRounds: env('BENCH_NOOP_ROUNDS', 9),
  eventBytes: 300,
  batch: 100,
  throughputEvents: env('BENCH_TP_EVENTS', 10_000),
  throughputRounds: env('BENCH_TP_ROUNDS', 9),
  /** A latency run that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 10_000,
}

const TARGETS = {
  /** (1) median append-to-listener latency, ms, at most. */
  latencyMedianMs: 2,
  /** (2) store no-op / raw comlink no-op, at most. */
  noopRatio: 1.5,
  /** (3) through the worker / in this thread, at least. */
  throughputRatio: 0.7,
}

const log = (msg: string) => process.stderr.write(`${msg}\n`)

// ---- helpers ------------------------------------------------------------------------------

/**
 * Pins every thread of this process (main, workers, libuv's pool, V8's helpers) to one CPU with
 * taskset, and restores the mask. Undefined where taskset is missing (not Linux).
 */
function processAffinity(): { pin(): void; restore(): void } | undefined {
  const pid = String(process.pid)
  let mask: string
  try {
    // "pid 123's current affinity mask: 3"
    mask = execFileSync('taskset', ['-p', pid], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim()
      .split(/\s+/)
      .at(-1)!
  } catch {
    return undefined
  }
  const bits = BigInt(`0x${mask}`)
  let cpu = 0
  while (((bits >> BigInt(cpu)) & 1n) === 0n) cpu++
  const run = (...args: string[]) => execFileSync('taskset', ['-a', '-p', ...args, pid], { stdio: 'ignore' })
  return { pin: () => run('-c', String(cpu)), restore: () => run(mask) }
}

// ---- (2) no-op calls ----------------------------------------------------------------------

interface NoopRun {
  /** Per call, µs. */
  median: number
  mean: number
  p99: number
}

/** free: threads where the OS puts them; pinned: every thread of the process on one CPU. */
type NoopMode = 'free' | 'pinned'

interface NoopCall {
  key: string
  label: string
  call: () => Promise<unknown>
  check: (v: unknown) => boolean
}

/**
 * One round of every call, interleaved in blocks of `block` calls (the order rotating from block
 * to block), so that all of them meet the same machine: the round trip to an idle worker is
 * bimodal here (about 20 or 60 µs for stretches of time), which whole runs back to back can
 * straddle. Returns per call kind the median, mean and p99 of its `n` calls, in µs.
 */
async function runCalls(calls: readonly NoopCall[], n: number, block: number, round: number): Promise<Map<string, NoopRun>> {
  for (const x of calls) {
    const v = await x.call()
    if (!x.check(v)) throw new Error(`${x.key} returned ${JSON.stringify(v)}`)
  }
  const us = new Map(calls.map((x) => [x.key, new Float64Array(n)]))
  for (let b = 0; b * block < n; b++) {
    for (const x of rotate(calls, round + b)) {
      const out = us.get(x.key)!
      for (let i = b * block; i < Math.min(n, (b + 1) * block); i++) {
        const t0 = performance.now()
        await x.call()
        out[i] = (performance.now() - t0) * 1000
      }
    }
  }
  return new Map([...us].map(([k, v]) => [k, { median: quantile(v, 0.5), mean: mean(v), p99: quantile(v, 0.99) }]))
}

// ---- (3) batched append throughput ---------------------------------------------------------

/** Appends `batches` one after another to a new session; returns events/s. */
async function runThroughput(store: Store, batches: readonly EventInput[][]): Promise<number> {
  const session: Session = await store.createSession()
  const events = batches.reduce((k, b) => k + b.length, 0)
  let last: AppendResult | undefined
  const t0 = performance.now()
  for (const b of batches) last = await session.append(b)
  const ms = performance.now() - t0
  if (last?.lastSeq !== events - 1) throw new Error(`throughput run: last seq ${last?.lastSeq}, expected ${events - 1}`)
  await session.close()
  await store.deleteSession(session.id)
  return (events / ms) * 1000
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  const { root, cleanup } = await benchRoot('sessionfold-bench-client-')
  const open: Store[] = []
  let raw: { worker: Worker; api: Remote<{ noop(): number }> } | undefined
  let seen = -1
  const watchdog = setInterval(() => {
    if (progress.appends === seen && progress.appends > 0) {
      log(`stalled: no append heard for ${CONFIG.stallMs / 1000} s (after ${progress.appends} appends)`)
      cleanup()
      process.exit(1)
    }
    seen = progress.appends
  }, CONFIG.stallMs)
  watchdog.unref()
  const openAt = async (name: string, options: Parameters<typeof openStore>[0]): Promise<Store> => {
    const store = await openStore({ ...options, ...(options?.storage === 'fs' ? { dir: join(root, name) } : {}) })
    open.push(store)
    return store
  }
  const closeAll = async () => {
    for (const s of open.splice(0)) await s.close()
  }

  try {
    checkSettings(CONFIG)
    if (CONFIG.throughputEvents % CONFIG.batch !== 0) throw new Error('BENCH_TP_EVENTS must be a multiple of the batch size')
    log(`temp dir ${root}`)
    const source = sourceState()

    // ---- (1) latency ----
    const latStores = new Map<string, Store>()
    for (const worker of [true, false]) {
      for (const durability of ['strict', 'relaxed'] as const) {
        const key = `${worker}-${durability}`
        latStores.set(key, await openAt(`lat-${key}`, { storage: 'fs', worker, durability }))
      }
    }
    const latRuns = new Map<string, LatencyRun[]>(LATENCY_VARIANTS.map((v) => [v.key, []]))
    for (let r = 0; r <= CONFIG.latencyRounds; r++) {
      const warmUp = r === 0
      const line: string[] = []
      for (const v of rotate(LATENCY_VARIANTS, r)) {
        const n = v.pacing === 'stream' ? (warmUp ? CONFIG.latencyWarmUp : CONFIG.latencyAppends) : warmUp ? CONFIG.pacedWarmUp : CONFIG.pacedAppends
        const run = await runLatency(latStores.get(`${v.worker}-${v.durability}`)!, v.kind, n, v.pacing, CONFIG)
        if (!warmUp) latRuns.get(v.key)!.push(run)
        line.push(`${v.key} ${fmt(run.observer.median, 3)}/${fmt(run.observer.p99, 2)}`)
      }
      log(`latency ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.latencyRounds}`} (observer median/p99 ms): ${line.join(', ')}`)
    }
    progress.appends = 0
    await closeAll()

    // ---- (2) no-op calls ----
    const rawWorker = new Worker(new URL('./noop-worker.mjs', import.meta.url))
    raw = { worker: rawWorker, api: wrap<{ noop(): number }>(nodeEndpoint(rawWorker)) }
    const rawApi = raw.api
    const fsEmpty = await openAt('noop-fs-empty', { storage: 'fs', worker: true })
    const memEmpty = await openAt('noop-memory', { storage: 'memory', worker: true })
    const fsLive = await openAt('noop-fs-live', { storage: 'fs', worker: true })
    const threadFsEmpty = await openAt('noop-fs-thread', { storage: 'fs', worker: false })
    const parent = await fsLive.createSession()
    const isEmpty = (v: unknown) => Array.isArray(v) && v.length === 0
    const NOOPS: NoopCall[] = [
      { key: 'raw', label: 'raw comlink noop() (bench/noop-worker.mjs)', call: () => rawApi.noop(), check: (v) => v === 1 },
      { key: 'listFs', label: 'store.listSessions({ limit: 1 }), empty fs store', call: () => fsEmpty.listSessions({ limit: 1 }), check: isEmpty },
      { key: 'listMemory', label: 'store.listSessions({ limit: 1 }), empty memory store', call: () => memEmpty.listSessions({ limit: 1 }), check: isEmpty },
      { key: 'listChildren', label: 'session.listChildren(), open session, no children', call: () => parent.listChildren(), check: isEmpty },
      {
        key: 'internal',
        label: "(internal) Store._call of the host's cancel(0)",
        call: () => fsEmpty._call((api) => api.cancel(0)),
        check: (v) => v === undefined,
      },
      {
        key: 'threadListFs',
        label: '(worker: false) listSessions({ limit: 1 }), empty fs',
        call: () => threadFsEmpty.listSessions({ limit: 1 }),
        check: isEmpty,
      },
    ]
    // Each round measures the calls as the OS schedules the threads, then with every thread of
    // the process on one CPU: here a round trip to a worker that sleeps on the other vCPU costs
    // about 20 or 60 µs depending on where the scheduler left that thread (it sticks for a while,
    // so two workers can differ by 3x on the same call), which pinning removes.
    const affinity = processAffinity()
    const modes: NoopMode[] = affinity ? ['free', 'pinned'] : ['free']
    const noopRuns = new Map<string, NoopRun[]>(modes.flatMap((m) => NOOPS.map((x) => [`${m}:${x.key}`, []] as [string, NoopRun[]])))
    try {
      for (let r = 0; r <= CONFIG.noopRounds; r++) {
        const warmUp = r === 0
        const line: string[] = []
        for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
          if (mode === 'pinned') affinity!.pin()
          try {
            const runs = await runCalls(NOOPS, CONFIG.noopCalls, CONFIG.noopBlock, r)
            for (const x of NOOPS) {
              const run = runs.get(x.key)!
              if (!warmUp) noopRuns.get(`${mode}:${x.key}`)!.push(run)
            }
            line.push(`${mode}: ${NOOPS.map((x) => `${x.key} ${fmt(runs.get(x.key)!.median, 1)}`).join(', ')}`)
          } finally {
            if (mode === 'pinned') affinity!.restore()
          }
        }
        log(`no-op ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.noopRounds}`} (median µs/call): ${line.join('; ')}`)
      }
    } finally {
      affinity?.restore()
    }
    await parent.close()
    await closeAll()
    raw.api[releaseProxy]()
    await raw.worker.terminate()
    raw = undefined

    // ---- (3) throughput ----
    const input = messageInput(CONFIG.eventBytes)
    const batches: EventInput[][] = []
    for (let i = 0; i < CONFIG.throughputEvents; i += CONFIG.batch) batches.push(Array.from({ length: CONFIG.batch }, () => input))
    const TP = [
      { key: 'workerFs', label: 'worker, fs strict', store: await openAt('tp-worker', { storage: 'fs', worker: true, durability: 'strict' }) },
      { key: 'threadFs', label: 'in this thread, fs strict', store: await openAt('tp-thread', { storage: 'fs', worker: false, durability: 'strict' }) },
      { key: 'workerMemory', label: 'worker, memory', store: await openAt('tp-worker-mem', { storage: 'memory', worker: true }) },
      { key: 'threadMemory', label: 'in this thread, memory', store: await openAt('tp-thread-mem', { storage: 'memory', worker: false }) },
    ]
    // Each pair (worker, in this thread) runs A B B A within a round (B A A B the next round), and a
    // round's figure for each is its two runs together (events over their summed time): a load
    // that rises or falls during the round weighs on both sides alike.
    const tpPairs = [
      [TP[0]!, TP[1]!],
      [TP[2]!, TP[3]!],
    ] as const
    const tpRuns = new Map<string, number[]>(TP.map((x) => [x.key, []]))
    for (let r = 0; r <= CONFIG.throughputRounds; r++) {
      const warmUp = r === 0
      const line: string[] = []
      for (const pair of r % 2 === 0 ? tpPairs : [...tpPairs].reverse()) {
        const [a, b] = r % 2 === 0 ? pair : [pair[1], pair[0]]
        const ms = new Map<string, number>([
          [a.key, 0],
          [b.key, 0],
        ])
        for (const x of [a, b, b, a]) ms.set(x.key, ms.get(x.key)! + (CONFIG.throughputEvents / (await runThroughput(x.store, batches))) * 1000)
        for (const x of [a, b]) {
          const v = ((2 * CONFIG.throughputEvents) / ms.get(x.key)!) * 1000
          if (!warmUp) tpRuns.get(x.key)!.push(v)
          line.push(`${x.key} ${fmt(v, 0)}`)
        }
      }
      log(`throughput ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.throughputRounds}`} (events/s): ${line.join(', ')}`)
    }
    await closeAll()

    // ---- report ----
    const latSummary = (key: string, pick: (run: LatencyRun) => number) => summarize(latRuns.get(key)!.map(pick))
    const latRows = LATENCY_VARIANTS.map((v) => {
      const s = {
        obsMedian: latSummary(v.key, (x) => x.observer.median),
        obsP99: latSummary(v.key, (x) => x.observer.p99),
        sameMedian: latSummary(v.key, (x) => x.same.median),
        sameP99: latSummary(v.key, (x) => x.same.p99),
        appendMedian: latSummary(v.key, (x) => x.append.median),
        appendP99: latSummary(v.key, (x) => x.append.p99),
        max: latSummary(v.key, (x) => x.observer.max),
        /** Observer listener calls per 100 appends. */
        callsPer100: latSummary(v.key, (x) => (100 * x.observerCalls) / x.appends),
        stray: latRuns.get(v.key)!.reduce((k, x) => k + x.stray, 0),
      }
      return { v, s }
    })
    const noopS = new Map(
      [...noopRuns].map(([k, runs]) => [
        k,
        { median: summarize(runs.map((y) => y.median)), mean: summarize(runs.map((y) => y.mean)), p99: summarize(runs.map((y) => y.p99)) },
      ]),
    )
    const nm = (mode: NoopMode, key: string) => noopS.get(`${mode}:${key}`)!.median
    const modeName = (m: NoopMode) => (m === 'free' ? 'as scheduled' : 'one CPU')
    const noopRatios: Ratio[] = modes.flatMap((m) => [
      ratio(`listSessions, empty fs store / raw, ${modeName(m)}`, nm(m, 'listFs'), nm(m, 'raw'), { atMost: TARGETS.noopRatio }),
      ratio(`listSessions, empty memory store / raw (no-op proxy), ${modeName(m)}`, nm(m, 'listMemory'), nm(m, 'raw'), { atMost: TARGETS.noopRatio }),
      ratio(`listChildren, no children (storage-free) / raw, ${modeName(m)}`, nm(m, 'listChildren'), nm(m, 'raw'), { atMost: TARGETS.noopRatio }),
    ])
    const noopRefs: Ratio[] = modes.flatMap((m) => [
      ratio(`(internal) Store._call(cancel) / raw, ${modeName(m)}`, nm(m, 'internal'), nm(m, 'raw')),
      ratio(`listSessions fs, worker / this thread, ${modeName(m)}`, nm(m, 'listFs'), nm(m, 'threadListFs')),
    ])
    const tpS = new Map(TP.map((x) => [x.key, summarize(tpRuns.get(x.key)!)]))
    const tpRatios: Ratio[] = [
      ratio('fs strict: worker / in this thread', tpS.get('workerFs')!, tpS.get('threadFs')!, { atLeast: TARGETS.throughputRatio }),
      ratio('memory: worker / in this thread', tpS.get('workerMemory')!, tpS.get('threadMemory')!, { atLeast: TARGETS.throughputRatio }),
    ]
    const obsOf = (key: string) => latSummary(key, (x) => x.observer.median)
    const latRefs: Ratio[] = [
      ratio('observer median, strict: worker / this thread', obsOf('worker-strict'), obsOf('thread-strict')),
      ratio('observer median, relaxed: worker / this thread', obsOf('worker-relaxed'), obsOf('thread-relaxed')),
      ratio('observer median, worker: strict / relaxed', obsOf('worker-strict'), obsOf('worker-relaxed')),
      ratio('observer median, worker strict: turn events / messages', obsOf('worker-strict'), obsOf('worker-strict-msg')),
      ratio('observer median, worker relaxed: stream / paced', obsOf('worker-relaxed'), obsOf('worker-relaxed-paced')),
      ratio('observer median, worker strict: stream / paced', obsOf('worker-strict'), obsOf('worker-strict-paced')),
    ]

    const primary = latRows.filter((x) => x.v.primary)
    const latTargets = primary
      .flatMap(({ v, s }) => [
        { name: `(1) ${v.durability}: median to observer listener, ms`, perRound: s.obsMedian },
        { name: `(1) ${v.durability}: median to same-handle listener, ms`, perRound: s.sameMedian },
      ])
      .map((x) => ({
        ...x,
        summary: x.perRound,
        target: `< ${TARGETS.latencyMedianMs}`,
        result: x.perRound.median < TARGETS.latencyMedianMs ? 'PASS' : 'MISS',
      }))
    finishBench(
      'client',
      'sessionfold client benchmark: openStore() through worker_threads against raw comlink and worker: false',
      [
        ...latRows.map(({ v, s }): Figure => [`${v.primary ? '' : '(ref) '}${v.label}: append to observer listener, median`, s.obsMedian, 'ms', 3]),
        ...modes.flatMap((m) => NOOPS.map((x): Figure => [`${x.label}, ${modeName(m)}`, noopS.get(`${m}:${x.key}`)!.median, 'µs/call', 1])),
        ...TP.map((x): Figure => [`batched appends, ${x.label}`, tpS.get(x.key)!, 'events/s', 0]),
      ],
      [...latTargets, ...latRefs, ...noopRatios, ...noopRefs, ...tpRatios],
      {
        source,
        config: CONFIG,
        targets: TARGETS,
        latency: { unit: 'ms', variants: latRows.map(({ v, s }) => ({ ...v, summary: s, runs: latRuns.get(v.key) })), reference: latRefs },
        noop: {
          unit: 'µs per call',
          modes: { free: 'threads where the OS puts them', pinned: 'every thread of the process pinned to one CPU (taskset -a)' },
          calls: modes.flatMap((m) =>
            NOOPS.map((x) => ({ mode: m, key: x.key, label: x.label, ...noopS.get(`${m}:${x.key}`), runs: noopRuns.get(`${m}:${x.key}`) })),
          ),
          ratios: noopRatios,
          reference: noopRefs,
        },
        throughput: { unit: 'events/s', variants: TP.map((x) => ({ key: x.key, label: x.label, summary: tpS.get(x.key) })), ratios: tpRatios },
        latencyTargets: latTargets.map(({ perRound: _, ...x }) => x),
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
  } finally {
    clearInterval(watchdog)
    await closeAll().catch((err) => log(`closing stores: ${err}`))
    if (raw) await raw.worker.terminate()
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
