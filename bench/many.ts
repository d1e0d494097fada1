// Many sessions as cheap as few (issue 34), through the public API (npm run bench:many), on
// three stores (BENCH_MANY_BACKENDS, default fs,postgres,chromium), each with its defaults:
//   fs:        openStore({ storage: 'fs', dir }) in Node (the engine in a worker_threads worker, strict);
//   postgres:  openStore({ storage: 'postgres', url }) in Node (worker, strict) on a throwaway cluster
//              (fsync on) it starts itself;
//   chromium:  the page's own openStore({ name }) in headless Chromium (IndexedDB on disk, the engine
//              in its module Web Worker, strict), bench/many-browser/ served by Vite on 127.0.0.1.
// Each has two source stores of the same kind of events (~250 B of JSON each):
//   small: many sessions of 2 events; big: few sessions of many events. fs and PostgreSQL: 2,000 × 2
//   against 40 × 1,000 (BENCH_MANY_SMALL, BENCH_MANY_BIG_SESSIONS, BENCH_MANY_BIG_EVENTS; the issue's
//   small shape is 20,000); Chromium, where IndexedDB writes are slow: 500 × 2 against 10 × 1,000
//   (BENCH_MANY_BROWSER_SMALL, _BROWSER_BIG_SESSIONS, _BROWSER_BIG_EVENTS).
// Each round, for each store and each shape (the two back to back, their order alternating from round to round):
//   pass:   a store opened afresh on the source (open untimed), then store.changesSince from null
//           until `done`, every batch kept: events/s over the whole pass;
//   import: store.applyChanges of every batch of that pass, in order, into a new empty store (a temp
//           folder, a new database, a new IndexedDB database; open, close and removal untimed):
//           events/s. That is what `sessionfold import` and a new device's first sync do.
// Targets (issue 34): the small shape's events/s ≥ 0.5 × the big shape's, for the pass and for
// the import, on each store, judged on the per-round ratios' median. Per-session cost (µs a
// session) is what the issue is about, and is printed for both shapes: at a fixed count of events,
// the small shape has hundreds of times as many sessions, so a cost per session shows up there.
// The source stores are built once, untimed (createSession, one append of its events, close;
// `buildConcurrency` at a time, durability 'relaxed' for the build: the stored form is the same).
// The steps are bench/support/many-work.ts (Node and the page alike), the stores bench/support/many-backends.ts.
// Settings: the sizes above, BENCH_MANY_ROUNDS, BENCH_MANY_BACKENDS; CHROMIUM_PATH.
import { messageInput, sourceState } from './common'
import { type Figure, type HeadlineRatio, benchRoot, checkSettings, env, finishBench, fmt, headlineRatio, type Summary, summarize } from './stats'
import {
  BACKEND_KEYS,
  type BackendKey,
  type BackendOptions,
  chromiumBackend,
  fsBackend,
  type ManyBackend,
  postgresBackend,
  type Shape,
} from './support/many-backends'
import type { ShapeSize } from './support/many-work'

const CONFIG = {
  /** Sessions of the small shape, fs and PostgreSQL (the issue's shape is 20,000; building those on fs takes ~5 minutes here). */
  smallSessions: env('BENCH_MANY_SMALL', 2_000),
  smallEvents: 2,
  bigSessions: env('BENCH_MANY_BIG_SESSIONS', 40),
  bigEvents: env('BENCH_MANY_BIG_EVENTS', 1_000),
  /** The same in Chromium, where IndexedDB writes (the build, the import) are slow. */
  browserSmallSessions: env('BENCH_MANY_BROWSER_SMALL', 500),
  browserBigSessions: env('BENCH_MANY_BROWSER_BIG_SESSIONS', 10),
  browserBigEvents: env('BENCH_MANY_BROWSER_BIG_EVENTS', 1_000),
  /** Bytes of each event's stored JSON. */
  eventBytes: 250,
  /**
   * Rounds, all recorded: no warm-up round, since every pass and every import opens a store of its
   * own (its engine in a new worker, with a cold JIT) whatever the round, and an import round of
   * the small shape costs about as much as the rest of the run.
   */
  rounds: env('BENCH_MANY_ROUNDS', 3),
  /** createSession calls in flight at once while building the sources. */
  buildConcurrency: 32,
  /** A step that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 600_000,
}

const BACKENDS = (process.env.BENCH_MANY_BACKENDS || BACKEND_KEYS.join(',')).split(',').map((s) => s.trim()) as BackendKey[]

const TARGETS = {
  /** changesSince pass: small events/s ÷ big events/s, at least. */
  pass: 0.5,
  /** applyChanges import: small events/s ÷ big events/s, at least. */
  import: 0.5,
}

const SHAPES: readonly Shape[] = ['small', 'big']
const LAYER: Record<BackendKey, string> = {
  fs: "openStore({ storage: 'fs', dir }) with its defaults (worker, strict)",
  postgres: "openStore({ storage: 'postgres', url }) with its defaults (worker, strict)",
  chromium: "the page's openStore({ name }) in headless Chromium (IndexedDB, its Web Worker, strict)",
}
const NAME: Record<BackendKey, string> = { fs: 'fs', postgres: 'PostgreSQL', chromium: 'Chromium (IndexedDB)' }

const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)

const sizesOf = (b: BackendKey): Record<Shape, ShapeSize> =>
  b === 'chromium'
    ? {
        small: { sessions: CONFIG.browserSmallSessions, events: CONFIG.smallEvents },
        big: { sessions: CONFIG.browserBigSessions, events: CONFIG.browserBigEvents },
      }
    : { small: { sessions: CONFIG.smallSessions, events: CONFIG.smallEvents }, big: { sessions: CONFIG.bigSessions, events: CONFIG.bigEvents } }
const label = (s: ShapeSize) => `${fmt(s.sessions, 0)} × ${fmt(s.events, 0)}`

type Key = `${'pass' | 'import' | 'close'}-${Shape}`
const series = (): Record<Key, number[]> => ({ 'pass-small': [], 'pass-big': [], 'import-small': [], 'import-big': [], 'close-small': [], 'close-big': [] })

interface Measured {
  backend: ManyBackend
  sizes: Record<Shape, ShapeSize>
  buildSeconds: Record<Shape, number>
  rate: Record<Key, number[]>
  usPerSession: Record<Key, number[]>
  /** ms of the store's close after each import (the session list's rows of the sessions it made). */
  closeMs: Record<Key, number[]>
  batchCounts: Record<Shape, number[]>
}

async function open(b: BackendKey, o: BackendOptions): Promise<ManyBackend> {
  if (b === 'fs') return fsBackend(o)
  if (b === 'postgres') {
    log('starting a throwaway PostgreSQL cluster (fsync on)')
    return postgresBackend(o)
  }
  return chromiumBackend(o)
}

/** One round of one store: each shape's pass, then its import. */
async function round(m: Measured, r: number): Promise<string> {
  const line: string[] = []
  for (const shape of r % 2 === 0 ? SHAPES : [...SHAPES].reverse()) {
    const want = m.sizes[shape]
    const p = await m.backend.pass(shape, want)
    const { ms: importMs, closeMs } = await m.backend.importLast(want)
    m.closeMs[`close-${shape}`].push(closeMs)
    m.rate[`pass-${shape}`].push((p.events / p.ms) * 1000)
    m.rate[`import-${shape}`].push((p.events / importMs) * 1000)
    m.usPerSession[`pass-${shape}`].push((p.ms / want.sessions) * 1000)
    m.usPerSession[`import-${shape}`].push((importMs / want.sessions) * 1000)
    m.batchCounts[shape].push(p.batches)
    line.push(
      `${shape} (${label(want)}): pass ${fmt(p.ms, 0)} ms in ${p.batches} batches (${fmt((p.events / p.ms) * 1000, 0)} events/s), ` +
        `import ${fmt(importMs, 0)} ms (${fmt((p.events / importMs) * 1000, 0)} events/s), its store closed in ${fmt(closeMs, 0)} ms`,
    )
  }
  return `${m.backend.key} ${line.join('; ')}`
}

/** The rows, figures and results of one store. */
function summary(m: Measured) {
  const key = m.backend.key
  const rateOf = (k: Key): Summary => summarize(m.rate[k])
  const perSessionOf = (k: Key): Summary => summarize(m.usPerSession[k])
  const small = label(m.sizes.small)
  const big = label(m.sizes.big)
  // The fs rows keep their ids and wording from before the other stores were measured.
  const prefix = key === 'fs' ? '' : `${NAME[key]}: `
  const id = (op: string) => (key === 'fs' ? op : `${op}-${key}`)
  const headline: HeadlineRatio[] = [
    headlineRatio(
      id('pass'),
      `${prefix}store.changesSince from null until done: ${small} (sessions × events) vs ${big}`,
      LAYER[key],
      `events/s at ${small} ÷ events/s at ${big}`,
      rateOf('pass-small'),
      rateOf('pass-big'),
      { atLeast: TARGETS.pass },
    ),
    headlineRatio(
      id('import'),
      `${prefix}store.applyChanges of that pass's batches into a new empty store: ${small} vs ${big}`,
      LAYER[key],
      `events/s at ${small} ÷ events/s at ${big}`,
      rateOf('import-small'),
      rateOf('import-big'),
      { atLeast: TARGETS.import },
    ),
  ]
  const figures: Figure[] = [
    [`${prefix}pass, ${small}`, rateOf('pass-small'), 'events/s', 0],
    [`${prefix}pass, ${big}`, rateOf('pass-big'), 'events/s', 0],
    [`${prefix}import, ${small}`, rateOf('import-small'), 'events/s', 0],
    [`${prefix}import, ${big}`, rateOf('import-big'), 'events/s', 0],
    [`${prefix}pass, ${small}: per session`, perSessionOf('pass-small'), 'µs', 0],
    [`${prefix}import, ${small}: per session`, perSessionOf('import-small'), 'µs', 0],
    [`${prefix}pass, ${big}: per session`, perSessionOf('pass-big'), 'µs', 0],
    [`${prefix}import, ${big}: per session`, perSessionOf('import-big'), 'µs', 0],
    [`${prefix}close after the import (session-list rows), ${small}`, summarize(m.closeMs['close-small']), 'ms', 0],
    [`${prefix}close after the import (session-list rows), ${big}`, summarize(m.closeMs['close-big']), 'ms', 0],
  ]
  const results = {
    name: NAME[key],
    layer: LAYER[key],
    version: m.backend.version,
    sizes: m.sizes,
    buildSeconds: m.buildSeconds,
    batches: { small: summarize(m.batchCounts.small), big: summarize(m.batchCounts.big) },
    rates: {
      unit: 'events/s',
      pass: { small: rateOf('pass-small'), big: rateOf('pass-big') },
      import: { small: rateOf('import-small'), big: rateOf('import-big') },
    },
    perSession: {
      unit: 'µs a session',
      pass: { small: perSessionOf('pass-small'), big: perSessionOf('pass-big') },
      import: { small: perSessionOf('import-small'), big: perSessionOf('import-big') },
    },
    closeAfterImport: { unit: 'ms', small: summarize(m.closeMs['close-small']), big: summarize(m.closeMs['close-big']) },
  }
  return { headline, figures, results }
}

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  for (const b of BACKENDS) if (!BACKEND_KEYS.includes(b)) throw new Error(`bad BENCH_MANY_BACKENDS entry ${b} (${BACKEND_KEYS.join(', ')})`)
  const { root, cleanup } = await benchRoot('sessionfold-bench-many-')
  const measured: Measured[] = []
  try {
    log(`temp dir ${root}; stores ${BACKENDS.join(',')}`)
    const source = sourceState()
    const o: BackendOptions = { root, input: messageInput(CONFIG.eventBytes), buildConcurrency: CONFIG.buildConcurrency, stallMs: CONFIG.stallMs, log }
    for (const b of BACKENDS)
      measured.push({
        backend: await open(b, o),
        sizes: sizesOf(b),
        buildSeconds: { small: 0, big: 0 },
        rate: series(),
        usPerSession: series(),
        closeMs: series(),
        batchCounts: { small: [], big: [] },
      })

    // The sources, untimed: the stores built side by side, each its shapes in turn.
    await Promise.all(
      measured.map(async (m) => {
        for (const shape of SHAPES) {
          m.buildSeconds[shape] = await m.backend.build(shape, m.sizes[shape])
          log(`built ${m.backend.key} ${shape}: ${label(m.sizes[shape])} in ${fmt(m.buildSeconds[shape], 1)} s`)
        }
      }),
    )

    for (let r = 0; r < CONFIG.rounds; r++) for (const m of measured) log(`round ${r + 1}/${CONFIG.rounds}: ${await round(m, r)}`)

    const parts = measured.map(summary)
    const headline = parts.flatMap((p) => p.headline)
    const versions = measured.map((m) => m.backend.version).filter((v) => v !== '')
    finishBench(
      'many',
      `sessionfold many-sessions benchmark (issue 34): changesSince and applyChanges over many small sessions against few big ones, on ${BACKENDS.map((b) => NAME[b]).join(', ')}${versions.length > 0 ? ` (${versions.join(', ')})` : ''}`,
      parts.flatMap((p) => p.figures),
      headline,
      {
        source,
        config: CONFIG,
        targets: TARGETS,
        backends: BACKENDS,
        headline,
        byBackend: Object.fromEntries(measured.map((m, i) => [m.backend.key, parts[i]!.results])),
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
    if (BACKENDS.includes('fs') && CONFIG.smallSessions !== 20_000)
      log(`the small shape here is ${fmt(CONFIG.smallSessions, 0)} sessions (the issue's is 20,000: BENCH_MANY_SMALL=20000, ~5 min more to build on fs)`)
  } finally {
    for (const m of measured) await m.backend.close().catch((err) => log(`closing ${m.backend.key}: ${err}`))
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
