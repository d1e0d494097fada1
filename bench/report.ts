// Writes BENCHMARKS.md and its charts (bench/charts/*.svg) from bench/results.json, which
// bench/all.ts (npm run bench) produces. Every figure in BENCHMARKS.md comes from results.json:
// nothing is edited by hand. `npm run bench:report` regenerates the page from the committed
// results without running anything.
import * as fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { fmt, type Summary } from './stats'
import { renderChart, type Chart, type ChartSeries } from './svg'

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url))

// biome-ignore lint/suspicious/noExplicitAny: results.json is read back as the benches wrote it
type Any = any

export interface SuiteResults {
  suite: 'sessionfold'
  date: string
  durationSeconds: number
  machine: Record<string, string | number>
  /** The settings each run got (environment variables), by run name. */
  settings: Record<string, Record<string, string>>
  seconds: Record<string, number>
  runs: {
    /** bench/api.ts, the headline figures through openStore(); absent from results made before it existed. */
    api?: Any
    /** bench/postgres.ts, openStore({ storage: 'postgres' }) on a throwaway cluster; absent from results made before it existed. */
    postgres?: Any
    sync?: Any
    /** bench/sync-browser.ts, HTTP sync between two Chromium devices; absent from results made before it existed. */
    'sync-browser'?: Any
    /** bench/time-travel.ts, store.observe(id, { at }) and the history rows; absent from results made before it existed. */
    'time-travel'?: Any
    /** bench/inspector-scrub.ts, the inspector's timeline in Chromium; absent from results made before it existed. */
    inspector?: Any
    /** bench/codec.ts, compression and encryption through openStore(); absent from results made before it existed. */
    codec?: Any
    /** bench/codec-browser.ts, the codec in Chromium on the page's openStore(); absent from results made before it existed. */
    'codec-browser'?: Any
    storage: Any
    projections: Any
    children: Record<string, Any>
    client: Any
    browser: Any
    scaling: Any
  }
}

/**
 * What a figure measures, named on every row of BENCHMARKS.md (issue 14): the public API users
 * call, or a layer below it (a diagnostic), or what it is compared with.
 */
export const LAYER = {
  apiWorker: 'public API: openStore() in a worker',
  apiThread: 'public API: openStore({ worker: false })',
  apiChromium: 'public API: openStore() in a worker (Chromium)',
  apiChromiumPage: "public API: the page's openStore() (Chromium: the engine in its Web Worker, IndexedDB, strict)",
  engine: 'diagnostic (engine level)',
  adapter: 'diagnostic (adapter level)',
  raw: 'raw baseline',
  sqlite: 'peer (better-sqlite3)',
  dexie: 'peer (Dexie)',
} as const

export interface Target {
  id: string
  what: string
  /** One of LAYER: what the sessionfold side of the ratio goes through. */
  layer: string
  ratio: string
  perRound: Summary
  target: string
  result: 'PASS' | 'MISS'
}

const range = (s: Summary | undefined, d?: number) =>
  s && s.n > 0 && Number.isFinite(s.median) ? `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})` : 'not run'
const n0 = (x: number) => fmt(x, 0)

function table(headers: string[], rows: string[][], align?: ('l' | 'r')[]): string {
  const a = headers.map((_, i) => align?.[i] ?? (i === 0 ? 'l' : 'r'))
  return [
    `| ${headers.join(' | ')} |`,
    `| ${a.map((x) => (x === 'l' ? ':--' : '--:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n')
}

const byName = (ratios: Any[], name: string): Any => {
  const r = ratios.find((x: Any) => x.name === name)
  if (!r) throw new Error(`no ratio named ${name}`)
  return r
}

/** The issue's targets, each a ratio measured within one run (per-round ratios: median, min, max). */
export function targetsOf(res: SuiteResults): Target[] {
  const { storage, scaling, browser } = res.runs
  const t = (id: string, what: string, layer: string, ratio: string, perRound: Summary, target: string, pass: boolean): Target =>
    ({ id, what, layer, ratio, perRound, target, result: pass ? 'PASS' : 'MISS' })
  const raw = byName(storage.ratios, '(a) batched / raw')
  const sqlite = byName(storage.ratios, '(a) batched / better-sqlite3 FULL batched')
  const sizes: number[] = scaling.config.coldSizes
  const flat = scaling.targets[0]
  const refold = scaling.targets[1]
  const appends = byName(browser.ratios, 'appends: sessionfold / raw idb (events/s)')
  const out = [
    t('fs-vs-raw', 'fs durable appends in batches of 100 vs the raw disk limit (writeSync + fsyncSync of the same bytes)', LAYER.adapter, 'fs adapter events/s ÷ raw events/s', raw.perRound, '≥ 0.7', raw.perRound.median >= 0.7),
    t('fs-vs-sqlite', 'fs durable appends in batches of 100 vs better-sqlite3 (WAL, synchronous=FULL), same durability', LAYER.adapter, 'fs adapter events/s ÷ sqlite events/s', sqlite.perRound, '≥ 1', sqlite.perRound.median >= 1),
    t('cold-flat', `cold open with a checkpoint: ${n0(sizes.at(-1)!)} events vs ${n0(sizes[0]!)} events`, LAYER.engine, `time at ${n0(sizes.at(-1)!)} ÷ time at ${n0(sizes[0]!)}`, flat.perRound, '≤ 2', flat.perRound.median <= 2),
    t('cold-vs-refold', 'cold open with a checkpoint vs a full refold, 100,000 events', LAYER.engine, 'refold time ÷ checkpoint time', refold.perRound, '≥ 50', refold.perRound.median >= 50),
    t('idb-appends', 'Chromium: appends in batches of 100 vs raw idb (strict transactions)', LAYER.apiChromium, 'sessionfold events/s ÷ raw idb events/s', appends.perRound, '≥ 0.8', appends.perRound.median >= 0.8),
  ]
  // Issue 14's catalog figure; results from before bench:browser measured it have none.
  const cat = browser.catalog
  if (cat) {
    const h = cat.headline
    out.push(t('idb-catalog', `Chromium: a catalog fact (recordExternal) until the writer's mirror holds it, catalog of ${n0(cat.large.entries)} vs ${n0(cat.small.entries)} entries`,
      LAYER.apiChromiumPage, h.ratio, h.perRound, h.target, h.result === 'PASS'))
  }
  const big = browser.latency.find((l: Any) => !l.reference)
  if (big) for (const [dexie, label] of [['Dexie default', "Dexie's default cache"], ['Dexie no cache', "Dexie with cache 'disabled'"]] as const) {
    for (const [sf, who] of [['sessionfold writer', 'writing handle'], ['sessionfold observer', 'observer handle']] as const) {
      const r = byName(browser.ratios, `${big.name}: ${dexie} / ${sf}`)
      out.push(t(`liveQuery-${dexie}-${sf}`.replace(/ /g, '-'), `Chromium: subscriber update after an append (${who}) vs Dexie liveQuery (${label}), ${n0(big.prefill)} events`,
        LAYER.apiChromium, 'Dexie time ÷ sessionfold time', r.perRound, '≥ 10', r.perRound.median >= 10))
    }
  }
  return out
}

// ---- charts ---------------------------------------------------------------------------------

const pt = (x: number, s: Summary, scale = 1) => ({ x, y: s.median * scale, min: s.min * scale, max: s.max * scale })

export function chartsOf(res: SuiteResults): { file: string; chart: Chart }[] {
  const { scaling, children, browser } = res.runs
  const cold = scaling.cold.bySize as Any[]
  const charts: { file: string; chart: Chart }[] = [
    {
      file: 'cold-open.svg',
      chart: {
        title: 'Cold open: time to the first projection values (Node, fs; engine level)',
        xLabel: 'events in the session', yLabel: 'ms',
        series: [
          { label: 'sessionfold, with checkpoint', points: cold.map((c) => pt(c.size, c.checkpoint)) },
          { label: 'sessionfold, full refold (no checkpoint)', points: cold.map((c) => pt(c.size, c.refold)) },
          { label: 'better-sqlite3 + app fold', points: cold.map((c) => pt(c.size, c.sqlite)) },
        ],
      },
    },
  ]
  const sizes = Object.keys(children).map(Number).sort((a, b) => a - b)
  const ch = (key: string) => sizes.map((n) => pt(n, children[String(n)].listings[key]))
  charts.push({
    file: 'list-children.svg',
    chart: {
      title: 'listChildren (Node, fs; engine level)', xLabel: 'children', yLabel: 'ms',
      series: [
        { label: 'live children', points: ch('live') },
        { label: 'cold, checkpointed, fresh engine', points: ch('coldFresh') },
        { label: 'cold, checkpointed, warm engine', points: ch('coldWarm') },
        { label: 'cold, no checkpoints, fresh engine', points: ch('refoldFresh') },
      ],
    },
  })
  const heap = scaling.heap.bySize as Any[]
  charts.push({
    file: 'memory.svg',
    chart: {
      title: 'Heap held by a live session (Node, engine + fs adapter)', xLabel: 'events in the session', yLabel: 'KiB',
      series: [{ label: 'heapUsed added by the session', points: heap.map((h) => pt(h.events, h.bytes, 1 / 1024)) }],
    },
  })
  const lat = (browser.latency as Any[]).filter((l) => l.catalogEvery !== 1).sort((a, b) => a.prefill - b.prefill)
  const ls = (key: string): ChartSeries['points'] => lat.map((l) => pt(l.prefill, l.samples[key]))
  charts.push({
    file: 'subscriber-latency.svg',
    chart: {
      title: 'Append to subscriber update (Chromium, IndexedDB, via openStore())', xLabel: 'events in the session', yLabel: 'ms',
      series: [
        { label: 'sessionfold, writing handle', points: ls('sfWriter') },
        { label: 'sessionfold, observer handle', points: ls('sfObserver') },
        { label: 'Dexie liveQuery, default cache', points: ls('dexie') },
        { label: "Dexie liveQuery, cache 'disabled'", points: ls('dexieNoCache') },
      ],
    },
  })
  return charts
}

// ---- the page -------------------------------------------------------------------------------

/**
 * The headline figures (bench/api.ts): what an app gets through openStore(), first on the page.
 * Results made before bench/api.ts existed have none: then a line that says how to measure them.
 */
function apiSection(api: Any, explanation: string): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## Through the public API (Node)')
  p()
  if (!api) {
    p('Not in this bench/results.json (it predates bench/api.ts): `npm run bench -- --only=api` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = api.config
  p('The figures an app gets: `openStore()` with its Node defaults (the engine in a worker_threads worker, storage fs, durability strict), ' +
    'and `openStore({ worker: false })` (the engine in the calling thread), measured by `bench/api.ts` (`npm run bench:api`). ' +
    'Every later section measures a layer below the public API (the engine or the fs adapter, called directly) or a peer, and says so: those are diagnostics.')
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (api.headline as Any[]).map((h) => [h.figure, h.layer, h.ratio, range(h.perRound, 2), h.target || '(information)', h.result ? `**${h.result}**` : '']),
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  const rows = [
    ...(api.batched.variants as Any[]).map((v) => [v.label, v.layer, `${range(v.summary, 0)} events/s`]),
    ...(api.singles.variants as Any[]).map((v) => [v.label, v.layer, `${range(v.summary, 0)} events/s`]),
    ...(api.catalog.variants as Any[]).map((v) => [v.label, v.layer, `${range(v.summary, 3)} ms`]),
  ]
  p(table(['measurement', 'layer', 'median (min–max)'], rows, ['l', 'l', 'r']))
  p()
  p(`Batched: ${c.batches} batches of ${c.batch} events of ~${c.eventBytes} bytes (${fmt(api.batched.recordBytes, 0)} bytes per record), each awaited, ${c.rounds} rounds; ` +
    'the raw side writes the same records, encoded before its clock starts, into one new file. ' +
    `Single appends: runs of ${c.singles}, ${c.singlesRounds} rounds of ${c.singlesRepeats} runs of each. ` +
    `Catalog: ${c.catalogSamples} samples per run, a run's figure is their median, ${c.catalogRounds} rounds; the ${n0(c.catalogLarge)}-entry catalog was filled once ` +
    `through recordExternal (${c.fillChunk} calls at once, untimed: ${fmt(api.catalog.fillSeconds, 1)} s), each ${n0(c.catalogSmall)}-entry run has a new session. ` +
    'Each session is created before the clock starts; every figure comes after an unrecorded warm-up round, and the variants run in an order that rotates from round to round.')
  p()
  const breakdown = api.batched.breakdown
  if (breakdown) {
    p('### Where a batch\'s time goes')
    p()
    p('Each batch is awaited before the next, so the client, the hop, the engine and the storage layer run one after the other. ' +
      'From the medians above, in ms per batch of 100 events: the diagnostic rows run the same calls on a memory store (the client and the engine without a disk) ' +
      'and the fs adapter alone (the storage layer). Their sum bounds what the public path can reach against raw write + fsync: the floor below.')
    p()
    p(table(['part', 'ms per batch'], (breakdown.rows as [string, number][]).map(([k, v]) => [k, fmt(v, 3)]), ['l', 'r']))
    p()
    p(`Floor of the batched ratio (raw ÷ (storage layer + client and engine without a disk)): ${fmt(breakdown.floorThread, 2)} in this thread, ` +
      `${fmt(breakdown.floorWorker, 2)} through the worker.` +
      (breakdown.ceiling === undefined ? '' : ` The ceiling of any store here, raw ÷ a JSON log's own work (each event validated, stringified, numbered and parsed back, ` +
        `records with CRC-32s, write + fdatasync, in a loop with nothing else): ${fmt(breakdown.ceiling, 2)} in one thread` +
        (breakdown.ceilingWorker === undefined ? '.' : `, ${fmt(breakdown.ceilingWorker, 2)} with the parse and the disk in a worker_threads worker (the batch's bodies posted to it, its count posted back).`)))
    p()
  }
  if (explanation) {
    p(explanation)
    p()
  }
  return L
}

/** HTTP sync through the public API (bench/http-sync.ts): store.connect and createSyncHandler on 127.0.0.1. */
function syncSection(r: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## HTTP sync through the public API (Node)')
  p()
  if (!r) {
    p('Not in this bench/results.json (it predates bench/http-sync.ts): `npm run bench -- --only=sync` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = r.config
  p(`Devices are \`openStore({ storage: 'fs' })\` stores with their defaults (the engine and the replication in a worker_threads worker) connected with \`store.connect(url, { live: true })\`; ` +
    `the server is \`createSyncHandler\` served by \`toNodeListener\` on 127.0.0.1 over an fs store (and a PostgreSQL store for the push figure), measured by \`bench/http-sync.ts\` ` +
    `(\`npm run bench:sync\`) on ${r.date.slice(0, 10)}: node ${r.environment.node}, ${r.environment.cpus} cpus.`)
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (r.headline as Any[]).map((h) => [h.figure, h.layer, h.ratio, range(h.perRound, 2), h.target || '(information)', h.result ? `**${h.result}**` : '']),
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  const rows: string[][] = []
  if (r.latency) {
    rows.push([`append on device A → a subscriber on device B through the server (${c.appends} appends ${c.gapMs} ms apart)`, `p50 ${range(r.latency.syncP50, 1)} ms, p99 ${range(r.latency.syncP99, 1)} ms`])
    rows.push(["the same append → an observer in a second store on A's folder (the Node stand-in for another tab)", `p50 ${range(r.latency.tabP50, 1)} ms, p99 ${range(r.latency.tabP99, 1)} ms`])
  }
  for (const v of (r.initialSync?.variants ?? []) as Any[]) rows.push([`initial sync: ${v.label}`, `${range(v.summary, 0)} events/s`])
  for (const v of (r.push?.variants ?? []) as Any[]) rows.push([`push: ${v.label}`, `${range(v.summary, 0)} events/s`])
  p(table(['measurement', 'median (min–max)'], rows, ['l', 'r']))
  p()
  return L
}

/** HTTP sync in Chromium (bench/sync-browser.ts): two devices on the demo sync page through the demo sync server. */
function syncBrowserSection(r: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## HTTP sync in Chromium: an append on one device to a subscriber on another')
  p()
  if (!r) {
    p('Not in this bench/results.json (it predates bench/sync-browser.ts): `npm run bench -- --only=sync-browser` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = r.config
  const l = r.latency
  p('Issue 17\'s first target in a real browser. Each device is the sync demo page (examples/demo-page/sync.ts, served by Vite from this source tree) in its own persistent Chromium context: ' +
    'the page\'s `openStore()` on IndexedDB with the engine in its Web Worker, connected with `store.connect(url, { live: true })` to the demo\'s sync server ' +
    `(\`createSyncHandler\` on node:http, 127.0.0.1, over an fs store, pollMs ${c.serverPollMs}). Device A appends ${c.appends} single events of ~${c.eventBytes} B, ${c.gapMs} ms apart; ` +
    'device B observes the session (`store.observe(id).projections.subscribe`); the baseline is an observer in a second tab of A\'s browser (same IndexedDB, its own engine worker). ' +
    `Per append, the ms from A's call until the subscriber has it (each page's clock offset taken out); p50 and p99 per round, ${c.rounds} rounds after a warm-up. ` +
    `Measured by \`bench/sync-browser.ts\` (\`npm run bench:sync-browser\`) on ${r.date.slice(0, 10)}: node ${r.environment.node}, Chromium ${r.environment.chromium}, ${r.environment.cpus} cpus` +
    (r.source?.commit ? `, source at commit ${r.source.commit}${r.source.dirty?.length ? ` with uncommitted changes to ${r.source.dirty.length} files of src/, worker/ and adapters/` : ''}.` : '.'))
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (r.headline as Any[]).map((h) => [h.figure, h.layer, h.ratio, range(h.perRound, 2), h.target || '(information)', h.result ? `**${h.result}**` : '']),
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  p(table(['measurement', 'p50 ms: median (min–max)', 'p99 ms: median (min–max)'], [
    ['append on device A → a subscriber on device B through the server', range(l.syncP50, 1), range(l.syncP99, 1)],
    ["the same append → an observer in A's second tab", range(l.tabP50, 1), range(l.tabP99, 1)],
    ["(diagnostic) A's append call → resolved (durable on A)", range(l.ackP50, 1), range(l.ackP99, 1)],
    ["(diagnostic) A's append call → an observer on the server's store", range(l.serverP50, 1), range(l.serverP99, 1)],
    ["(diagnostic) the server's observer → B's subscriber", range(l.serverToBP50, 1), range(l.serverToBP99, 1)],
  ], ['l', 'r', 'r']))
  p()
  p(`A's pushes during a round's appends: ${range(l.pushesPerRound, 0)}, one begun every ${range(l.pushGapMs, 1)} ms, each answered by the server in ${range(l.pushServerMs, 1)} ms (medians per round).`)
  p()
  return L
}

/** The inspector's timeline in Chromium (bench/inspector-scrub.ts): from a move to the page showing it. */
function inspectorSection(r: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## Time travel in Chromium: the inspector\'s timeline')
  p()
  if (!r) {
    p('Not in this bench/results.json (it predates bench/inspector-scrub.ts): `npm run bench -- --only=inspector` measures it.')
    p()
    return L
  }
  p(`The inspector page (\`examples/inspector\`, \`npm run inspector\`) over a ${n0(r.config.events)}-event sample session in ${r.layer}. ` +
    `Each sample is one move of the timeline to a random point, from the input event to the page showing that point's values, subagent tree and position ` +
    '(`store.observe(id, { at })` and its `listChildren`); the baseline is a move back to the end in the same run, which shows the live values without a read as of a point. ' +
    `${r.config.moves} moves after 5 warm-up moves; measured by \`bench/inspector-scrub.ts\` (\`npm run bench:inspector\`) on ${r.date.slice(0, 10)}, Chromium ${r.environment.chromium}.`)
  p()
  p(table(['from a timeline move to the page showing it', 'median', 'p99'], [
    ['a move to a random point (time travel)', `${fmt(r.travel.median, 1)} ms`, `${fmt(r.travel.p99, 1)} ms`],
    ['baseline: a move to the end (live values)', `${fmt(r.end.median, 1)} ms`, `${fmt(r.end.p99, 1)} ms`],
  ], ['l', 'r', 'r']))
  p()
  p(`Ratio of the medians, time travel ÷ baseline: ${fmt(r.ratio, 2)} (the issue names no target for it).`)
  p()
  return L
}

/** Time travel through the public API (bench/time-travel.ts): store.observe(id, { at }) and the history rows it reads. */
function timeTravelSection(r: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## Time travel through the public API')
  p()
  if (!r) {
    p('Not in this bench/results.json (it predates bench/time-travel.ts): `npm run bench -- --only=time-travel` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = r.config
  const d = r.disk
  const o = r.observe
  p(`\`store.observe(id, { at })\` (a read-only view frozen after the first \`at\` events, docs/CONTRACT.md §11) through \`openStore()\` with its Node defaults ` +
    '(the engine in a worker_threads worker, storage fs, durability strict). A read restores the nearest history row (a checkpoint row kept every thousand events or so, ' +
    '`history/<at>.json` beside the log) and folds the events after it. Timed from the call until the view\'s snapshot is there (the view is closed after, untimed); ' +
    `per round the median over ${c.points} random points (${c.refoldPoints} for the refold), ${c.rounds} rounds after a warm-up, the variants in an order that rotates. ` +
    'The refold baseline reads the same session in a copy of the store without its history rows and checkpoint rows, where a read folds from seq 0; its values were checked equal to those read with history rows. ' +
    `Measured by \`bench/time-travel.ts\` (\`npm run bench:time-travel\`) on ${r.date.slice(0, 10)}: node ${r.environment.node}, ${r.environment.cpus} cpus` +
    (r.source?.commit ? `, source at commit ${r.source.commit}${r.source.dirty?.length ? ` with uncommitted changes to ${r.source.dirty.length} files of src/, worker/ and adapters/` : ''}.` : '.'))
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (r.headline as Any[]).map((h) => [h.figure, `public API: ${h.layer}`, h.ratio, h.perRound.n > 1 ? range(h.perRound, 3) : `${fmt(h.perRound.median, 4)} (measured once)`, h.target, `**${h.result}**`]),
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  const mib = (b: number) => `${fmt(b / 2 ** 20, 1)} MiB`
  const children = r.write.large.children
  p(table(['measurement', 'median (min–max)'], [
    [`observe at random points of the ${n0(c.events)}-event session, history rows present`, `${range(o.history, 2)} ms`],
    [`observe at random points of the ${n0(c.small)}-event session`, `${range(o.small, 2)} ms`],
    [`observe at random points of the ${n0(c.events)}-event session without history or checkpoint rows (a refold from seq 0)`, `${range(o.refold, 0)} ms`],
    [`(information) observe at random points of the large-state session (${n0(c.largeEvents)} events, ${n0(children)} catalog entries)`, `${range(o.large, 1)} ms`],
    [`writing the ${n0(c.events)}-event session: session.append(batch) of ${n0(c.batch)} events of ~${c.eventBytes} B, each awaited`, `${fmt(r.write.big.seconds, 1)} s, ${n0(r.write.big.eventsPerSecond)} events/s`],
    [`writing the large-state session (a recordExternal every ${c.externalEvery} events)`, `${fmt(r.write.large.seconds, 1)} s, ${n0(r.write.large.eventsPerSecond)} events/s`],
    [`${n0(c.events)}-event session on disk: events.log / history rows`, `${mib(d.big.logBytes)} / ${n0(d.big.positions.length)} rows, ${fmt(d.big.historyBytes / 1024, 1)} KiB in all`],
    [`large-state session on disk: events.log / history rows / checkpoint.json`, `${mib(d.large.logBytes)} / ${n0(d.large.positions.length)} row${d.large.positions.length === 1 ? '' : 's'}, ${fmt(d.large.historyBytes / 1024, 1)} KiB in all / ${fmt(d.large.checkpointBytes / 1024, 1)} KiB`],
  ], ['l', 'r']))
  p()
  const g = d.big.gaps
  const slow = (r.reads.slowest as Any[]).map((s) => `at ${n0(s.at)}: ${fmt(s.ms, 1)} ms (${n0(s.fold)} events after a row)`).join('; ')
  p(`History rows of the ${n0(c.events)}-event session: ${n0(d.big.positions.length)}, from ${n0(d.big.positions[0] ?? 0)} to ${n0(d.big.positions.at(-1) ?? 0)}, ` +
    `${n0(g.median)} events apart (${n0(g.min)}–${n0(g.max)}). Every read of it: ${range(r.reads.all, 2)} ms, folding ${range(r.reads.foldDistance, 0)} events after the nearest row; the slowest: ${slow}. ` +
    largeRowsNote(c, d.large, g.max))
  p()
  return L
}

/** Where the large-state session's history rows are, and why there are few when its checkpoint row grows faster than 1/20 of its log. */
function largeRowsNote(c: Any, large: Any, bigGap: number): string {
  const last = large.positions.at(-1) ?? 0
  const rows = large.positions.length === 0 ? 'no history row' : `history rows at ${large.positions.map(n0).join(', ')}`
  const growth = large.checkpointBytes / c.largeEvents
  const budget = large.logBytes / c.largeEvents / 20
  const tail = c.largeEvents - last
  return `The large-state session has ${rows}: its last ${n0(tail)} events have none` +
    (tail > 10 * bigGap
      ? `, so a read there folds up to that many events (hence its time above). A history row is kept only when it takes at most 1/20 of the bytes written since the one before; ` +
        `this session's checkpoint row grows by about ${fmt(growth, 1)} B per event (${fmt(large.checkpointBytes / 2 ** 20, 2)} MiB at the end), against a budget of ${fmt(budget, 1)} B per event ` +
        `(1/20 of ${fmt(large.logBytes / c.largeEvents, 0)} B): its size ratio stays under 5 % by keeping ${growth >= budget ? 'no more rows' : 'rows further and further apart'}, and reading it as of a point costs more the further the point is from its last row.`
      : '.')
}

/** The record codec through the public API (bench/codec.ts): compression and encryption, their cost and what they save. */
function codecSection(r: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## Compression and encryption through the public API')
  p()
  if (!r) {
    p('Not in this bench/results.json (it predates bench/codec.ts): `npm run bench -- --only=codec` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = r.config
  const z = r.size
  const mib = (b: number) => `${fmt(b / 2 ** 20, 1)} MiB`
  const label = (key: string) => (r.variants as Any[]).find((v) => v.key === key)?.label ?? key
  p('The record codec below the engine (`openStore({ encryption: { key }, compression })`) through `openStore()` with its Node defaults ' +
    '(the engine in a worker_threads worker, storage fs, durability strict), each variant a store of its own: ' +
    `${(r.variants as Any[]).map((v) => `**${v.key}** (${v.label})`).join(', ')}. ` +
    `Size: ${n0(z.corpus.files)} text files from node_modules (${c.extensions.join(' ')}, ${n0(c.minFileBytes)} B to ${n0(c.maxFileBytes / 1024)} KB, ${mib(z.corpus.textBytes)} of text) ` +
    `appended as \`tool/output\` events, ${c.batch} per append; stored size is every file of the store's folder after close, against the UTF-8 bytes of each event's JSON as stored (measured once). ` +
    `Appends: ${c.batches} batches of ${c.batch} events of ~${c.eventBytes} B, each awaited, to a new session. Read: \`view.events()\` of a ${n0(c.readEvents)}-event session on \`store.observe(id)\`. ` +
    'Cold open: `store.observe(id)` of that session (closed normally, so its checkpoint row is there) in a freshly opened store; the control opens the plain store a second time in the same round. ' +
    `${c.appendRounds ?? c.rounds} rounds of appends, ${c.rounds} of reads and cold opens, each after a warm-up and running every variant twice in an order that rotates. ` +
    `Measured by \`bench/codec.ts\` (\`npm run bench:codec\`) on ${r.date.slice(0, 10)}: node ${r.environment.node}, ${r.environment.cpus} cpus` +
    (r.source?.commit ? `, source at commit ${r.source.commit}${r.source.dirty?.length ? ` with uncommitted changes to ${r.source.dirty.length} files of src/, worker/ and adapters/` : ''}.` : '.'))
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (r.headline as Any[]).map((h) => [h.figure, `public API: ${h.layer}`, h.ratio, h.perRound.n > 1 ? range(h.perRound, 3) : `${fmt(h.perRound.median, 3)} (measured once)`, h.target || '(information)', h.result ? `**${h.result}**` : '']),
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  const keys = (r.variants as Any[]).map((v) => v.key as string)
  p(table(['variant', 'stored ÷ JSON', 'appends, events/s', 'full read, events/s', 'cold observe, ms'], keys.map((k) => [
    label(k), `${fmt(z.variants[k].ratio * 100, 1)} % (${mib(z.variants[k].stored.total)} of ${mib(z.variants[k].jsonBytes)})`,
    range(r.append[k], 0), range(r.read[k], 0), r.coldOpen.observe[k] ? range(r.coldOpen.observe[k], 2) : '',
  ]), ['l', 'r', 'r', 'r', 'r']))
  p()
  p(`For diagnosis: the same events deflated (node:zlib) in the codec's ${n0(z.deflateFloor.frames)} frames and nothing else take ${fmt((z.deflateFloor.deflated / z.variants.plain.jsonBytes) * 100, 1)} % of their JSON, ` +
    `${fmt((z.deflateFloor.base64 / z.variants.plain.jsonBytes) * 100, 1)} % as base64; the rest of a store's bytes are the records that carry the frames, the index and the rows.`)
  p()
  return L
}

/** The codec in Chromium (bench/codec-browser.ts): the same targets on the page's openStore(). */
function codecBrowserSection(r: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('### The same in Chromium')
  p()
  if (!r) {
    p('Not in this bench/results.json (it predates bench/codec-browser.ts): `npm run bench -- --only=codec-browser` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = r.config
  const e = r.environment
  p(`${r.layer}, each variant a database (and a store, with its own worker) of its own: ${(r.variants as Any[]).map((v) => `**${v.key}** (${v.label})`).join(', ')}. ` +
    `Appends: ${c.batches} batches of ${c.batch} events of ~${c.eventBytes} B, each awaited, to a new session, ${c.appendRounds} rounds. ` +
    `Read: \`view.events()\` of a ${n0(c.readEvents)}-event session on \`store.observe(id)\`. Cold open: \`store.observe(id)\` of that session in a freshly opened store (a new worker), ` +
    `the control opening the plain database again in the same round; ${c.rounds} rounds. Measured by \`bench/codec-browser.ts\` (\`npm run bench:codec-browser\`) on ${r.date.slice(0, 10)}: ` +
    `Chromium ${e.chromium} headless, node ${e.node}, ${e.cpus} cpus` +
    (r.source?.commit ? `, source at commit ${r.source.commit}${r.source.dirty?.length ? ` with uncommitted changes to ${r.source.dirty.length} files` : ''}.` : '.'))
  p()
  p(table(['figure', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (r.headline as Any[]).map((h) => [h.figure, h.ratio, range(h.perRound, 3), h.target || '(information)', h.result ? `**${h.result}**` : '']),
    ['l', 'l', 'r', 'r', 'l']))
  p()
  return L
}

/**
 * The PostgreSQL store through the public API (bench/postgres.ts): its own run, on its own
 * throwaway cluster, dated on its own (it may be rerun alone with --only=postgres).
 */
function postgresSection(pg: Any): string[] {
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('## PostgreSQL through the public API (Node)')
  p()
  if (!pg) {
    p('Not in this bench/results.json (it predates bench/postgres.ts): `npm run bench -- --only=postgres` measures these figures and keeps the other parts\' results.')
    p()
    return L
  }
  const c = pg.config
  const e = pg.environment
  p(`\`openStore({ storage: 'postgres', url })\` with its defaults (the engine in a worker_threads worker, durability strict), measured by \`bench/postgres.ts\` ` +
    `(\`npm run bench:postgres\`) on ${pg.date.slice(0, 10)} (${pg.date}): PostgreSQL ${e.postgres} in a throwaway cluster on 127.0.0.1 of the same machine ` +
    `(${e.settings}), node ${e.node}, ${e.cpus} cpus (${e.cpuModel}). The baseline is the same driver (\`postgres\`) inserting the same rows ` +
    'into a plain events table of the same shape ((session_id, seq) primary key, body text), one transaction per batch.')
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    (pg.headline as Any[]).map((h) => [h.figure, h.layer, h.ratio, range(h.perRound, 2), h.target || '(information)', h.result ? `**${h.result}**` : '']),
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  const lat = pg.concurrent.latency
  const rows = [
    ...(pg.batched.variants as Any[]).map((v) => [v.label, v.layer, `${range(v.summary, 0)} events/s`]),
    [`${c.procs} processes × ${c.sessions} sessions appending at once (single events), aggregate`, "openStore({ storage: 'postgres' }) in a worker, one store per process", `${n0(pg.concurrent.eventsPerSecond)} events/s`],
    ...(pg.writersOnly ? [['(diagnostic) the same writers with no observers, aggregate', 'the same', `${n0(pg.writersOnly.eventsPerSecond)} events/s`]] : []),
    ['append acked in one process → a subscriber in another process has it', 'the same', `p50 ${fmt(lat.p50, 1)} ms, p90 ${fmt(lat.p90, 1)} ms, p99 ${fmt(lat.p99, 1)} ms (max ${fmt(lat.max, 1)}; ${n0(lat.n)} appends)`],
    ...[pg.paced, pg.busy].filter(Boolean).flatMap((r: Any) => [
      [`the same writers paced: each session one append every ${n0(r.paceMs)} ms (${n0(r.eventsPerSecond)} events/s in all; machine ${n0(r.cpu.machineBusyPercent)} % busy)`, 'the same',
        `ack → subscriber in another process: p50 ${fmt(r.latency.p50, 1)} ms, p90 ${fmt(r.latency.p90, 1)} ms, p99 ${fmt(r.latency.p99, 1)} ms (max ${fmt(r.latency.max, 1)}; ${n0(r.latency.n)} appends)`],
    ]),
    [`cold open of a ${n0(c.big)}-event session, checkpointed (observe → first snapshot, a new store)`, "openStore({ storage: 'postgres' }) in a worker", `${range(pg.coldOpen.big, 1)} ms`],
    [`cold open of a ${n0(c.small)}-event session, checkpointed`, 'the same', `${range(pg.coldOpen.small, 1)} ms`],
    ['events table on disk (heap, primary key, TOAST: pg_total_relation_size)', 'PostgreSQL', `${n0(pg.onDisk.bytesPerEvent)} B per event (body ${n0(pg.onDisk.bodyBytes)} B), ${fmt(pg.onDisk.bytesPerEvent * 1e5 / 2 ** 20, 1)} MiB per 100,000 events`],
  ]
  p(table(['measurement', 'layer', 'median (min–max)'], rows, ['l', 'l', 'r']))
  p()
  p(`Batched: ${c.batches} batches of ${c.batch} events of ~${c.eventBytes} bytes, each awaited, ${c.rounds} rounds (A B C … C B A, the order rotating); each session is created before the clock starts. ` +
    `Concurrent: ${c.procs} child processes, each with its own store, write ${c.sessions} sessions for ${c.seconds} s (each session's appends awaited one after another, the sessions at once) ` +
    `and observe the ${c.sessions} sessions of the next process; latency is wall clock from the writer's ack to the observer's snapshot listener, matched by session and seq. ` +
    `Cold open: ${c.openRounds} rounds, a new store each, after a first observe of a tiny session; both sessions closed by their writer, which writes the close checkpoint.`)
  p()
  const b = pg.batched.breakdown
  p('### Where a PostgreSQL batch\'s time goes')
  p()
  p(table(['part', 'ms per batch'], (b.rows as [string, number][]).map(([k, v]) => [k, fmt(v, 3)]), ['l', 'r']))
  p()
  p(`Floor of the batched ratio (driver ÷ (adapter + client and engine without a database)): ${fmt(b.floorThread, 2)} in this thread, ${fmt(b.floorWorker, 2)} through the worker. ` +
    'How the same tables scale past one node (partitioning, replicas, pooling): docs/SCALING.md.')
  p()
  const ms = (key: string) => (c.batch / (pg.batched.variants as Any[]).find((v) => v.key === key)?.summary.median) * 1000
  p(`The adapter alone takes ${fmt(ms('adapter') / ms('raw'), 2)} × the driver's time per batch. It sends one statement (append_group, the events' JSON as one text of lines) ` +
    'where the driver sends BEGIN, the INSERT and COMMIT and has each JSON string of its array quoted and escaped; it writes more than the insert: a row lock on the lease, ' +
    'the sessions row and its new length, a feed row, and the growth notice with the events in it. ' +
    'The client and the engine add the rest, with the worker hop (on this machine a thread woken from idle costs more than the memory-store diagnostics show, where both threads stay busy); ' +
    (Number.isFinite(ms('deferred')) ? `with checkpoints pushed past the run the store took ${fmt(ms('deferred'), 1)} ms per batch against ${fmt(ms('worker'), 1)} ms. ` : '') +
    (Number.isFinite(ms('memWorker')) ? `What the store takes beyond the adapter and the client and engine without a database, ${fmt(ms('worker') - ms('adapter') - ms('memWorker'), 2)} ms per batch, is the record codec ` +
      '(each frame deflated and base64-encoded into its row, with a pointer row per later event) and the checkpoint and history rows, which the diagnostics leave out. ' : '') +
    'On a shared machine these rows move from round to round: compare the per-round ratios above, not single figures.')
  p()
  p(`Cold open: the fastest opens took ${fmt(pg.coldOpen.big.min, 1)} ms (${n0(c.big)} events) and ${fmt(pg.coldOpen.small.min, 1)} ms (${n0(c.small)} events); ` +
    'with a checkpoint at the end of the log an open reads the checkpoint row and an empty tail at either length. The medians are those of a shared machine ' +
    '(each round\'s store is new: its worker and its connections are cold): read the per-round range of the ratio beside its median.')
  p()
  if (pg.writersOnly) {
    p(`Concurrent appends: the same ${c.procs} × ${c.sessions} writers made ${n0(pg.writersOnly.eventsPerSecond)} events/s with nobody observing, against ` +
      `${n0(pg.concurrent.eventsPerSecond)} events/s while every process also followed ${c.sessions} sessions of another. ` +
      (pg.writersOnly.eventsPerSecond > 1.5 * pg.concurrent.eventsPerSecond
        ? 'Following is not free: each notice wakes the observing process, which folds the events it carried (or reads them, when they were too large to carry) and pushes the new values to its subscribers; with 8 writers, 8 observers and the server on the same 2 cores, that work is taken from the writers.'
        : 'Following changed the writers\' rate little here: what bounds it is the writers themselves (their processes, the server and its commits on the same cores).'))
    p()
    if (pg.paced) {
      p(`Latency: at saturation (every session appending as fast as it can, the machine ${n0(pg.concurrent.cpu?.machineBusyPercent ?? 100)} % busy) the time from an ack to another process is mostly queueing. ` +
        `Paced, each of the ${n0(c.procs * c.sessions)} sessions appending once every ${n0(pg.paced.paceMs)} ms, the machine stays ${n0(pg.paced.cpu.machineBusyPercent)} % busy and the p99 is ${fmt(pg.paced.latency.p99, 1)} ms (target ≤ ${pg.paced.targetP99Ms} ms: **${pg.paced.result}**); ` +
        (pg.busy ? `every ${n0(pg.busy.paceMs)} ms, ${n0(pg.busy.cpu.machineBusyPercent)} % busy, ${fmt(pg.busy.latency.p99, 1)} ms. ` : '') +
        `A single appended event costs this machine about ${fmt(pg.paced.cpu.machineUsPerEvent / 1000, 1)} ms of CPU in all when appends come one at a time (${fmt(pg.concurrent.cpu?.machineUsPerEvent / 1000, 2)} ms at saturation, where group commit batches them): ` +
        'writer and observer processes and their worker threads woken for it, the server\'s backends, the notice to the one process that follows the session. ' +
        'A negative p50 is real: the observer hears the commit from the server before the writer\'s answer has crossed back from its worker thread.')
      p()
    }
  }
  return L
}

export function renderMarkdown(res: SuiteResults, targets: Target[], explanations: string, apiExplanation = ''): string {
  const { storage, projections, children, client, browser, scaling } = res.runs
  const m = res.machine
  const L: string[] = []
  const p = (s = '') => L.push(s)
  p('# Benchmarks')
  p()
  p(`<!-- Generated by bench/report.ts from bench/results.json (npm run bench). Do not edit by hand: rerun instead. -->`)
  p()
  p(`Measured ${res.date.slice(0, 10)} (${res.date}), the whole suite in ${fmt(res.durationSeconds / 60, 1)} minutes.`)
  p()
  L.push(...apiSection(res.runs.api, apiExplanation))
  L.push(...postgresSection(res.runs.postgres))
  L.push(...syncSection(res.runs.sync))
  L.push(...syncBrowserSection(res.runs['sync-browser']))
  L.push(...timeTravelSection(res.runs['time-travel']))
  L.push(...inspectorSection(res.runs.inspector))
  L.push(...codecSection(res.runs.codec))
  L.push(...codecBrowserSection(res.runs['codec-browser']))
  p('## How to read this, and how to rerun it')
  p()
  p('- **Every figure is a median of several runs, with the min and max of those runs** written as `median (min–max)`. ' +
    'The machines that run this are shared and noisy, so an absolute figure alone proves little.')
  p('- **Every comparison is a ratio measured in the same run**: the system and its peer run back to back in each round ' +
    '(the order rotates from round to round), the ratio is taken per round, and the table shows the median of those per-round ratios ' +
    'with their min and max. A target is judged on that median.')
  p('- **Charts** put cost against size on log-log axes. The dashed line beside each series is what a linear cost (O(n)) would ' +
    'look like from that series\' first point: a series flat on the chart is O(1), one parallel to its dashed line is O(n).')
  p('- **Every row names its layer**: the public API (`openStore()`, in a worker or with `worker: false`), or a diagnostic ' +
    'of a layer below it (engine level: the engine called in the benchmark\'s thread; adapter level: the storage adapter called directly), ' +
    'or what it is compared with (a raw baseline, a peer library). Only the public API is what an app gets; the diagnostics locate costs.')
  p('- The OS page cache is warm in every read scenario: these figures measure the code, not the disk. Writes are durable ' +
    '(fdatasync / fsync / strict IndexedDB transactions) unless a row says relaxed.')
  p('- **Rerun**: `npm run bench` runs everything (Node part and headless Chromium) and rewrites `bench/results.json`, ' +
    '`BENCHMARKS.md` and `bench/charts/*.svg`; `npm run bench:report` only regenerates the page and charts from `bench/results.json`. ' +
    'Each part also runs alone (`npm run bench:api`, `bench:postgres`, `bench:sync`, `bench:sync-browser`, `bench:time-travel`, `bench:inspector`, `bench:codec`, `bench:codec-browser`, `bench:storage`, `bench:projections`, `bench:children`, `bench:client`, `bench:browser`, ' +
    '`bench:scaling`) and prints its full tables, with more diagnostics than this page.')
  p()
  p('## Machine')
  p()
  p(table(['', ''], Object.entries(m).map(([k, v]) => [k, String(v)]), ['l', 'l']))
  p()
  p('Settings of each run (environment variables given by `bench/all.ts`, the rest at their defaults):')
  p()
  p(table(['run', 'settings', 'seconds'], Object.keys(res.seconds).map((k) => [k, Object.entries(res.settings[k] ?? {}).map(([a, b]) => `${a}=${b}`).join(' ') || '(defaults)', fmt(res.seconds[k]!, 0)]), ['l', 'l', 'r']))
  p()
  p('## Targets of the component benchmarks')
  p()
  p('The headline targets in Node are measured through the public API (the first section). These are the component benchmarks\' ' +
    'targets: in Node they measure a layer below the public API (diagnostics); in Chromium, the public API.')
  p()
  p(table(['target', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    targets.map((t) => [t.what, t.layer, t.ratio, range(t.perRound, 2), t.target, `**${t.result}**`]), ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  p(explanations)
  p()

  // ---- appends ----
  const a = storage.appends
  p('## Durable append throughput (Node, fs adapter): diagnostic (adapter level)')
  p()
  p('The fs adapter called directly (`createFsAdapter`: no engine, no worker, no client), beside the raw disk limit and better-sqlite3. ' +
    'The same scenarios through `openStore()` are in the first section.')
  p()
  p(`Events of ${fmt(storage.eventJsonBytes, 0)} bytes of JSON (${fmt(storage.eventRecordBytes, 0)} bytes as stored), ${n0(storage.config.events)} per run ` +
    `(${n0(storage.config.sequentialEvents)} for the single-append rows, scaled to events/s), ${storage.config.writeRounds} rounds after a warm-up round. ` +
    `Peer: better-sqlite3 ${storage.sqlite.version} with one events table (session, seq, type, json; primary key (session, seq)), WAL.`)
  p()
  p(table(['scenario', 'layer', 'durability', 'events/s: median (min–max)'], [
    ['sessionfold fs adapter, batches of 100', LAYER.adapter, 'strict (fdatasync before resolve)', range(a.batched, 0)],
    ['raw disk limit: writeSync + fsyncSync of the same bytes per 100', LAYER.raw, 'fsync', range(a.raw, 0)],
    ['(reference) raw through FileHandle.write + datasync per 100', LAYER.raw, 'fdatasync', range(a.rawAsync, 0)],
    ['better-sqlite3, one transaction per 100', LAYER.sqlite, 'synchronous=FULL', range(a.sqliteFullBatched, 0)],
    ['sessionfold fs adapter, 1 event per append, 100 concurrent callers', LAYER.adapter, 'strict', range(a.concurrent, 0)],
    ['sessionfold fs adapter, 1 event per append, sequential', LAYER.adapter, 'strict', range(a.sequential, 0)],
    ['better-sqlite3, 1 event per transaction (synchronous API: concurrent callers queue the same way)', LAYER.sqlite, 'synchronous=FULL', range(a.sqliteFullSingles, 0)],
    ['sessionfold fs adapter, batches of 100', LAYER.adapter, 'relaxed (no fdatasync per append)', range(a.relaxedBatched, 0)],
    ['better-sqlite3, one transaction per 100', LAYER.sqlite, 'synchronous=NORMAL', range(a.sqliteNormalBatched, 0)],
  ], ['l', 'l', 'l', 'r']))
  p()
  p(table(['ratio (same rounds; sessionfold: the fs adapter alone)', 'per-round median (min–max)'], [
    ...storage.ratios.filter((r: Any) => !r.name.startsWith('full read')).map((r: Any) => [r.name, range(r.perRound, 2)]),
    [storage.reference.name, range(storage.reference.perRound, 2)],
    ...storage.peerReference.map((r: Any) => [r.name, range(r.perRound, 2)]),
  ], ['l', 'r']))
  p()
  p(`Group commit: 100 concurrent callers wrote ${fmt(storage.diagnostics.b.eventsPerSync, 1)} events per fdatasync (untimed diagnostic pass); ` +
    `sequential single appends pay one fdatasync each.`)
  p()

  // ---- cold open ----
  p('## Cold open: time to the first projection value (Node, fs adapter): diagnostic (engine level)')
  p()
  p('The engine called in the benchmark\'s thread (no worker, no client). A new engine and adapter per open (an app that starts and shows one session), `Engine.coldRead`: the checkpoint row is ' +
    `${scaling.config.behind} events behind the end of the log, so the open restores it and folds ${scaling.config.behind} events; ` +
    'without it, the whole log is folded. The peer: better-sqlite3 opened anew, every event of the session selected in seq order, ' +
    'the catalog and timing folded by app code (it parses only the events its folds need). Same events in both, checked to give the same values.')
  p()
  p(table(['events', 'log MiB', 'engine: with checkpoint, ms', 'engine: full refold, ms', 'peer: better-sqlite3 + app fold, ms', 'refold ÷ checkpoint', 'sqlite ÷ checkpoint'],
    (scaling.cold.bySize as Any[]).map((c) => [n0(c.size), fmt(c.logBytes / 2 ** 20, 1), range(c.checkpoint, 2), range(c.refold, 1), range(c.sqlite, 1),
      range(c.refoldOverCheckpoint, 1), range(c.sqliteOverCheckpoint, 1)])))
  p()
  p('![cold open chart](bench/charts/cold-open.svg)')
  p()
  const pr = projections.reads
  p(`From the projections run, diagnostic (engine level), with 100,000 events and the checkpoint 200 behind: full refold ${fmt(pr.eventsPerSecond.refold.new.median / 1000, 0)}k events/s against ` +
    `${fmt(pr.eventsPerSecond.raw.median / 1000, 0)}k events/s for a raw read + JSON.parse of the same file; cold open with checkpoint ` +
    `${range(pr.ms.checkpoint.new, 2)} ms from a new engine, ${range(pr.ms.checkpoint.warm, 2)} ms on a warm one.`)
  p()

  // ---- listChildren ----
  const sizes = Object.keys(children).map(Number).sort((x, y) => x - y)
  p('## listChildren (Node, fs adapter): diagnostic (engine level)')
  p()
  p('`Engine.listChildren` called in the benchmark\'s thread (no worker, no client). Children of one parent, 23 events each. Live: open for writing in the engine that lists them (no reads). Cold: released, ' +
    'each with its close checkpoint; "fresh engine" = new engine + adapter inside the timed part, "warm" = the same engine every round. ' +
    'No checkpoints: the same store with every child\'s checkpoint deleted (each child refolded).')
  p()
  p(table(['children', 'live, ms', 'cold, fresh engine, ms', 'cold, warm engine, ms', 'no checkpoints, fresh engine, ms', 'µs per child (cold, fresh)', 'runs'],
    sizes.map((n) => {
      const l = children[String(n)].listings
      return [n0(n), range(l.live, 2), range(l.coldFresh, 1), range(l.coldWarm, 1), range(l.refoldFresh, 1), fmt((l.coldFresh.median / n) * 1000, 0), String(l.live.n)]
    })))
  p()
  p('![listChildren chart](bench/charts/list-children.svg)')
  p()

  // ---- latency ----
  p('## Append-to-subscriber latency')
  p()
  p('### Node, through the public API (`openStore({ storage: \'fs\' })`, in a worker and with `worker: false`)')
  p()
  p(`${n0(client.config.latencyAppends)} appends per run, one after another, each changing the \`subagentTiming\` value; the time from ` +
    '`session.append` to the subscriber\'s listener. Median and p99 within each run; the table shows the median (min–max) of those over the runs.')
  p()
  p(table(['variant', 'layer', 'median, ms', 'p99, ms', 'append() resolves, median ms'],
    (client.latency.variants as Any[]).map((v) => [v.label, v.worker ? LAYER.apiWorker : LAYER.apiThread, range(v.summary.obsMedian, 3), range(v.summary.obsP99, 2),
      range(v.summary.appendMedian, 3)]), ['l', 'l', 'r', 'r', 'r']))
  p()
  p('### Chromium, against Dexie `liveQuery`')
  p()
  p(`sessionfold through the public API (${LAYER.apiChromium}); Dexie is a peer; the raw idb commit is a raw baseline. ` +
    'One `subagent/catalog` fact appended per sample, until the `subagentCatalog` subscriber sees the new entry; Dexie\'s liveQuery recomputes the ' +
    'catalog from every event of the session (`bulkAdd` prefill, `add` per sample, strict durability like sessionfold). Dexie\'s default cache shows the ' +
    'entry before its transaction commits; with cache \'disabled\' it queries again after the commit.')
  p()
  const lat = browser.latency as Any[]
  p(table(['scenario', 'sessionfold writer (public API), ms', 'sessionfold observer (public API), ms', 'Dexie default (peer), ms', 'Dexie no cache (peer), ms',
    'raw idb put + commit() (raw baseline: commit floor), ms'],
    lat.map((l) => [`${l.name}${l.reference ? ' (reference)' : ''}`, range(l.samples.sfWriter, 2), range(l.samples.sfObserver, 2), range(l.samples.dexie, 2),
      range(l.samples.dexieNoCache, 2), range(l.samples.idbPut, 2)])))
  p()
  p(`"mixed-N": N events of which 1 in 100 is a catalog fact; "catalog-N": every event a catalog fact (the view pushed on each update holds N entries).`)
  p()
  p('![subscriber latency chart](bench/charts/subscriber-latency.svg)')
  p()
  L.push(...chromiumCatalogSection(browser))

  // ---- memory ----
  p('## Memory held by the engine (Node): diagnostic (engine level)')
  p()
  p('The engine and the fs adapter in the benchmark\'s thread (no worker, no client).')
  p()
  p(table(['live session', 'heap, KiB: median (min–max)', 'bytes per event'], [
    ...(scaling.heap.bySize as Any[]).map((h) => [`${n0(h.events)} events`, range({ ...h.bytes, median: h.bytes.median / 1024, min: h.bytes.min / 1024, max: h.bytes.max / 1024 }, 1), fmt(h.bytes.median / h.events, 2)]),
    [`per live session, ${n0(scaling.config.sessions)} sessions of ${scaling.config.eventsPerSmallSession} events open at once`,
      range({ ...scaling.heap.perLiveSession, median: scaling.heap.perLiveSession.median / 1024, min: scaling.heap.perLiveSession.min / 1024, max: scaling.heap.perLiveSession.max / 1024 }, 1), ''],
  ], ['l', 'r', 'r']))
  p()
  const hs = scaling.heap.bySize as Any[]
  const hPrev = hs.at(-2)
  const hLast = hs.at(-1)
  if (hPrev && hLast) {
    p(`Growth per 100,000 events, between ${n0(hPrev.events)} and ${n0(hLast.events)} events (medians): ` +
      `${fmt(((hLast.bytes.median - hPrev.bytes.median) / (hLast.events - hPrev.events)) * 100_000 / 1024, 1)} KiB.`)
    p()
  }
  p('heapUsed after forced gc, before and after: the projection states, the log state (its sparse offset index: one number per 64 events) ' +
    'and the adapter\'s bookkeeping. Events themselves are not kept in memory; the logs here hold the same 3 children at every length, so the ' +
    'states do not grow with them.')
  p()
  p('![memory chart](bench/charts/memory.svg)')
  p()

  // ---- chromium appends ----
  const ba = browser.appends
  p('## Appends in Chromium (IndexedDB on disk)')
  p()
  p(table(['system', 'layer', 'events/s: median (min–max)'], [
    ['sessionfold: openStore({ worker: true }), session.append(batch of 100), strict', LAYER.apiChromium, range(ba.sessionfold, 0)],
    ['raw idb: one strict readwrite transaction per 100 puts, commit() after the last', LAYER.raw, range(ba.idb, 0)],
    ['(reference) sessionfold, checkpoints deferred past the run', `${LAYER.apiChromium}, openStore({ checkpoint: { everyEvents: 1e9 } })`, range(ba.sessionfoldCheckpointsDeferred, 0)],
    // Results from before the adapter committed checkpoints relaxed itself carry this what-if.
    ...(ba.sessionfoldRelaxedCheckpoints ? [['(reference) sessionfold, checkpoint transactions committed relaxed', `${LAYER.apiChromium}, patched worker`, range(ba.sessionfoldRelaxedCheckpoints, 0)]] : []),
  ], ['l', 'l', 'r']))
  p()
  p('## Other figures from the component benchmarks')
  p()
  const pa = projections.appends
  p(table(['figure', 'layer', 'median (min–max)'], [
    ['one subagent/catalog append through Engine.append (memory adapter), D=10 catalog entries, µs', LAYER.engine, range(pa.us.default.small, 1)],
    [`one subagent/catalog append through Engine.append (memory adapter), D=${n0(projections.config.catalogLarge)} entries, µs`, LAYER.engine, range(pa.us.default.large, 1)],
    ['Node: no-op call through the worker vs raw comlink no-op, µs (listSessions on an empty memory store)', `${LAYER.apiWorker} vs ${LAYER.raw}`, noop(client)],
    ['Node: batched appends through the worker, fs strict, events/s', LAYER.apiWorker, range(client.throughput.variants.find((v: Any) => v.key === 'workerFs').summary, 0)],
  ], ['l', 'l', 'r']))
  p()
  return `${L.join('\n')}\n`
}

/** Issue 14's catalog figure in Chromium (bench/browser/run.ts, phase 'catalog'), or how to measure it. */
function chromiumCatalogSection(browser: Any): string[] {
  const cat = browser.catalog
  const L: string[] = []
  const p = (s = '') => L.push(s)
  const sizes = cat ? `${n0(cat.large.entries)} vs ${n0(cat.small.entries)}` : '10,000 vs 100'
  p(`### Chromium, a catalog fact at ${sizes} entries, through the page's openStore()`)
  p()
  if (!cat) {
    p('Not in this bench/results.json (its browser run predates this figure): `npm run bench -- --only=browser` measures it and keeps the other parts\' results.')
    p()
    return L
  }
  const big = n0(cat.large.entries)
  const small = n0(cat.small.entries)
  const h = cat.headline
  p('Measured as issue 14 asks, through the public API: the page\'s `openStore()` (the engine in its Web Worker, IndexedDB, durability strict). ' +
    `\`session.recordExternal({ childId })\` appended to a session ` +
    `whose catalog already holds ${big} entries, against one holding ${small}; the time from the call until the writer's own mirror ` +
    '(`session.projections.get(\'subagentCatalog\')`) holds the new entry. Not the "catalog-N" row above, which times a subscriber, nor the mixed rows, which count events.')
  p()
  p(table(['figure', 'layer', 'ratio', 'measured: per-round median (min–max)', 'target', 'result'],
    [[`a catalog fact until the writer's mirror holds it: catalog of ${big} vs ${small} entries`, LAYER.apiChromiumPage, h.ratio, range(h.perRound, 2), h.target, `**${h.result}**`]],
    ['l', 'l', 'l', 'r', 'r', 'l']))
  p()
  const c = browser.config.catalog
  p(table(['catalog before the sample', 'layer', 'ms: median of run medians (min–max)', 'all samples: median ms'], [
    [`${small} entries`, LAYER.apiChromiumPage, range(cat.small, 2), fmt(cat.samples.small.median, 2)],
    [`${big} entries`, LAYER.apiChromiumPage, range(cat.large, 2), fmt(cat.samples.large.median, 2)],
  ], ['l', 'l', 'r', 'r']))
  p()
  p(`${c.samples} samples per run, a run's figure is their median, ${c.rounds} rounds after a warm-up, the two sizes back to back in each round (the order alternating), ` +
    `${c.paceMs} ms pause after each sample. The ${big}-entry catalog was filled once with recordExternal calls, ${c.fillChunk} at once ` +
    `(untimed: ${fmt(cat.fillMs / 1000, 1)} s), and grows by one entry per sample over the runs; each ${small}-entry run has a new session filled the same way.`)
  p()
  return L
}

function noop(client: Any): string {
  const calls = client.noop.calls as Any[]
  const raw = calls.find((c) => c.mode === 'free' && c.key === 'raw')
  const mem = calls.find((c) => c.mode === 'free' && /memory/.test(c.label))
  return mem && raw ? `${range(mem.median, 1)} vs ${range(raw.median, 1)}` : 'n/a'
}

/** Writes the charts and BENCHMARKS.md from a results object. */
export function writeReport(
  res: SuiteResults, explain: (res: SuiteResults, targets: Target[]) => string, explainApi?: (res: SuiteResults) => string,
): void {
  const targets = targetsOf(res)
  if (!res.runs.api) process.stderr.write('bench/results.json has no api results: BENCHMARKS.md says how to measure them instead of the public-API section\n')
  fs.mkdirSync(here('./charts'), { recursive: true })
  for (const { file, chart } of chartsOf(res)) fs.writeFileSync(here(`./charts/${file}`), renderChart(chart))
  fs.writeFileSync(here('../BENCHMARKS.md'), renderMarkdown(res, targets, explain(res, targets), explainApi?.(res) ?? ''))
}
