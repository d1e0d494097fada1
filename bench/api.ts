// The headline figures through the public API (npm run bench:api): openStore() with its Node
// defaults (engine in a worker_threads worker, fs, strict) and with worker: false, against what
// an app would use instead, measured in the same run.
//   (1) batched durable appends (100 batches of 100 events of ~300 B, each awaited) against the
//       peers: better-sqlite3 12 (WAL, synchronous FULL, one transaction a batch, each row made with
//       JSON.stringify) and a JSONL file (JSON.stringify, writeSync + fdatasyncSync a batch); and
//       against the raw disk limit: the same record bytes, encoded before the clock starts, written
//       with writeSync + fsyncSync per batch into one new file. Diagnostics: the same calls on a
//       memory store, the fs adapter alone, and a JSON log's own work with no store (the ceiling),
//       here and across a worker.
//   (2) single appends: 100 at once (Promise.all) against 100 one after another (group commit),
//       and against better-sqlite3's single-row commits one after another (its best: it is synchronous).
//   (3) a catalog fact (recordExternal) on a session whose catalog holds 10,000 entries against 100,
//       until the writer's mirror holds it; for information, until an observer's listener hears it.
// Ratios pair runs of the same round (the order rotating), after a warm-up round. Settings:
// BENCH_API_ROUNDS, BENCH_API_BATCHES, BENCH_API_SINGLES, BENCH_API_SINGLES_ROUNDS,
// BENCH_API_SINGLES_REPEATS, BENCH_API_CATALOG_SMALL, _LARGE, _SAMPLES, _ROUNDS.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { createFsAdapter } from '../src/backends/fs'
import type { StorageAdapter } from '../src/storage/types'
import { HEADER_VERSION } from '../src/core/limits'
import { openStore, type AppendResult, type EventInput, type Session, type SessionView, type Store } from '../src/index-node'
import { encodeEventInput } from '../src/core/validate'
import { encodeBatch } from '../src/backends/fs/record-format'
import { runJsonFloor, runJsonFloorWorker } from './support/floor'
import { openSqlitePeer, type SqlitePeer } from './sqlite-peer'
import { messageInput, rawWriteFsync, rotate, runBatched, runRounds, sourceState, writeAllSync } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  type Figure,
  type HeadlineRatio,
  median,
  summarize,
  settlesWithin,
  type Summary,
} from './stats'

const CONFIG = {
  eventBytes: 300,
  batch: 100,
  /** (1) batches per run, each of `batch` events. */
  batches: env('BENCH_API_BATCHES', 100),
  /** Rounds of (1), after one unrecorded warm-up round. */
  rounds: env('BENCH_API_ROUNDS', 7),
  /** (2) single-event appends per run. */
  singles: env('BENCH_API_SINGLES', 100),
  /** Rounds of (2), after one unrecorded warm-up round (runs of 100 appends are short: more rounds). */
  singlesRounds: env('BENCH_API_SINGLES_ROUNDS', 11),
  /** (2) runs of each variant per round, in palindromes (A B C D D C B A): a concurrent run takes a few ms, so one alone is mostly noise. */
  singlesRepeats: env('BENCH_API_SINGLES_REPEATS', 3),
  /** (3) catalog entries before the samples: the small and the large session. */
  catalogSmall: env('BENCH_API_CATALOG_SMALL', 100),
  catalogLarge: env('BENCH_API_CATALOG_LARGE', 10_000),
  /** (3) samples per run (one run: one size, one handle); a run's figure is their median. */
  catalogSamples: env('BENCH_API_CATALOG_SAMPLES', 30),
  /** Rounds of (3), after one unrecorded warm-up round. */
  catalogRounds: env('BENCH_API_CATALOG_ROUNDS', 5),
  /** recordExternal calls in flight at once while filling a catalog (untimed). */
  fillChunk: 250,
  /** Pause after each catalog sample, once every handle has heard it: each sample finds the store quiet. */
  paceMs: 6,
  /** A wait that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 30_000,
}

const TARGETS = {
  /** (1) openStore({ dir }) events/s ÷ better-sqlite3's, at least. */
  sqliteWorker: 1,
  /** (1) openStore({ dir, worker: false }) events/s ÷ better-sqlite3's, at least. */
  sqliteThread: 1.3,
  /** (2) sequential single appends through the worker ÷ better-sqlite3's single-row commits, at least. */
  sqliteSingles: 1,
  /** (2) concurrent single appends through the worker ÷ better-sqlite3's single-row commits, at least. */
  sqliteConcurrent: 3,
  /** (1) openStore({ dir }) events/s ÷ raw events/s, at least. */
  batchedWorker: 0.5,
  /** (1) openStore({ dir, worker: false }) events/s ÷ raw events/s, at least. */
  batchedThread: 0.7,
  /** (2) concurrent ÷ sequential events/s through the worker, at least. */
  groupCommit: 10,
  /** (3) time at the large catalog ÷ time at the small one, at most. */
  catalog: 2,
}

/** The layers a figure is measured at (BENCHMARKS.md labels every row with one). */
/** The floor rows' subject, as it reads in their names. */
const FLOOR_WORKER = "a JSON log's own work with its engine half across a worker, no store, vs better-sqlite3"
const LAYER = {
  worker: 'openStore() in a worker',
  thread: 'openStore({ worker: false })',
  raw: 'raw baseline',
  peer: 'peer',
} as const

const log = (msg: string) => process.stderr.write(`${msg}\n`)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Rejects when `promise` has not settled within CONFIG.stallMs: a hang stops the benchmark instead of the machine. */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => settlesWithin(promise, what, CONFIG.stallMs)

/** The fs adapter alone (strict): the same events, numbered and encoded before the clock starts; events/s. */
let adapterRuns = 0
async function runAdapter(adapter: StorageAdapter, batches: readonly EventInput[][], now: number): Promise<number> {
  const id = `adapter-${adapterRuns++}`
  const encoded = batches.map((b, i) => b.map((e, j) => encodeEventInput(e, i * b.length + j, id, { now })))
  await adapter.createSession({ version: HEADER_VERSION, id, createdAt: now, seedLength: 0, delegationDepth: 0, origin: 'root' })
  const t0 = performance.now()
  for (const b of encoded) await adapter.append(id, b)
  const ms = performance.now() - t0
  await adapter.deleteSession(id)
  return ((encoded.length * encoded[0]!.length) / ms) * 1000
}

/** better-sqlite3: the batches into a new session's rows, one transaction each; events/s. */
let peerRuns = 0
function runSqlite(peer: SqlitePeer, batches: readonly EventInput[][]): number {
  const id = `peer-${peerRuns++}`
  const t0 = performance.now()
  let seq = 0
  for (const b of batches) {
    peer.appendInputs(id, seq, b)
    seq += b.length
  }
  const ms = performance.now() - t0
  const rows = (peer.db.prepare('SELECT count(*) AS n FROM events WHERE session = ?').get(id) as { n: number }).n
  if (rows !== seq) throw new Error(`sqlite run: ${rows} rows, expected ${seq}`)
  peer.db.prepare('DELETE FROM events WHERE session = ?').run(id)
  return (seq / ms) * 1000
}

/** A JSONL file: each batch's lines made with JSON.stringify, writeSync + fdatasyncSync, into one new file; events/s. */
function runJsonl(path: string, batches: readonly EventInput[][]): number {
  const fd = fs.openSync(path, 'w')
  let seq = 0
  let ms: number
  try {
    const t0 = performance.now()
    for (const b of batches) {
      const time = Date.now()
      let text = ''
      for (const { type, data } of b) text += `${JSON.stringify({ seq: seq++, type, time, data })}\n`
      writeAllSync(fd, Buffer.from(text))
      fs.fdatasyncSync(fd)
    }
    ms = performance.now() - t0
  } finally {
    fs.closeSync(fd)
  }
  const lines = fs.readFileSync(path, 'utf8').split('\n').length - 1
  if (lines !== seq) throw new Error(`jsonl run: ${lines} lines, expected ${seq}`)
  fs.rmSync(path)
  return (seq / ms) * 1000
}

/** The raw limit: the same record bytes, writeSync + fsyncSync per batch, into one new file; events/s. */
function runRaw(dir: string, bufs: readonly Buffer[], events: number, n: number): number {
  return (events / rawWriteFsync(join(dir, `raw-${n}.log`), bufs)) * 1000
}

/** `n` single-event rows into a new session of better-sqlite3, one transaction each, one after another; events/s. */
function runSqliteSingles(peer: SqlitePeer, input: EventInput, n: number): number {
  const id = `peer-${peerRuns++}`
  const t0 = performance.now()
  for (let i = 0; i < n; i++) peer.appendInputs(id, i, [input])
  const ms = performance.now() - t0
  peer.db.prepare('DELETE FROM events WHERE session = ?').run(id)
  return (n / ms) * 1000
}

/** `n` single-event appends to a new session, all at once or one after another; returns events/s. */
async function runSingles(store: Store, input: EventInput, n: number, concurrent: boolean): Promise<number> {
  const session = await store.createSession()
  let results: AppendResult[]
  const t0 = performance.now()
  if (concurrent) {
    results = await within(Promise.all(Array.from({ length: n }, () => session.append(input))), `${n} concurrent appends`)
  } else {
    results = []
    for (let i = 0; i < n; i++) results.push(await within(session.append(input), 'a sequential append'))
  }
  const ms = performance.now() - t0
  const seqs = results.map((r) => r.firstSeq).sort((a, b) => a - b)
  if (seqs.some((s, i) => s !== i)) throw new Error(`singles run: seqs ${seqs.slice(0, 5).join(',')}..., expected 0..${n - 1}`)
  await session.close()
  await store.deleteSession(session.id)
  return (n / ms) * 1000
}

const catalogLength = (view: SessionView): number => view.projections.get('subagentCatalog')?.length ?? 0

let external = 0

/** Adds `count` entries to the session's catalog with recordExternal, `fillChunk` at once (untimed). */
async function fillCatalog(session: Session, count: number): Promise<void> {
  const target = catalogLength(session) + count
  for (let done = 0; done < count; done += CONFIG.fillChunk) {
    const k = Math.min(CONFIG.fillChunk, count - done)
    await within(Promise.all(Array.from({ length: k }, () => session.recordExternal({ childId: `ext-${external++}` }))), 'filling a catalog')
  }
  if (catalogLength(session) !== target) throw new Error(`catalog holds ${catalogLength(session)} entries after filling, expected ${target}`)
}

interface CatalogRun {
  /** Per sample, ms from calling recordExternal until the writer's mirror holds the new entry. */
  writer: number[]
  /** Per sample, ms until the observer's listener is called with the new length (observer runs only). */
  observer: number[]
  /** Catalog length before the first sample. */
  from: number
}

/**
 * `samples` catalog facts, one after another: for each, the time from calling recordExternal
 * until the writer's mirror holds the new entry and, with an observer, until the observer's
 * subscribe('subagentCatalog') listener is called with the new length. After each sample, once
 * every handle has it, a pause of `paceMs`, so every sample finds the store quiet.
 */
async function runCatalog(session: Session, observer: SessionView | undefined, samples: number): Promise<CatalogRun> {
  const from = catalogLength(session)
  const run: CatalogRun = { writer: [], observer: [], from }
  let t0 = 0
  let heard: { length: number; resolve: (ms: number) => void } | undefined
  const unsubscribe = observer?.projections.subscribe('subagentCatalog', (value) => {
    const t = performance.now()
    if (heard && (value?.length ?? 0) >= heard.length) {
      const h = heard
      heard = undefined
      h.resolve(t - t0)
    }
  })
  if (observer && catalogLength(observer) !== from) throw new Error(`observer sees ${catalogLength(observer)} entries, the writer ${from}`)
  try {
    for (let i = 0; i < samples; i++) {
      const expected = from + i + 1
      const observed = observer ? new Promise<number>((resolve) => (heard = { length: expected, resolve })) : undefined
      t0 = performance.now()
      await within(session.recordExternal({ childId: `ext-${external++}` }), 'recordExternal')
      // recordExternal resolves once this handle's values reflect it; should they lag, wait for them.
      if (catalogLength(session) < expected) await within(untilLength(session, expected), "the writer's mirror")
      run.writer.push(performance.now() - t0)
      if (observed) run.observer.push(await within(observed, "the observer's listener"))
      if (catalogLength(session) !== expected) throw new Error(`catalog holds ${catalogLength(session)} entries, expected ${expected}`)
      await sleep(CONFIG.paceMs)
    }
  } finally {
    unsubscribe?.()
  }
  return run
}

function untilLength(view: SessionView, length: number): Promise<void> {
  return new Promise((resolve) => {
    let unsubscribe: (() => void) | undefined
    let done = false
    unsubscribe = view.projections.subscribe('subagentCatalog', (value) => {
      if (done || (value?.length ?? 0) < length) return
      done = true
      unsubscribe?.()
      resolve()
    })
    if (done) unsubscribe()
  })
}

async function main(): Promise<void> {
  const started = performance.now()
  const { root, cleanup } = await benchRoot('sessionfold-bench-api-')
  const stores: Store[] = []
  const open = async (name: string, worker: boolean): Promise<Store> => {
    // The defaults are the point: storage fs, durability strict, and (unless told) the worker.
    const store = await openStore(worker ? { dir: join(root, name) } : { dir: join(root, name), worker: false })
    stores.push(store)
    return store
  }
  try {
    checkSettings(CONFIG)
    log(`temp dir ${root}`)
    const source = sourceState()
    const worker = await open('worker', true)
    const thread = await open('thread', false)
    // Diagnostics of where a batch's time goes: the same client and engine without a disk
    // (storage memory), and the fs adapter alone (the storage layer: encode, write, fdatasync).
    const memWorker = await openStore({ storage: 'memory' })
    const memThread = await openStore({ storage: 'memory', worker: false })
    stores.push(memWorker, memThread)
    const adapter = createFsAdapter({ dir: join(root, 'adapter') })
    const sqlite = openSqlitePeer(join(root, 'peer.sqlite'), 'FULL')
    const input = messageInput(CONFIG.eventBytes)

    // ---- (1) batched appends ----
    const events = CONFIG.batches * CONFIG.batch
    const batches: EventInput[][] = Array.from({ length: CONFIG.batches }, () => Array.from({ length: CONFIG.batch }, () => input))
    // The raw side writes the adapter's records of the same events (seqs 0.., a 13-digit time), encoded before its clock starts.
    const now = Date.now()
    const rawBufs = batches.map((b, i) => encodeBatch(b.map((e, j) => encodeEventInput(e, i * CONFIG.batch + j, 'bench-raw', { now }))).buf)
    const recordBytes = rawBufs.reduce((k, b) => k + b.length, 0) / events
    const rawDir = join(root, 'raw')
    fs.mkdirSync(rawDir)
    let rawRuns = 0
    let floorRuns = 0
    const BATCHED = [
      {
        key: 'sqlite',
        label: 'better-sqlite3 12, WAL, synchronous FULL: one transaction a batch, each row JSON.stringify(event)',
        layer: LAYER.peer,
        run: async () => runSqlite(sqlite, batches),
      },
      {
        key: 'jsonl',
        label: 'a JSONL file: JSON.stringify(event) a line, writeSync + fdatasyncSync a batch',
        layer: LAYER.peer,
        run: async () => runJsonl(join(rawDir, `peer-${rawRuns++}.jsonl`), batches),
      },
      {
        key: 'raw',
        label: 'raw: writeSync + fsyncSync of the same record bytes per batch, one new file',
        layer: LAYER.raw,
        run: async () => runRaw(rawDir, rawBufs, events, rawRuns++),
      },
      {
        key: 'worker',
        label: 'openStore({ dir }): session.append(batch), each awaited',
        layer: LAYER.worker,
        run: () => runBatched(worker, batches, CONFIG.stallMs),
      },
      {
        key: 'thread',
        label: 'openStore({ dir, worker: false }): session.append(batch), each awaited',
        layer: LAYER.thread,
        run: () => runBatched(thread, batches, CONFIG.stallMs),
      },
      {
        key: 'jsonFloor',
        label: "(diagnostic) a JSON log's own work, no store: validate, stringify, parse (encodeEventInput), CRC-32 records, writeSync + fdatasyncSync",
        layer: 'diagnostic (floor)',
        run: async () => runJsonFloor(rawDir, batches, floorRuns++),
      },
      {
        key: 'jsonFloorWorker',
        label:
          '(diagnostic) the same across a worker, no store: encodeEventBody here, the bodies posted to a worker_threads worker that parses, writes and fdatasyncs',
        layer: 'diagnostic (floor)',
        run: () => runJsonFloorWorker(rawDir, batches, floorRuns++, CONFIG.stallMs),
      },
      {
        key: 'adapter',
        label: '(diagnostic) the fs adapter alone, strict: append(events already numbered and encoded)',
        layer: 'diagnostic (adapter level)',
        run: () => runAdapter(adapter, batches, now),
      },
      {
        key: 'memWorker',
        label: "(diagnostic) openStore({ storage: 'memory' }): the same calls, no disk",
        layer: 'diagnostic (no disk)',
        run: () => runBatched(memWorker, batches, CONFIG.stallMs),
      },
      {
        key: 'memThread',
        label: "(diagnostic) openStore({ storage: 'memory', worker: false }): the same calls, no disk",
        layer: 'diagnostic (no disk)',
        run: () => runBatched(memThread, batches, CONFIG.stallMs),
      },
    ]
    // Each round runs A B C C B A (the order rotating from round to round), and a round's figure
    // for each is its two runs together (events over their summed time): a load that rises or
    // falls during the round weighs on every side alike.
    const batchedRuns = await runRounds(BATCHED, CONFIG.rounds, events, log, fmt)
    const bS = new Map(BATCHED.map((x) => [x.key, summarize(batchedRuns.get(x.key)!)]))

    // ---- (2) single appends ----
    const n = CONFIG.singles
    const singleBatches: EventInput[][] = Array.from({ length: n }, () => [input])
    const SINGLES = [
      {
        key: 'sqliteSequential',
        label: `better-sqlite3 12, WAL, synchronous FULL: ${n} single-row transactions one after another`,
        layer: LAYER.peer,
        run: async () => runSqliteSingles(sqlite, input, n),
      },
      { key: 'workerConcurrent', label: `openStore({ dir }): ${n} at once (Promise.all)`, layer: LAYER.worker, run: () => runSingles(worker, input, n, true) },
      { key: 'workerSequential', label: `openStore({ dir }): ${n} one after another`, layer: LAYER.worker, run: () => runSingles(worker, input, n, false) },
      {
        key: 'threadConcurrent',
        label: `openStore({ dir, worker: false }): ${n} at once (Promise.all)`,
        layer: LAYER.thread,
        run: () => runSingles(thread, input, n, true),
      },
      {
        key: 'threadSequential',
        label: `openStore({ dir, worker: false }): ${n} one after another`,
        layer: LAYER.thread,
        run: () => runSingles(thread, input, n, false),
      },
      // The floor of the single-append targets: the JSON log's own work (no store) for one event at
      // a time, in this thread and with its engine half across a worker (one postMessage each way).
      {
        key: 'floorSequential',
        label: `(diagnostic) a JSON log's own work, no store: ${n} single events one after another, each written and fdatasynced`,
        layer: 'diagnostic (floor)',
        run: async () => runJsonFloor(rawDir, singleBatches, floorRuns++),
      },
      {
        key: 'floorWorkerSequential',
        label: `(diagnostic) the same across a worker, no store: each event posted to a worker_threads worker that writes and fdatasyncs it and answers`,
        layer: 'diagnostic (floor)',
        run: () => runJsonFloorWorker(rawDir, singleBatches, floorRuns++, CONFIG.stallMs),
      },
    ]
    const singlesRuns = new Map<string, number[]>(SINGLES.map((x) => [x.key, []]))
    for (let r = 0; r <= CONFIG.singlesRounds; r++) {
      const warmUp = r === 0
      const order = rotate(SINGLES, r)
      const ms = new Map<string, number>(SINGLES.map((x) => [x.key, 0]))
      for (let k = 0; k < CONFIG.singlesRepeats; k++) {
        for (const x of [...order, ...[...order].reverse()]) {
          ms.set(x.key, ms.get(x.key)! + (CONFIG.singles / (await x.run())) * 1000)
        }
      }
      const line: string[] = []
      for (const x of SINGLES) {
        const v = ((2 * CONFIG.singlesRepeats * CONFIG.singles) / ms.get(x.key)!) * 1000
        if (!warmUp) singlesRuns.get(x.key)!.push(v)
        line.push(`${x.key} ${fmt(v, 0)}`)
      }
      log(`singles ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.singlesRounds}`} (events/s): ${line.join(', ')}`)
    }
    const sS = new Map(SINGLES.map((x) => [x.key, summarize(singlesRuns.get(x.key)!)]))

    // ---- (3) catalog ----
    // The large catalog is filled once and grows by one entry per sample over the runs (reported);
    // each small run gets a new session filled to catalogSmall, so that every small sample sees
    // catalogSmall to catalogSmall + samples - 1 entries.
    const fillStart = performance.now()
    const large = await worker.createSession()
    await fillCatalog(large, CONFIG.catalogLarge)
    const fillSeconds = (performance.now() - fillStart) / 1000
    log(`filled a catalog of ${fmt(CONFIG.catalogLarge, 0)} entries through the worker in ${fmt(fillSeconds, 1)} s`)
    const CATALOG = [
      { key: 'smallWriter', size: 'small', handle: 'writer' },
      { key: 'largeWriter', size: 'large', handle: 'writer' },
      { key: 'smallObserver', size: 'small', handle: 'observer' },
      { key: 'largeObserver', size: 'large', handle: 'observer' },
    ] as const
    /** Per round, the median of each run's samples: the writer's, and in observer runs the observer's and the writer's beside it. */
    const catRuns = new Map<string, number[]>(
      ['smallWriter', 'largeWriter', 'smallObserver', 'largeObserver', 'smallWriterObserved', 'largeWriterObserved'].map((k) => [k, []]),
    )
    const lengths = { small: [] as number[], large: [] as number[] }
    for (let r = 0; r <= CONFIG.catalogRounds; r++) {
      const warmUp = r === 0
      const line: string[] = []
      for (const x of rotate(CATALOG, r)) {
        let session = large
        if (x.size === 'small') {
          session = await worker.createSession()
          await fillCatalog(session, CONFIG.catalogSmall)
        }
        const observer = x.handle === 'observer' ? await worker.observe(session.id) : undefined
        const run = await runCatalog(session, observer, warmUp ? Math.min(10, CONFIG.catalogSamples) : CONFIG.catalogSamples)
        await observer?.close()
        if (x.size === 'small') {
          await session.close()
          await worker.deleteSession(session.id)
        }
        const w = median(run.writer)
        if (!warmUp) {
          lengths[x.size].push(run.from)
          if (observer) {
            catRuns.get(x.key)!.push(median(run.observer))
            catRuns.get(`${x.size}WriterObserved`)!.push(w)
          } else {
            catRuns.get(x.key)!.push(w)
          }
        }
        line.push(`${x.key} ${fmt(observer ? median(run.observer) : w, 3)}`)
      }
      log(`catalog ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.catalogRounds}`} (median ms): ${line.join(', ')}`)
    }
    await large.close()
    await worker.deleteSession(large.id)
    const cS = new Map([...catRuns].map(([k, v]) => [k, summarize(v)]))
    for (const s of stores.splice(0)) await s.close()
    await adapter.close()
    sqlite.close()

    // ---- report ----
    // Where a batch's time goes: each layer's ms per batch (from its median events/s), and the
    // floor of the headline ratio if the client and engine cost what they cost without a disk
    // and the storage layer what it costs alone (they run one after the other: each batch is awaited).
    const msPerBatch = (key: string) => (CONFIG.batch / bS.get(key)!.median) * 1000
    const breakdown = {
      rows: [
        ['better-sqlite3, WAL, synchronous FULL (the peer)', msPerBatch('sqlite')],
        ['a JSONL file (the peer)', msPerBatch('jsonl')],
        ['raw write + fsync (the physical limit)', msPerBatch('raw')],
        ["a JSON log's own work, no store (validate, stringify, parse, CRC-32, write, fdatasync)", msPerBatch('jsonFloor')],
        ['the same with the parse, CRC-32, write and fdatasync in a worker, no store', msPerBatch('jsonFloorWorker')],
        ['storage layer: the fs adapter alone (encode, write, fdatasync)', msPerBatch('adapter')],
        ['client + engine in this thread, no disk (validate, stringify, parse, fold, views)', msPerBatch('memThread')],
        ['client + engine through the worker, no disk (the same, and the hop)', msPerBatch('memWorker')],
        ['openStore({ worker: false }), fs', msPerBatch('thread')],
        ['openStore(), fs (the worker)', msPerBatch('worker')],
      ] as [string, number][],
      floorThread: msPerBatch('raw') / (msPerBatch('adapter') + msPerBatch('memThread')),
      floorWorker: msPerBatch('raw') / (msPerBatch('adapter') + msPerBatch('memWorker')),
      ceiling: msPerBatch('raw') / msPerBatch('jsonFloor'),
      ceilingWorker: msPerBatch('raw') / msPerBatch('jsonFloorWorker'),
    }
    const small = fmt(CONFIG.catalogSmall, 0)
    const big = fmt(CONFIG.catalogLarge, 0)
    const batchedWhat = `batched durable appends (${CONFIG.batches} × ${CONFIG.batch} events of ~${CONFIG.eventBytes} B)`
    const singlesWhat = `single durable appends (${CONFIG.singles} a run)`
    /** The same ratio through the worker and in the app's thread: `workerKey` and `threadKey` of `of` against `base`. */
    const both = (
      id: string,
      figure: string,
      measure: string,
      of: Map<string, Summary>,
      [workerKey, threadKey]: [string, string],
      base: Summary,
      targets: { worker?: number; thread?: number } = {},
    ): HeadlineRatio[] => [
      headlineRatio(
        `${id}-worker`,
        figure,
        LAYER.worker,
        measure,
        of.get(workerKey)!,
        base,
        targets.worker === undefined ? undefined : { atLeast: targets.worker },
      ),
      headlineRatio(
        `${id}-thread`,
        figure,
        LAYER.thread,
        measure,
        of.get(threadKey)!,
        base,
        targets.thread === undefined ? undefined : { atLeast: targets.thread },
      ),
    ]
    /** What a store of this design can reach at most here (bench/support/floor.ts), against the peer. */
    const floorRatio = (id: string, figure: string, floor: Summary, peer: Summary) =>
      headlineRatio(id, figure, 'diagnostic (floor)', 'floor events/s ÷ better-sqlite3 events/s', floor, peer)
    const headline: HeadlineRatio[] = [
      ...both(
        'sqlite-batched',
        `${batchedWhat} vs better-sqlite3 (WAL, synchronous FULL, a transaction a batch)`,
        'events/s ÷ better-sqlite3 events/s',
        bS,
        ['worker', 'thread'],
        bS.get('sqlite')!,
        { worker: TARGETS.sqliteWorker, thread: TARGETS.sqliteThread },
      ),
      floorRatio(
        'floor-batched-worker',
        `(floor) the same batches, ${FLOOR_WORKER}: the most the batched ratio through a worker can be here`,
        bS.get('jsonFloorWorker')!,
        bS.get('sqlite')!,
      ),
      floorRatio(
        'floor-batched-thread',
        `(floor) the same in one thread, no store, vs better-sqlite3: the most the batched ratio in the app's thread can be here`,
        bS.get('jsonFloor')!,
        bS.get('sqlite')!,
      ),
      ...both(
        'jsonl-batched',
        `${batchedWhat} vs a JSONL file (writeSync + fdatasyncSync a batch)`,
        'events/s ÷ JSONL events/s',
        bS,
        ['worker', 'thread'],
        bS.get('jsonl')!,
      ),
      ...both(
        'sqlite-singles',
        `${singlesWhat} one after another vs better-sqlite3's single-row transactions one after another`,
        'sequential events/s ÷ better-sqlite3 events/s',
        sS,
        ['workerSequential', 'threadSequential'],
        sS.get('sqliteSequential')!,
        { worker: TARGETS.sqliteSingles },
      ),
      floorRatio(
        'floor-singles-worker',
        `(floor) ${n} single events one after another, ${FLOOR_WORKER}'s single-row transactions: the most the single-append ratio through a worker can be here`,
        sS.get('floorWorkerSequential')!,
        sS.get('sqliteSequential')!,
      ),
      floorRatio(
        'floor-singles-thread',
        `(floor) the same in one thread, no store, vs better-sqlite3's single-row transactions: the most the single-append ratio in the app's thread can be here`,
        sS.get('floorSequential')!,
        sS.get('sqliteSequential')!,
      ),
      ...both(
        'sqlite-concurrent',
        `${singlesWhat} at once (Promise.all) vs better-sqlite3's single-row transactions one after another (its best)`,
        'concurrent events/s ÷ better-sqlite3 events/s',
        sS,
        ['workerConcurrent', 'threadConcurrent'],
        sS.get('sqliteSequential')!,
        { worker: TARGETS.sqliteConcurrent },
      ),
      headlineRatio(
        'batched-worker',
        `${batchedWhat} vs raw writeSync + fsyncSync of the same bytes (the physical limit)`,
        LAYER.worker,
        'openStore({ dir }) events/s ÷ raw events/s',
        bS.get('worker')!,
        bS.get('raw')!,
        { atLeast: TARGETS.batchedWorker },
      ),
      headlineRatio(
        'batched-thread',
        `${batchedWhat} vs raw writeSync + fsyncSync of the same bytes (the physical limit)`,
        LAYER.thread,
        'openStore({ dir, worker: false }) events/s ÷ raw events/s',
        bS.get('thread')!,
        bS.get('raw')!,
        { atLeast: TARGETS.batchedThread },
      ),
      headlineRatio(
        'group-commit-worker',
        `${CONFIG.singles} single appends at once (Promise.all) vs ${CONFIG.singles} one after another`,
        LAYER.worker,
        'concurrent events/s ÷ sequential events/s',
        sS.get('workerConcurrent')!,
        sS.get('workerSequential')!,
        { atLeast: TARGETS.groupCommit },
      ),
      headlineRatio(
        'group-commit-thread',
        `${CONFIG.singles} single appends at once (Promise.all) vs ${CONFIG.singles} one after another`,
        LAYER.thread,
        'concurrent events/s ÷ sequential events/s',
        sS.get('threadConcurrent')!,
        sS.get('threadSequential')!,
      ),
      headlineRatio(
        'catalog-writer',
        `a catalog fact (recordExternal) until the writer's mirror holds it: catalog of ${big} vs ${small} entries`,
        LAYER.worker,
        `time at ${big} ÷ time at ${small}`,
        cS.get('largeWriter')!,
        cS.get('smallWriter')!,
        { atMost: TARGETS.catalog },
      ),
      headlineRatio(
        'catalog-observer',
        `a catalog fact (recordExternal) until an observer's subscribe listener hears it: catalog of ${big} vs ${small} entries`,
        LAYER.worker,
        `time at ${big} ÷ time at ${small}`,
        cS.get('largeObserver')!,
        cS.get('smallObserver')!,
      ),
    ]
    const catalogRows = [
      { key: 'smallWriter', label: `catalog of ${small}: writer's mirror (session.projections.get)` },
      { key: 'largeWriter', label: `catalog of ${big}: writer's mirror` },
      { key: 'smallObserver', label: `catalog of ${small}: observer's listener (store.observe(id), subscribe)` },
      { key: 'largeObserver', label: `catalog of ${big}: observer's listener` },
      { key: 'smallWriterObserved', label: `(reference) catalog of ${small}: writer's mirror, observer open` },
      { key: 'largeWriterObserved', label: `(reference) catalog of ${big}: writer's mirror, observer open` },
    ]

    finishBench(
      'api',
      'sessionfold public-API benchmark: the headline figures through openStore() with its Node defaults (fs, strict)',
      [
        ...BATCHED.map((x): Figure => [`${x.label} (${x.layer})`, bS.get(x.key)!, 'events/s', 0]),
        ...SINGLES.map((x): Figure => [`${x.label} (${x.layer})`, sS.get(x.key)!, 'events/s', 0]),
        ...catalogRows.map((x): Figure => [x.label, cS.get(x.key)!, 'ms', 3]),
      ],
      headline,
      {
        source,
        config: CONFIG,
        targets: TARGETS,
        layers: LAYER,
        headline,
        batched: {
          unit: 'events/s',
          recordBytes,
          breakdown,
          variants: BATCHED.map((x) => ({ key: x.key, label: x.label, layer: x.layer, summary: bS.get(x.key) })),
        },
        singles: { unit: 'events/s', variants: SINGLES.map((x) => ({ key: x.key, label: x.label, layer: x.layer, summary: sS.get(x.key) })) },
        catalog: {
          unit: "ms (median of a run's samples)",
          fillSeconds,
          lengths,
          variants: catalogRows.map((x) => ({ key: x.key, label: x.label, layer: LAYER.worker, summary: cS.get(x.key) })),
        },
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
    log(
      `floor of the batched ratio: ${fmt(breakdown.floorThread, 2)} in this thread, ${fmt(breakdown.floorWorker, 2)} through the worker; ` +
        `ceiling (a JSON log's own work): ${fmt(breakdown.ceiling, 2)}, ${fmt(breakdown.ceilingWorker, 2)} across a worker`,
    )
  } finally {
    for (const s of stores.splice(0)) await s.close().catch((err) => log(`closing a store: ${err}`))
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
