// Writes BENCHMARKS.md and its charts (bench/charts/*.svg) from bench/results.json, which
// bench/all.ts (npm run bench) produces: for each part, what it measures against what, and the
// ratios it measured within one run. Every figure comes from results.json; the per-run details
// (absolute rates, settings, diagnostics) stay in results.json and in each bench's own output.
import * as fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { fmt, type Summary } from './stats'
import { renderChart, type Chart } from './svg'

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
  /** Each part's results by run name (children: by size); a part run after these results were made is absent. */
  runs: Record<string, Any> & { children: Record<string, Any> }
}

/** One line of a part's table: a ratio measured within one run (per round, or once). */
interface Row {
  what: string
  ratio: string
  perRound: Summary | number
  target: string
  result: string
  col?: string
}

interface Part {
  key: string
  title: string
  script: string
  /** What is measured, through which layer, against which baseline or peer. */
  about: string
  rows: (r: Any) => Row[]
  /** Rows shown as one matrix instead ("row label: column label" in `what`), for ratios repeated across sizes or peers. */
  matrix?: (r: Any) => Row[]
  /** The absolute figures the docs point to, in a sentence. */
  figures?: (r: Any) => string
  /** What the figures mean, a bullet each (after the table and figures). */
  notes?: (r: Any) => string[]
}

/** A target as the benches wrote it (0.7, '>= 50', '<= 1.5', '< 2', null) for the page. */
const target = (t: unknown, atMost?: boolean): string =>
  typeof t === 'number' ? `${atMost ? '≤' : '≥'} ${t}` : typeof t === 'string' ? t.replace('>=', '≥').replace('<=', '≤') : ''
const verdict = (x: Any): string => (x.result === 'PASS' || x.result === 'MISS' ? x.result : '')

/** Rows of a `headline` list (the parts through the public API; the part's text says through what). */
const headline = (r: Any): Row[] =>
  (r.headline as Any[]).map((h) => ({ what: h.figure, ratio: h.ratio, perRound: h.perRound, target: h.target, result: verdict(h) }))
/** A headline list as a matrix: a row per figure (each says what it is against), a column per layer. */
const byLayer = (r: Any): Row[] =>
  (r.headline as Any[]).map((h) => ({ what: h.figure, col: h.layer, ratio: '', perRound: h.perRound, target: h.target, result: verdict(h) }))
/** Rows of `{ name, perRound | summary, target, result }` lists (the component benches). */
const named = (list: Any[] | undefined, prefix = ''): Row[] =>
  (list ?? []).map((x) => ({
    what: prefix + x.name,
    ratio: '',
    perRound: x.perRound ?? x.summary ?? x.median,
    target: target(x.target, x.atMost),
    result: verdict(x),
  }))

/** The codec's headline ids are `<measure>-<variant>`: a matrix of measures by variant. */
const CODEC: Record<string, string> = {
  size: 'stored bytes ÷ JSON bytes',
  append: 'batched appends: events/s ÷ plain events/s',
  read: 'full read: events/s ÷ plain events/s',
  open: 'cold observe in a fresh store: ms ÷ plain ms',
  'open-again': 'observe again in that store: ms ÷ plain ms',
  sealed: 'encryption + deflate',
  deflate: 'deflate (the default), no key',
  'sealed-raw': "encryption, compression 'none'",
  none: "compression 'none', no key",
  control: 'plain again (the noise)',
}
const codec = (r: Any): Row[] =>
  (r.headline as Any[]).map((h) => {
    const [, measure, variant] = /^(?:browser-)?(size|append|read|open-again|open)-(.+)$/.exec(h.id)!
    return { what: `${CODEC[measure!]}: ${CODEC[variant!]}`, ratio: '', perRound: h.perRound, target: h.target, result: verdict(h) }
  })

const PARTS: Part[] = [
  {
    key: 'api',
    title: 'Through the public API (Node)',
    script: 'bench:api',
    rows: () => [],
    matrix: byLayer,
    about:
      '`openStore()` with its Node defaults (worker, fs, strict) and with `worker: false`, against what an app would use instead, in the same run: ' +
      'better-sqlite3 12 (WAL, `synchronous = FULL`, a transaction a batch or a row, each row made with `JSON.stringify`) and a JSONL file ' +
      '(`JSON.stringify`, `writeSync` + `fdatasyncSync` a batch); then the physical limit, `writeSync` + `fsyncSync` of the same record bytes; ' +
      '100 appends at once against 100 in turn; a catalog fact at 10,000 entries against 100. What an app gets; later parts measure layers below.',
  },
  {
    key: 'postgres',
    title: 'PostgreSQL through the public API (Node)',
    script: 'bench:postgres',
    rows: () => [],
    matrix: byLayer,
    figures: (r) =>
      `Ack → subscriber in another process: p50 ${fmt(r.concurrent.latency.p50, 1)} ms, p99 ${fmt(r.concurrent.latency.p99, 0)} ms with ` +
      `${r.config.procs} × ${r.config.sessions} sessions flat out (${fmt(r.concurrent.eventsPerSecond, 0)} events/s); p99 ${fmt(r.paced.latency.p99, 1)} ms ` +
      `at one append per ${r.paced.paceMs % 1000 === 0 ? `${r.paced.paceMs / 1000} s` : `${r.paced.paceMs} ms`} a session (target ≤ ${r.paced.targetP99Ms} ms: **${r.paced.result}**).`,
    about:
      "`openStore({ storage: 'postgres' })` on a throwaway cluster: batched appends against the same rows inserted with the `postgres` driver; " +
      'a cold open at 100,000 events against 1,000.',
  },
  {
    key: 'sync',
    title: 'HTTP sync through the public API (Node)',
    script: 'bench:sync',
    rows: headline,
    figures: (r) =>
      `Through the server: p50 ${fmt(r.latency.syncP50.median, 1)} ms, p99 ${fmt(r.latency.syncP99.median, 0)} ms; initial sync ` +
      `${fmt((r.initialSync.variants as Any[]).find((v) => v.key === 'connect').summary.median, 0)} events/s.`,
    about:
      '`store.connect(url, { live: true })` to `createSyncHandler` on 127.0.0.1: append-to-subscriber latency against a second store on the same folder; ' +
      'initial sync and 50 clients pushing against the same changes moved without HTTP.',
  },
  {
    key: 'sync-browser',
    title: 'HTTP sync in Chromium',
    script: 'bench:sync-browser',
    rows: headline,
    about: "Two Chromium devices (the demo sync page) through its server: an append on A to a subscriber on B, against A's other tab.",
  },
  {
    key: 'streams',
    title: 'Durable Streams against the reference server',
    script: 'bench:streams',
    rows: headline,
    figures: (r) => {
      const one = (r.appends?.shapes as Any[] | undefined)?.find((x) => x.shape === 'one')
      const each = (r.appends?.shapes as Any[] | undefined)?.find((x) => x.shape === 'each')
      const identity = (r.catchUp?.byEncoding as Any[] | undefined)?.find((e) => e.key === 'identity')
      const said: string[] = []
      if (one && each)
        said.push(
          `appends ${fmt(one.rate.sessionfold.median, 0)} events/s on one stream and ${fmt(each.rate.sessionfold.median, 0)} on ${r.config.producers} streams ` +
            `against the reference's ${fmt(one.rate.reference.median, 0)} and ${fmt(each.rate.reference.median, 0)}`,
        )
      if (identity) said.push(`catch-up ${fmt(identity.rate.sessionfold.median, 0)} messages/s against ${fmt(identity.rate.reference.median, 0)}`)
      if (r.sse)
        said.push(
          `append → SSE reader p50 ${fmt(r.sse.all.sessionfold.p50, 1)} ms, p99 ${fmt(r.sse.all.sessionfold.p99, 0)} ms against ${fmt(r.sse.all.reference.p50, 1)} ms and ${fmt(r.sse.all.reference.p99, 0)} ms`,
        )
      return (
        `sessionfold: ${said.join('; ')} (rates: medians over the rounds; latencies: of all samples). Measured on ${r.environment.cpus} cores (${r.environment.cpuModel}), Node ${r.environment.node}, ` +
        `@durable-streams/server ${r.versions.server}, @durable-streams/client ${r.versions.client}, server-conformance-tests ${r.versions.conformance}` +
        `${r.postgres ? `, PostgreSQL from ${r.postgres}` : ''}; the stores in ${r.environment.tmpdir}; the whole run took ${fmt(r.totalSeconds / 60, 1)} min.`
      )
    },
    notes: (r) => r.meaning ?? [],
    about:
      "`createStreamsHandler` over an fs store (openStore's defaults) against the protocol's reference server, `@durable-streams/server` with its file-backed store (`dataDir`), " +
      'each in a process of its own on 127.0.0.1, the clients in a third: 50 `IdempotentProducer`s (the official client) appending on one stream and on 50, ' +
      'a catch-up read of a 100,000-message JSON stream, an append until an SSE reader has it; and the official conformance suite on the reference, on sessionfold over fs and over PostgreSQL.',
  },
  {
    key: 'time-travel',
    title: 'Time travel through the public API',
    script: 'bench:time-travel',
    rows: headline,
    about:
      '`store.observe(id, { at })` at random points of 1,000,000 events against 1,000, and against a refold from seq 0; history rows on disk against the log.',
  },
  {
    key: 'inspector',
    title: "Time travel in Chromium: the inspector's timeline",
    script: 'bench:inspector',
    rows: (r) => [
      {
        what: `a timeline move to a random point of ${fmt(r.config.events, 0)} events vs a move to the live end`,
        ratio: 'median ms ÷ median ms',
        perRound: r.ratio,
        target: '',
        result: '',
      },
    ],
    about: 'The inspector page in Chromium: a timeline move to a random point against a move back to the live end.',
  },
  {
    key: 'codec',
    title: 'Compression and encryption through the public API',
    script: 'bench:codec',
    rows: () => [],
    matrix: codec,
    about:
      '`openStore()` with `compression` and an encryption key against a plain store: stored size of real text against its JSON; ' +
      'appends, a full read and a cold open against plain.',
  },
  {
    key: 'codec-browser',
    title: 'Compression and encryption in Chromium',
    script: 'bench:codec-browser',
    rows: () => [],
    matrix: codec,
    about: "The same through the page's `openStore()` in Chromium (IndexedDB, WebCrypto, `CompressionStream`).",
  },
  {
    key: 'sessions',
    title: 'Session list (§14)',
    script: 'bench:sessions',
    rows: headline,
    figures: (r) =>
      `Measured on ${r.environment.cpus} cores (${r.environment.cpuModel}), Node ${r.environment.node}${r.chromium ? `, Chromium ${r.chromium}` : ''}${r.postgres ? `, ${r.postgres}` : ''}; ` +
      `big stores of ${(r.backends as string[]).map((b) => `${fmt(r.sizes[b].big, 0)} sessions (${b})`).join(', ')} against ${fmt(r.config.small, 0)}` +
      `${((short: string[]) => (short.length > 0 ? `, not ${fmt(r.config.big, 0)} for ${short.join(' and ')}: the build budget ran out (see below)` : ''))(
        (r.builds as Any[]).filter((b) => b.size === 'big' && b.budgetHit).map((b) => b.backend),
      )}; build budgets ${fmt(r.config.buildSeconds, 0)} s (fs, PostgreSQL, at once) and ${fmt(r.config.browserBuildSeconds, 0)} s (Chromium)` +
      `${r.config.buildSeconds !== 240 ? ` (BENCH_SESSIONS_BUILD_S=${r.config.buildSeconds}; the default, 240 s, keeps a run near 14 minutes with smaller big stores)` : ''}; ` +
      `the whole run took ${fmt(r.totalSeconds / 60, 1)} min.`,
    notes: (r) => r.meaning,
    about:
      '`store.sessions({ limit: 50 })` through `openStore()` with its defaults (fs, PostgreSQL, and IndexedDB in Chromium): the first page at a big store against one of 100 sessions, ' +
      "cold (a new store each round; openStore's own time apart) and warm (a second list on the open store); an append to an old session until another process's list shows it first " +
      '(p50, p99), big against 100; and, engine level, batched appends and the folder with the index against the same adapter with its feed hidden (no index). ' +
      'The big stores are built through the API in the run, up to 100,000 sessions or a build budget, whichever comes first.',
  },
  {
    key: 'opfs',
    title: "Chromium: storage 'opfs' against IndexedDB and Dexie",
    script: 'bench:opfs',
    rows: headline,
    figures: (r) => {
      const line = (w: 'batched' | 'single') =>
        `${w} ${fmt(r.rates[w].opfs.median, 0)} (opfs), ${fmt(r.rates[w].idb.median, 0)} (IndexedDB), ${fmt(r.rates[w].dexie.median, 0)} (Dexie default), ` +
        `${fmt(r.rates[w].dexieStrict.median, 0)} (Dexie strict), ${fmt(r.rates[w].raw.median, 0)} (raw OPFS)`
      return (
        `Events/s, medians over ${r.config.rounds} rounds: ${line('batched')}; ${line('single')}. Chromium ${r.chromium}, ${r.environment.cpus} cores ` +
        `(${r.environment.cpuModel}); the whole run took ${fmt(r.totalSeconds / 60, 1)} min.`
      )
    },
    about:
      "The page's `openStore({ storage: 'opfs' })` (sync access handles in the engine's module Web Worker, strict: each append waits for `flush()`) against its " +
      '`openStore()` on IndexedDB (strict) and Dexie 4 on IndexedDB, with its default durability (the target rows) and with `chromeTransactionDurability: ' +
      "'strict'`: events of ~300 B in batches of 100 (`session.append([...])`, `bulkAdd`) and one at a time (`session.append({...})`, `add`), " +
      'each awaited; a new store per run. For reference, the physical limit: a dedicated worker writing the same bytes with a sync access handle, write + `flush()` a batch (an event).',
  },
  {
    key: 'many',
    title: 'Many sessions as cheap as few (issue 34)',
    script: 'bench:many',
    rows: headline,
    figures: (r) => {
      // Results from before PostgreSQL and Chromium were measured hold fs alone, at the top level.
      const stores: Record<string, Any> = r.byBackend ?? {
        fs: {
          name: 'fs',
          sizes: {
            small: { sessions: r.config.smallSessions, events: r.config.smallEvents },
            big: { sessions: r.config.bigSessions, events: r.config.bigEvents },
          },
          rates: r.rates,
          perSession: r.perSession,
        },
      }
      const shape = (s: Any) => `${fmt(s.sessions, 0)} × ${fmt(s.events, 0)}`
      const one = (b: Any) => {
        const rates = (op: 'pass' | 'import') =>
          `${fmt(b.rates[op].small.median, 0)} events/s at ${shape(b.sizes.small)} against ${fmt(b.rates[op].big.median, 0)} at ${shape(b.sizes.big)}`
        return (
          `${b.name}${
            b.version
              ? ` (${String(b.version)
                  .replace(/^(PostgreSQL|Chromium) /, '')
                  .replace(/ \(.*\)$/, '')})`
              : ''
          }: pass ${rates('pass')}; import ${rates('import')}; a small session costs ` +
          `${fmt(b.perSession.pass.small.median, 0)} µs in the pass and ${fmt(b.perSession.import.small.median, 0)} µs in the import ` +
          `(a big one ${fmt(b.perSession.pass.big.median, 0)} µs and ${fmt(b.perSession.import.big.median, 0)} µs)` +
          (b.closeAfterImport
            ? `; the store's close after the import, untimed in the ratio (it writes the session list's rows of the sessions made), took ` +
              `${fmt(b.closeAfterImport.small.median, 0)} ms at ${shape(b.sizes.small)} and ${fmt(b.closeAfterImport.big.median, 0)} ms at ${shape(b.sizes.big)}`
            : '')
        )
      }
      return (
        `Medians over ${r.config.rounds} rounds. ${Object.values(stores).map(one).join('. ')}. ` +
        `${r.config.smallSessions !== 20_000 ? `The small shape is ${fmt(r.config.smallSessions, 0)} sessions on fs and PostgreSQL${stores.chromium ? ` and ${fmt(r.config.browserSmallSessions, 0)} in Chromium` : ''} here (the issue's is 20,000: \`BENCH_MANY_SMALL=20000\`); the ratio is per event, so a cost per session shows at any count. ` : ''}` +
        `Measured on ${r.environment.cpus} cores (${r.environment.cpuModel}), Node ${r.environment.node}; the stores in ${r.environment.tmpdir}; the whole run took ${fmt(r.totalSeconds / 60, 1)} min.`
      )
    },
    about:
      "Each store with its defaults (worker, strict): `openStore({ storage: 'fs', dir })` (the rows without a prefix), `openStore({ storage: 'postgres', url })` on a throwaway cluster " +
      "(fsync on), and the page's `openStore({ name })` in headless Chromium (IndexedDB, its Web Worker): a `store.changesSince` pass from `null` until `done` over many sessions " +
      'of 2 events (~250 B each) against few sessions of many events (40 × 1,000; 10 × 1,000 in Chromium, where IndexedDB writes are slow), each on a store opened afresh; and its import, ' +
      "`store.applyChanges` of every batch of that pass into a new empty store (a new folder, database, IndexedDB database: what `sessionfold import` and a new device's first sync do). " +
      'Events/s of the small shape against the big one, per round.',
  },
  {
    key: 'storage',
    title: 'Durable appends and range reads: the fs adapter (diagnostic)',
    script: 'bench:storage',
    rows: (r) => [...named(r.ratios), ...named([r.reference]), ...named(r.peerReference)],
    about:
      'The fs adapter alone against the raw disk limit (`writeSync` + `fsyncSync` of the same bytes) and better-sqlite3 (WAL, `synchronous` FULL; NORMAL against relaxed); ' +
      'a range read of the last 100 of 100,000 events against a full read.',
  },
  {
    key: 'projections',
    title: 'Projections: the engine (diagnostic)',
    script: 'bench:projections',
    rows: (r) => named(r.targets),
    about:
      'The engine alone: a catalog append at 10,000 children against 10; cold read with a checkpoint against a refold of 100,000 events; refold against raw read + `JSON.parse`; heap.',
  },
  {
    key: 'scaling',
    title: 'Cold open and memory: the engine (diagnostic)',
    script: 'bench:scaling',
    rows: (r) => named(r.targets),
    matrix: (r) =>
      (r.cold.bySize as Any[]).map((c) => ({
        what: `cold open, better-sqlite3 + app fold ms ÷ the engine's with a checkpoint: ${fmt(c.size, 0)} events`,
        ratio: '',
        perRound: c.sqliteOverCheckpoint,
        target: '',
        result: '',
      })),
    about:
      'Time to the first projection values at 1,000 to 1,000,000 events, with a checkpoint and by refold, against better-sqlite3 + an app-code fold; heap per live session.',
  },
  {
    key: 'children',
    title: 'listChildren: the engine (diagnostic)',
    script: 'bench:children',
    rows: () => [],
    matrix: (r) =>
      Object.keys(r)
        .sort((a, b) => Number(a) - Number(b))
        .flatMap((n) => named(r[n].ratios).map((x) => ({ ...x, what: `${x.what}: ${fmt(Number(n), 0)} children` }))),
    about: '`listChildren`: cold children (fresh or warm engine) against live ones, and without checkpoints against with.',
  },
  {
    key: 'client',
    title: 'The worker hop (Node)',
    script: 'bench:client',
    rows: (r) => [...named(r.latencyTargets), ...named(r.throughput.ratios)],
    matrix: (r) => named(r.noop.ratios).map((x) => ({ ...x, what: x.what.replace(/^(.+), ([^,]+)$/, '$1: $2') })),
    about:
      'Append-to-listener latency across `worker_threads` (ms); a store call against a raw comlink no-op; batched appends through the worker against `worker: false`.',
  },
  {
    key: 'browser',
    title: 'Chromium: appends, a catalog fact, subscribers against Dexie',
    script: 'bench:browser',
    rows: (r) => named(r.ratios).filter((x) => !x.what.includes('Dexie')),
    matrix: (r) =>
      named(r.ratios)
        .filter((x) => x.what.includes('Dexie'))
        .map((x) => ({ ...x, what: x.what.replace(/^(.+?): (.+)$/, '$2: $1') })),
    about:
      "Chromium through the page's `openStore()`: appends against raw `idb`; a catalog fact at 10,000 entries against 100; append-to-subscriber time against Dexie `liveQuery` " +
      "(default cache, and `cache: 'disabled'`) at 100 to 10,000 events.",
  },
]

const cell = (s: string) => s.replace(/\|/g, '\\|')
const num = (v: number) => (v !== 0 && Math.abs(v) < 0.1 ? v.toPrecision(2) : fmt(v, Math.abs(v) >= 1000 ? 0 : 2))
const figure = (v: Summary | number) => (typeof v === 'number' ? `${num(v)} (once)` : v.n > 0 ? `${num(v.median)} (${num(v.min)}–${num(v.max)})` : 'not run')

/** Rows as a matrix: a row per `what`, a column per `col` (or "what: col", split at the last ": "). */
function matrix(rows: Row[]): string {
  const split = rows.map((r) =>
    r.col !== undefined ? { r, a: r.what, b: r.col } : { r, a: r.what.slice(0, r.what.lastIndexOf(': ')), b: r.what.slice(r.what.lastIndexOf(': ') + 2) },
  )
  const cols = [...new Set(split.map((x) => x.b))]
  const lines = [`| per round: median (min–max) | ${cols.join(' | ')} |`, `| :-- | ${cols.map(() => '--:').join(' | ')} |`]
  for (const a of new Set(split.map((x) => x.a))) {
    lines.push(
      `| ${a} | ${cols
        .map((b) => split.find((x) => x.a === a && x.b === b)?.r)
        .map((r) => (r ? `${figure(r.perRound)}${r.result ? ` **${r.result}** (${r.target})` : ''}` : ''))
        .join(' | ')} |`,
    )
  }
  return lines.join('\n')
}

/** A table of rows, without the columns that are empty in all of them. */
function table(rows: Row[]): string {
  const cols: [string, (r: Row, i: number) => string][] = [
    ['measured', (r) => r.what],
    ['ratio', (r) => r.ratio],
    ['per round: median (min–max)', (r) => figure(r.perRound)],
    ['target', (r) => r.target],
    ['result', (r) => (r.result ? `**${r.result}**` : '')],
  ]
  const used = cols.filter(([, f]) => rows.some((r, i) => f(r, i) !== ''))
  return [
    `| ${used.map(([h]) => h).join(' | ')} |`,
    `| ${used.map(([h]) => (h === 'measured' || h === 'ratio' ? ':--' : '--:')).join(' | ')} |`,
    ...rows.map((r, i) => `| ${used.map(([, f]) => cell(f(r, i))).join(' | ')} |`),
  ].join('\n')
}

const pt = (x: number, s: Summary, scale = 1) => ({ x, y: s.median * scale, min: s.min * scale, max: s.max * scale })

/** The charts: each a cost against size on log-log axes. */
export function chartsOf(res: SuiteResults): { file: string; chart: Chart }[] {
  const { scaling, children, browser } = res.runs
  const out: { file: string; chart: Chart }[] = []
  const series = (rows: Any[], x: (r: Any) => number, y: (r: Any) => Summary, label: string, scale?: number) => ({
    label,
    points: rows.map((r) => pt(x(r), y(r), scale)),
  })
  if (scaling) {
    const cold = scaling.cold.bySize as Any[]
    out.push({
      file: 'cold-open.svg',
      chart: {
        title: 'Cold open: time to the first projection values (Node, fs; engine level)',
        xLabel: 'events in the session',
        yLabel: 'ms',
        series: [
          series(
            cold,
            (c) => c.size,
            (c) => c.checkpoint,
            'sessionfold, with checkpoint',
          ),
          series(
            cold,
            (c) => c.size,
            (c) => c.refold,
            'sessionfold, full refold (no checkpoint)',
          ),
          series(
            cold,
            (c) => c.size,
            (c) => c.sqlite,
            'better-sqlite3 + app fold',
          ),
        ],
      },
    })
    out.push({
      file: 'memory.svg',
      chart: {
        title: 'Heap held by a live session (Node, engine + fs adapter)',
        xLabel: 'events in the session',
        yLabel: 'KiB',
        series: [
          series(
            scaling.heap.bySize,
            (h) => h.events,
            (h) => h.bytes,
            'heapUsed added by the session',
            1 / 1024,
          ),
        ],
      },
    })
  }
  if (children) {
    const sizes = Object.keys(children)
      .map(Number)
      .sort((a, b) => a - b)
      .map((n) => ({ n, l: children[String(n)].listings }))
    const ch = (key: string, label: string) =>
      series(
        sizes,
        (s) => s.n,
        (s) => s.l[key],
        label,
      )
    out.push({
      file: 'list-children.svg',
      chart: {
        title: 'listChildren (Node, fs; engine level)',
        xLabel: 'children',
        yLabel: 'ms',
        series: [
          ch('live', 'live children'),
          ch('coldFresh', 'cold, checkpointed, fresh engine'),
          ch('coldWarm', 'cold, checkpointed, warm engine'),
          ch('refoldFresh', 'cold, no checkpoints, fresh engine'),
        ],
      },
    })
  }
  if (browser) {
    const lat = (browser.latency as Any[]).filter((l) => l.catalogEvery !== 1).sort((a, b) => a.prefill - b.prefill)
    const ls = (key: string, label: string) =>
      series(
        lat,
        (l) => l.prefill,
        (l) => l.samples[key],
        label,
      )
    out.push({
      file: 'subscriber-latency.svg',
      chart: {
        title: 'Append to subscriber update (Chromium, IndexedDB, via openStore())',
        xLabel: 'events in the session',
        yLabel: 'ms',
        series: [
          ls('sfWriter', 'sessionfold, writing handle'),
          ls('sfObserver', 'sessionfold, observer handle'),
          ls('dexie', 'Dexie liveQuery, default cache'),
          ls('dexieNoCache', "Dexie liveQuery, cache 'disabled'"),
        ],
      },
    })
  }
  return out
}

export function renderMarkdown(res: SuiteResults, charts: string[]): string {
  const L: string[] = [
    '# Benchmarks',
    '',
    '<!-- Generated by bench/report.ts from bench/results.json (npm run bench). Do not edit: rerun. -->',
    '',
    'What sessionfold costs beside what an app would use instead: the raw disk (`writeSync` + `fsyncSync`), better-sqlite3, raw `idb`, Dexie, the `postgres` driver, ' +
      'a second store, a refold. Each ratio pairs runs of the same round in one process (the order rotating, so drift falls on both sides): ' +
      "the median (min–max) over the rounds. Targets are the project's own lines; rows without one are for information.",
    '',
    `Measured ${res.date.slice(0, 10)} (${fmt(res.durationSeconds / 60, 1)} min) on ${Object.entries(res.machine)
      .map(([k, v]) => `${k} ${v}`)
      .join('; ')}.`,
    '',
    '## How to run',
    '',
    '`npm run bench` runs every part, each in its own process (~25 minutes on 2 cores, the session list ~14 of them), and writes `bench/results.json`, this page and `bench/charts/*.svg`; ' +
      '`npm run bench -- --only=storage,scaling` reruns some parts and keeps the rest, `npm run bench:report` rewrites the page from `bench/results.json`. ' +
      'Each part runs alone too (its script is under its heading), prints its figures and ratios and writes `bench/results-<part>.json`; ' +
      'the `BENCH_*` variables at the top of its file size it. These come from a shared machine: rerun on a quiet one.',
    '',
  ]
  for (const part of PARTS) {
    const r = part.key === 'children' ? (Object.keys(res.runs.children ?? {}).length ? res.runs.children : undefined) : res.runs[part.key]
    L.push(`## ${part.title}`, '', `${part.about} \`npm run ${part.script}\`.`, '')
    if (!r) L.push(`Not in this bench/results.json: \`npm run bench -- --only=${part.key}\` measures it.`, '')
    else {
      const rows = part.rows(r)
      if (rows.length) L.push(table(rows), '')
      if (part.matrix) L.push(matrix(part.matrix(r)), '')
      if (part.figures) L.push(part.figures(r), '')
      if (part.notes) L.push(...part.notes(r).map((n) => `- ${n}`), '')
    }
  }
  L.push('## Charts', '', ...charts.map((f) => `![${f.replace('.svg', '')}](bench/charts/${f})`), '')
  return L.join('\n')
}

/** The line that opens a section's notes written by hand (kept when the report is written again). */
export const HAND_NOTES = '**Beside this run**'

/**
 * `fresh` with the notes written by hand in `old` put back: each section's block that opens with
 * HAND_NOTES (to the next section) goes again at the end of the section of the same heading. A
 * section no longer in `fresh` loses its notes.
 */
export function keepHandNotes(old: string, fresh: string): string {
  const notes = new Map<string, string[]>()
  let heading: string | undefined
  let block: string[] | undefined
  for (const line of old.split('\n')) {
    if (line.startsWith('## ')) {
      heading = line
      block = undefined
    } else if (line.startsWith(HAND_NOTES) && heading !== undefined) {
      block = []
      notes.set(heading, block)
    }
    block?.push(line)
  }
  const out: string[] = []
  let open: string[] | undefined
  const close = () => {
    if (!open) return
    while (out.length > 0 && out[out.length - 1] === '') out.pop()
    out.push('', ...open)
    while (out[out.length - 1] === '') out.pop()
    out.push('')
    open = undefined
  }
  for (const line of fresh.split('\n')) {
    if (line.startsWith('## ')) {
      close()
      open = notes.get(line)
    }
    out.push(line)
  }
  close()
  return out.join('\n')
}

/** Writes the charts and BENCHMARKS.md from a results object (the notes written by hand in it kept). */
export function writeReport(res: SuiteResults): void {
  fs.mkdirSync(here('./charts'), { recursive: true })
  const charts = chartsOf(res)
  for (const { file, chart } of charts) fs.writeFileSync(here(`./charts/${file}`), renderChart(chart))
  const path = here('../BENCHMARKS.md')
  const old = fs.existsSync(path) ? fs.readFileSync(path, 'utf8') : ''
  const fresh = renderMarkdown(
    res,
    charts.map((c) => c.file),
  )
  fs.writeFileSync(path, keepHandNotes(old, fresh))
}
