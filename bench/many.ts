// Many sessions as cheap as few (issue 34), through the public API (npm run bench:many):
// openStore({ storage: 'fs', dir }) with its Node defaults (the engine in a worker_threads worker,
// durability strict), two source stores of the same kind of events (~250 B of JSON each):
//   small: many sessions of 2 events (BENCH_MANY_SMALL sessions; the shape is 20,000);
//   big:   40 sessions of 1,000 events (BENCH_MANY_BIG_SESSIONS × BENCH_MANY_BIG_EVENTS).
// Each round, for each shape (the two back to back, their order alternating from round to round):
//   pass:   a store opened afresh on the source folder (open untimed), then store.changesSince
//           from null until `done`, every batch kept: events/s over the whole pass;
//   import: store.applyChanges of every batch of that pass, in order, into a new empty store in a
//           temp folder (open and close untimed; the folder removed after): events/s. That is
//           what `sessionfold import` and a new device's first sync do.
// Targets (issue 34): the small shape's events/s ≥ 0.5 × the big shape's, for the pass and for
// the import, judged on the per-round ratios' median. Per-session cost (µs a session) is what the
// issue is about, and is printed for both shapes: at a fixed count of events, the small shape has
// 500 times as many sessions, so a cost per session shows up there.
// The source stores are built once, untimed (createSession, one append of its events, close;
// `buildConcurrency` at a time, durability 'relaxed' for the build: the stored form is the same).
// Settings: BENCH_MANY_SMALL, BENCH_MANY_BIG_SESSIONS, BENCH_MANY_BIG_EVENTS, BENCH_MANY_ROUNDS.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { type ChangeBatch, type ChangeCursor, type Changes, openStore, type EventInput, type Store } from '../src/index-node'
import { messageInput, sourceState } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  type Figure,
  type HeadlineRatio,
  settlesWithin,
  summarize,
  type Summary,
} from './stats'

const CONFIG = {
  /** Sessions of the small shape (the shape is 20,000; building those takes ~5 minutes here). */
  smallSessions: env('BENCH_MANY_SMALL', 2_000),
  smallEvents: 2,
  bigSessions: env('BENCH_MANY_BIG_SESSIONS', 40),
  bigEvents: env('BENCH_MANY_BIG_EVENTS', 1_000),
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

const TARGETS = {
  /** changesSince pass: small events/s ÷ big events/s, at least. */
  pass: 0.5,
  /** applyChanges import: small events/s ÷ big events/s, at least. */
  import: 0.5,
}

type Shape = 'small' | 'big'
const SHAPES: readonly Shape[] = ['small', 'big']
const LAYER = "openStore({ storage: 'fs', dir }) with its defaults (worker, strict)"

const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)
const within = <T>(promise: Promise<T>, what: string): Promise<T> => settlesWithin(promise, what, CONFIG.stallMs)

const shapeOf = (shape: Shape) =>
  shape === 'small' ? { sessions: CONFIG.smallSessions, events: CONFIG.smallEvents } : { sessions: CONFIG.bigSessions, events: CONFIG.bigEvents }
const label = (shape: Shape) => {
  const s = shapeOf(shape)
  return `${fmt(s.sessions, 0)} × ${fmt(s.events, 0)}`
}

/** Builds a source store: `sessions` sessions, each created, given its events in one append, closed. */
async function build(dir: string, sessions: number, events: number, input: EventInput): Promise<number> {
  const t0 = performance.now()
  const store = await openStore({ storage: 'fs', dir, durability: 'relaxed' })
  try {
    const batch = Array.from({ length: events }, () => input)
    let next = 0
    let lastLog = t0
    await Promise.all(
      Array.from({ length: Math.min(CONFIG.buildConcurrency, sessions) }, async () => {
        for (let i = next++; i < sessions; i = next++) {
          const s = await store.createSession()
          const r = await s.append(batch)
          if (r.lastSeq !== events - 1) throw new Error(`build: last seq ${r.lastSeq}, expected ${events - 1}`)
          await s.close()
          if (performance.now() - lastLog > 15_000) {
            lastLog = performance.now()
            log(`building ${dir}: ${next} of ${sessions} sessions`)
          }
        }
      }),
    )
  } finally {
    await store.close()
  }
  return (performance.now() - t0) / 1000
}

interface Pass {
  ms: number
  batches: ChangeBatch[]
  events: number
  /** Entries (a session's run of events in one batch). */
  entries: number
  sessions: number
}

/** The full changesSince pass from null over a store opened afresh on `dir`. */
async function pass(dir: string, want: { sessions: number; events: number }): Promise<Pass> {
  const store = await openStore({ storage: 'fs', dir })
  try {
    const batches: ChangeBatch[] = []
    const ids = new Set<string>()
    let cursor: ChangeCursor | null = null
    let events = 0
    let entries = 0
    const t0 = performance.now()
    for (;;) {
      const c: Changes = await within(store.changesSince(cursor), 'a changesSince call')
      batches.push(c.batch)
      cursor = c.cursor
      if (c.done) break
    }
    const ms = performance.now() - t0
    for (const b of batches)
      for (const e of b.sessions) {
        entries++
        events += e.events.length
        ids.add(e.header.id)
      }
    if (events !== want.sessions * want.events || ids.size !== want.sessions)
      throw new Error(`pass: ${events} events of ${ids.size} sessions, expected ${want.sessions * want.events} of ${want.sessions}`)
    return { ms, batches, events, entries, sessions: ids.size }
  } finally {
    await store.close()
  }
}

/** applyChanges of `batches`, in order, into a new empty store at `dir` (removed after); ms. */
async function importInto(dir: string, batches: readonly ChangeBatch[], want: { sessions: number; events: number }): Promise<number> {
  const store: Store = await openStore({ storage: 'fs', dir })
  let ms: number
  try {
    let sessions = 0
    let events = 0
    const t0 = performance.now()
    for (const b of batches) {
      const r = await within(store.applyChanges(b), 'an applyChanges call')
      if (r.conflicts.length > 0 || r.skipped.length > 0) throw new Error(`import: ${r.conflicts.length} conflicts, ${r.skipped.length} skipped`)
      sessions += r.copiedSessions
      events += r.copiedEvents
    }
    ms = performance.now() - t0
    if (sessions !== want.sessions || events !== want.sessions * want.events)
      throw new Error(`import: copied ${events} events of ${sessions} sessions, expected ${want.sessions * want.events} of ${want.sessions}`)
  } finally {
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return ms
}

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  const { root, cleanup } = await benchRoot('sessionfold-bench-many-')
  try {
    log(`temp dir ${root}`)
    const source = sourceState()
    const input = messageInput(CONFIG.eventBytes)

    const buildSeconds: Record<string, number> = {}
    for (const shape of SHAPES) {
      const s = shapeOf(shape)
      buildSeconds[shape] = await build(join(root, shape), s.sessions, s.events, input)
      log(`built ${shape}: ${label(shape)} in ${fmt(buildSeconds[shape]!, 1)} s`)
    }

    const rate: Record<`${'pass' | 'import'}-${Shape}`, number[]> = { 'pass-small': [], 'pass-big': [], 'import-small': [], 'import-big': [] }
    const usPerSession: Record<`${'pass' | 'import'}-${Shape}`, number[]> = { 'pass-small': [], 'pass-big': [], 'import-small': [], 'import-big': [] }
    const batchCounts: Record<Shape, number[]> = { small: [], big: [] }
    let imports = 0
    for (let r = 0; r < CONFIG.rounds; r++) {
      const order = r % 2 === 0 ? SHAPES : [...SHAPES].reverse()
      const line: string[] = []
      for (const shape of order) {
        const want = shapeOf(shape)
        const p = await pass(join(root, shape), want)
        const importMs = await importInto(join(root, `import-${imports++}`), p.batches, want)
        rate[`pass-${shape}`].push((p.events / p.ms) * 1000)
        rate[`import-${shape}`].push((p.events / importMs) * 1000)
        usPerSession[`pass-${shape}`].push((p.ms / want.sessions) * 1000)
        usPerSession[`import-${shape}`].push((importMs / want.sessions) * 1000)
        batchCounts[shape].push(p.batches.length)
        line.push(
          `${shape} (${label(shape)}): pass ${fmt(p.ms, 0)} ms in ${p.batches.length} batches (${fmt((p.events / p.ms) * 1000, 0)} events/s), ` +
            `import ${fmt(importMs, 0)} ms (${fmt((p.events / importMs) * 1000, 0)} events/s)`,
        )
      }
      log(`round ${r + 1}/${CONFIG.rounds}: ${line.join('; ')}`)
    }

    const rateOf = (k: keyof typeof rate): Summary => summarize(rate[k])
    const perSessionOf = (k: keyof typeof usPerSession): Summary => summarize(usPerSession[k])
    const small = label('small')
    const big = label('big')
    const headline: HeadlineRatio[] = [
      headlineRatio(
        'pass',
        `store.changesSince from null until done: ${small} (sessions × events) vs ${big}`,
        LAYER,
        `events/s at ${small} ÷ events/s at ${big}`,
        rateOf('pass-small'),
        rateOf('pass-big'),
        { atLeast: TARGETS.pass },
      ),
      headlineRatio(
        'import',
        `store.applyChanges of that pass's batches into a new empty store: ${small} vs ${big}`,
        LAYER,
        `events/s at ${small} ÷ events/s at ${big}`,
        rateOf('import-small'),
        rateOf('import-big'),
        { atLeast: TARGETS.import },
      ),
    ]
    const figures: Figure[] = [
      [`pass, ${small}`, rateOf('pass-small'), 'events/s', 0],
      [`pass, ${big}`, rateOf('pass-big'), 'events/s', 0],
      [`import, ${small}`, rateOf('import-small'), 'events/s', 0],
      [`import, ${big}`, rateOf('import-big'), 'events/s', 0],
      [`pass, ${small}: per session`, perSessionOf('pass-small'), 'µs', 0],
      [`import, ${small}: per session`, perSessionOf('import-small'), 'µs', 0],
      [`pass, ${big}: per session`, perSessionOf('pass-big'), 'µs', 0],
      [`import, ${big}: per session`, perSessionOf('import-big'), 'µs', 0],
    ]
    finishBench(
      'many',
      `sessionfold many-sessions benchmark (issue 34): changesSince and applyChanges over ${small} against ${big} (sessions × events), through ${LAYER}`,
      figures,
      headline,
      {
        source,
        config: CONFIG,
        targets: TARGETS,
        layer: LAYER,
        headline,
        buildSeconds,
        batches: { small: summarize(batchCounts.small), big: summarize(batchCounts.big) },
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
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
    if (CONFIG.smallSessions !== 20_000)
      log(`the small shape here is ${fmt(CONFIG.smallSessions, 0)} sessions (the issue's is 20,000: BENCH_MANY_SMALL=20000, ~5 min more to build)`)
  } finally {
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
