// Time travel through the public API (npm run bench:time-travel): what store.observe(id, { at })
// costs an app that opened its store with openStore() and its Node defaults (the engine in a
// worker_threads worker, storage fs, durability strict), and what the history rows that make it
// cheap cost on disk (docs/CONTRACT.md §11).
//
//   Writing (information): a session of 1,000,000 events of about 200 bytes (app/msg events, a
//   turn/start ... turn/end every 50), appended with session.append(batch) in batches of 1,000,
//   each awaited; then closed, and its history rows (<dir>/sessions/<folder>/history/<at>.json)
//   waited for. Also a 1,000-event session, and a session with a large state: a
//   session.recordExternal({ childId, label }) every 10 events, so its catalog grows with it.
//   (1) observe at random points of the 1,000,000-event session: from the call until the view's
//       snapshot is there (the view closed after, untimed); per round the median of 20 random
//       points, against the same at 20 random points of the 1,000-event session.
//   (2) the same against a full refold of the prefix: a copy of the store with every history/
//       folder and checkpoint.json removed, observed at the first 5 of the round's random points
//       of the same session (there it folds from seq 0); per round the median of those, and the
//       views' values checked equal to those read with history rows at the same points.
//   (3) stored size: bytes of history/*.json ÷ bytes of events.log, for the long session and
//       for the large-state one.
//
// Every timed figure is the median over rounds (min and max beside it) after one unrecorded
// warm-up round; ratios pair runs of the same round, in an order that rotates from round to
// round. The stores live in a temp folder removed at the end. Results go to
// bench/results-time-travel.json (BENCH_OUT when set). Settings: BENCH_TT_EVENTS, BENCH_TT_SMALL,
// BENCH_TT_ROUNDS, BENCH_TT_POINTS, BENCH_TT_REFOLD_POINTS, BENCH_TT_LARGE_EVENTS,
// BENCH_TT_EXTERNAL_EVERY, BENCH_TT_LARGE_POINTS, BENCH_TT_SEED.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { HISTORY_DIR, CHECKPOINT_FILE, LOG_FILE, sessionDir, sessionsDir } from '../src/backends/fs/layout'
import { openStore, type EventInput, type Session, type Store } from '../src/index-node'
import { rotate, sourceState } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  fmt,
  fmtSummary,
  headlineRatio,
  type HeadlineRatio,
  median,
  summarize,
  type Summary,
  settlesWithin,
  finishBench,
} from './stats'

const CONFIG = {
  /** Events of the long session, and of the short one. */
  events: env('BENCH_TT_EVENTS', 1_000_000),
  small: env('BENCH_TT_SMALL', 1_000),
  batch: 1_000,
  eventBytes: 200,
  /** A turn (turn/start, app/msg events, turn/end) every this many events. */
  turnEvery: 50,
  /** Rounds after one unrecorded warm-up round. */
  rounds: env('BENCH_TT_ROUNDS', 5),
  /** Random points per round and session (1), and of those, the first ones also read without history (2). */
  points: env('BENCH_TT_POINTS', 20),
  refoldPoints: env('BENCH_TT_REFOLD_POINTS', 5),
  /** The large-state session: its events, a recordExternal every this many of them, and points read per round (information). */
  largeEvents: env('BENCH_TT_LARGE_EVENTS', 200_000),
  externalEvery: env('BENCH_TT_EXTERNAL_EVERY', 10),
  largePoints: env('BENCH_TT_LARGE_POINTS', 10),
  seed: env('BENCH_TT_SEED', 20_240_611),
  /** History rows are taken as all there once their count has not changed for this long after close. */
  settleMs: 1_000,
  stallMs: 120_000,
}

const TARGETS = {
  /** (1) observe at the long session ÷ at the short one, at most. */
  flat: 2,
  /** (2) observe with history rows ÷ observe folding from seq 0, at most. */
  refold: 0.05,
  /** (3) history bytes ÷ log bytes, at most. */
  size: 0.05,
}

const LAYER = 'openStore() in a worker'
const IDS = { big: 'tt-long', small: 'tt-short', large: 'tt-catalog' }

const log = (msg: string) => process.stderr.write(`${msg}\n`)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A small seeded generator (mulberry32): the same points on every run with the same seed. */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const rand = random(CONFIG.seed)
const pointsIn = (length: number, n: number) => Array.from({ length: n }, () => Math.floor(rand() * (length + 1)))

const within = <T>(promise: Promise<T>, what: string): Promise<T> => settlesWithin(promise, what, CONFIG.stallMs)

// ---- writing ------------------------------------------------------------------------------

const WORDS = 'the agent read the file, ran the tests and proposed a patch to the parser so that they pass again; '
/** app/msg text long enough for a stored record ({"seq","type","time","data"}) of about CONFIG.eventBytes. */
const TEXT_CHARS =
  CONFIG.eventBytes - JSON.stringify({ seq: 500_000, type: 'app/msg', time: 1_700_000_000_000, data: { role: 'assistant', n: 500_000, text: '' } }).length

function eventAt(pos: number): EventInput {
  const k = pos % CONFIG.turnEvery
  if (k === 0) return { type: 'turn/start' }
  if (k === CONFIG.turnEvery - 1) return { type: 'turn/end' }
  const from = (pos * 7) % WORDS.length
  return { type: 'app/msg', data: { role: pos % 2 === 0 ? 'assistant' : 'user', n: pos, text: WORDS.repeat(3).slice(from, from + TEXT_CHARS) } }
}

/**
 * Appends `events` events to a new session in batches of CONFIG.batch, each awaited; with
 * `externalEvery`, a recordExternal after every `externalEvery - 1` events (sent with the batch's
 * appends, in order). Closes the session; the seconds the appends took.
 */
async function write(store: Store, id: string, events: number, externalEvery = 0): Promise<{ seconds: number; children: number }> {
  const session: Session = await store.createSession({ id })
  let children = 0
  let pos = 0
  const t0 = performance.now()
  while (pos < events) {
    const end = Math.min(pos + CONFIG.batch, events)
    if (externalEvery === 0) {
      const batch: EventInput[] = []
      for (; pos < end; pos++) batch.push(eventAt(pos))
      await within(session.append(batch), 'an append')
    } else {
      const calls: Promise<unknown>[] = []
      while (pos < end) {
        const piece: EventInput[] = []
        for (; pos < end && piece.length < externalEvery - 1; pos++) piece.push(eventAt(pos))
        if (piece.length > 0) calls.push(session.append(piece))
        if (pos < end) {
          calls.push(session.recordExternal({ childId: `ext-${children}`, label: `remote worker ${children} of the build farm` }))
          children++
          pos++
        }
      }
      await within(Promise.all(calls), 'a batch of appends and catalog facts')
    }
    if (pos % 100_000 < CONFIG.batch) log(`  ${id}: ${fmt(pos, 0)} events`)
  }
  const seconds = (performance.now() - t0) / 1000
  await within(session.close(), 'closing a session')
  return { seconds, children }
}

// ---- files on disk ------------------------------------------------------------------------

interface OnDisk {
  events: number
  logBytes: number
  checkpointBytes: number
  historyBytes: number
  /** history bytes ÷ log bytes. */
  ratio: number
  /** The history rows' positions, ascending. */
  positions: number[]
  gaps: Summary
}

function historyPositions(dir: string, id: string): number[] {
  const h = join(sessionDir(dir, id), HISTORY_DIR)
  if (!fs.existsSync(h)) return []
  return fs
    .readdirSync(h)
    .flatMap((n) => /^(\d+)\.json$/.exec(n)?.[1] ?? [])
    .map(Number)
    .sort((a, b) => a - b)
}

/** Waits until the count of history rows has not changed for CONFIG.settleMs (the writer is closed: it should not). */
async function settled(dir: string, id: string): Promise<number> {
  const t0 = performance.now()
  let count = historyPositions(dir, id).length
  for (let quiet = performance.now(); performance.now() - quiet < CONFIG.settleMs; ) {
    await sleep(100)
    const now = historyPositions(dir, id).length
    if (now !== count) [count, quiet] = [now, performance.now()]
    if (performance.now() - t0 > CONFIG.stallMs) throw new Error(`history rows of ${id} still changing after ${CONFIG.stallMs / 1000} s`)
  }
  return count
}

function onDisk(dir: string, id: string, events: number): OnDisk {
  const folder = sessionDir(dir, id)
  const size = (p: string) => (fs.existsSync(p) ? fs.statSync(p).size : 0)
  const positions = historyPositions(dir, id)
  const historyBytes = positions.reduce((n, at) => n + size(join(folder, HISTORY_DIR, `${at}.json`)), 0)
  const logBytes = size(join(folder, LOG_FILE))
  return {
    events,
    logBytes,
    checkpointBytes: size(join(folder, CHECKPOINT_FILE)),
    historyBytes,
    ratio: historyBytes / logBytes,
    positions,
    gaps: summarize(positions.map((p, i) => p - (positions[i - 1] ?? 0))),
  }
}

/** A copy of the store at `from` without any history row or checkpoint row: a read there folds from seq 0. */
function strippedCopy(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true })
  for (const folder of fs.readdirSync(sessionsDir(to))) {
    fs.rmSync(join(sessionsDir(to), folder, HISTORY_DIR), { recursive: true, force: true })
    fs.rmSync(join(sessionsDir(to), folder, CHECKPOINT_FILE), { force: true })
  }
}

// ---- reading at a point -------------------------------------------------------------------

interface Sample {
  at: number
  ms: number
  values: string
}

/** observe(id, { at }) → the view's snapshot: the ms it took; the view closed after (untimed). */
async function observeAt(store: Store, id: string, at: number, keep: boolean): Promise<Sample> {
  const t0 = performance.now()
  const view = await within(store.observe(id, { at }), `observe ${id} at ${at}`)
  const snap = view.projections.snapshot()
  const ms = performance.now() - t0
  await view.close()
  if (view.at !== at || snap.asOfSeq !== at - 1) throw new Error(`observe ${id} at ${at}: view.at ${view.at}, asOfSeq ${snap.asOfSeq}`)
  return { at, ms, values: keep ? JSON.stringify(snap.values) : '' }
}

async function observeAll(store: Store, id: string, points: readonly number[], keep = false): Promise<Sample[]> {
  const out: Sample[] = []
  for (const at of points) out.push(await observeAt(store, id, at, keep))
  return out
}

/** Events a read at `at` folds at least: from the newest history row at or before it (or the latest row at the end). */
function foldDistance(at: number, positions: readonly number[], length: number): number {
  if (at === length) return 0
  let best = 0
  for (const p of positions) if (p <= at) best = p
  return at - best
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  checkSettings(CONFIG)
  if (CONFIG.refoldPoints > CONFIG.points) throw new Error('BENCH_TT_REFOLD_POINTS must be at most BENCH_TT_POINTS')
  const started = performance.now()
  const source = sourceState()
  const { root, cleanup } = await benchRoot('sessionfold-time-travel-')
  const dir = join(root, 'store')
  const bareDir = join(root, 'stripped')
  const stores: Store[] = []
  try {
    log(
      `writing ${fmt(CONFIG.events, 0)} + ${fmt(CONFIG.small, 0)} events, and ${fmt(CONFIG.largeEvents, 0)} with a recordExternal every ${CONFIG.externalEvery}, to ${dir}`,
    )
    const writer = await openStore({ dir })
    stores.push(writer)
    const big = await write(writer, IDS.big, CONFIG.events)
    const bigRows = await settled(dir, IDS.big)
    log(`  ${IDS.big}: ${fmt(big.seconds, 1)} s, ${bigRows} history rows`)
    await write(writer, IDS.small, CONFIG.small)
    const large = await write(writer, IDS.large, CONFIG.largeEvents, CONFIG.externalEvery)
    const largeRows = await settled(dir, IDS.large)
    log(`  ${IDS.large}: ${fmt(large.seconds, 1)} s, ${fmt(large.children, 0)} children, ${largeRows} history rows`)
    await writer.close()
    stores.splice(0)
    const disk = { big: onDisk(dir, IDS.big, CONFIG.events), small: onDisk(dir, IDS.small, CONFIG.small), large: onDisk(dir, IDS.large, CONFIG.largeEvents) }
    strippedCopy(dir, bareDir)

    const store = await openStore({ dir })
    const bare = await openStore({ dir: bareDir })
    stores.push(store, bare)
    const runs = {
      history: [] as Sample[][],
      small: [] as Sample[][],
      refold: [] as Sample[][],
      large: [] as Sample[][],
    }
    const perRound = { history: [] as number[], small: [] as number[], refold: [] as number[], large: [] as number[] }
    let mismatches = 0
    for (let r = 0; r <= CONFIG.rounds; r++) {
      const pts = {
        history: pointsIn(CONFIG.events, CONFIG.points),
        small: pointsIn(CONFIG.small, CONFIG.points),
        large: pointsIn(CONFIG.largeEvents, CONFIG.largePoints),
      }
      const refoldPts = pts.history.slice(0, CONFIG.refoldPoints)
      const variants = [
        { key: 'history' as const, run: () => observeAll(store, IDS.big, pts.history, true) },
        { key: 'small' as const, run: () => observeAll(store, IDS.small, pts.small) },
        { key: 'refold' as const, run: () => observeAll(bare, IDS.big, refoldPts, true) },
        { key: 'large' as const, run: () => observeAll(store, IDS.large, pts.large) },
      ]
      const got = new Map<string, Sample[]>()
      for (const v of rotate(variants, r)) got.set(v.key, await v.run())
      // The same points read with and without history rows: the same values (a history row is a cache).
      for (const s of got.get('refold')!) if (got.get('history')!.find((h) => h.at === s.at)!.values !== s.values) mismatches++
      const line: string[] = []
      for (const key of ['history', 'small', 'refold', 'large'] as const) {
        const samples = got.get(key)!.map((s) => ({ ...s, values: '' }))
        const m = median(samples.map((s) => s.ms))
        if (r > 0) {
          runs[key].push(samples)
          perRound[key].push(m)
        }
        line.push(`${key} ${fmt(m, 2)}`)
      }
      log(`${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (median ms): ${line.join(', ')}`)
    }
    if (mismatches > 0) throw new Error(`${mismatches} views differ with and without history rows`)

    const S = { history: summarize(perRound.history), small: summarize(perRound.small), refold: summarize(perRound.refold), large: summarize(perRound.large) }
    const once = (id: string, figure: string, what: string, value: number): HeadlineRatio => {
      const pass = value <= TARGETS.size
      return {
        id,
        figure,
        layer: LAYER,
        ratio: what,
        perRound: summarize([value]),
        ofMedians: value,
        target: `≤ ${TARGETS.size}`,
        pass,
        result: pass ? 'PASS' : 'MISS',
      }
    }
    const headline: HeadlineRatio[] = [
      headlineRatio(
        'flat',
        `observe(id, { at }) at random points: ${fmt(CONFIG.events, 0)}-event session (history rows present) vs ${fmt(CONFIG.small, 0)}-event session`,
        LAYER,
        `time at ${fmt(CONFIG.events, 0)} ÷ time at ${fmt(CONFIG.small, 0)}`,
        S.history,
        S.small,
        { atMost: TARGETS.flat },
      ),
      headlineRatio(
        'refold',
        `observe(id, { at }) at random points of ${fmt(CONFIG.events, 0)} events: with history rows vs a store without history rows or checkpoints (folds from seq 0)`,
        LAYER,
        'time with history ÷ time without',
        S.history,
        S.refold,
        { atMost: TARGETS.refold },
      ),
      once('size', `history rows on disk, ${fmt(CONFIG.events, 0)}-event session`, 'bytes of history/*.json ÷ bytes of events.log', disk.big.ratio),
      once(
        'size-large',
        `history rows on disk, large state: ${fmt(CONFIG.largeEvents, 0)} events, ${fmt(large.children, 0)} catalog entries (recordExternal every ${CONFIG.externalEvery} events)`,
        'bytes of history/*.json ÷ bytes of events.log',
        disk.large.ratio,
      ),
    ]

    // The slowest reads of the long session, and how far each was from a history row.
    const all = runs.history.flat().map((s) => ({ ...s, fold: foldDistance(s.at, disk.big.positions, CONFIG.events) }))
    const slowest = [...all]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5)
      .map(({ at, ms, fold }) => ({ at, ms, fold }))
    const folds = summarize(all.map((s) => s.fold))
    const allMs = summarize(all.map((s) => s.ms))

    log(
      `history rows of ${IDS.big}: ${disk.big.positions.length}, of ${IDS.large}: ${disk.large.positions.length}; events folded after the nearest row: ${fmtSummary(folds, 0)}; ` +
        `slowest reads: ${slowest.map((x) => `at ${x.at}: ${fmt(x.ms, 1)} ms (${x.fold} after a row)`).join('; ')}`,
    )
    finishBench(
      'time-travel',
      'sessionfold time travel through openStore() (worker, fs, strict): store.observe(id, { at })',
      [
        [`observe at random points, ${fmt(CONFIG.events, 0)} events, history rows present`, S.history, 'ms', 2],
        [`observe at random points, ${fmt(CONFIG.small, 0)} events`, S.small, 'ms', 2],
        [`the ${fmt(CONFIG.events, 0)} events without history or checkpoint rows (folds from seq 0)`, S.refold, 'ms', 1],
        [`(information) ${fmt(CONFIG.largeEvents, 0)} events, ${fmt(large.children, 0)} children`, S.large, 'ms', 2],
        [`writing ${fmt(CONFIG.events, 0)} events in batches of ${fmt(CONFIG.batch, 0)}`, summarize([CONFIG.events / big.seconds]), 'events/s', 0],
      ],
      headline,
      {
        source,
        config: CONFIG,
        targets: TARGETS,
        layer: LAYER,
        headline,
        write: {
          big: { seconds: big.seconds, eventsPerSecond: CONFIG.events / big.seconds },
          large: { seconds: large.seconds, eventsPerSecond: CONFIG.largeEvents / large.seconds, children: large.children },
        },
        disk,
        observe: { unit: 'ms, per round the median over its points', ...S },
        reads: { all: allMs, foldDistance: folds, slowest },
        totalSeconds: (performance.now() - started) / 1000,
      },
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
