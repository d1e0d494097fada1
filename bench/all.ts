// The whole benchmark suite (npm run bench): the public-API benchmark (bench/api.ts, the
// headline figures), every other Node benchmark (diagnostics of the layers below) and the
// headless-Chromium one, one after another (each in its own process, so none inherits another's
// heap or JIT state), then bench/results.json (all their results, the machine, the settings)
// and, from it, BENCHMARKS.md with its charts (bench/report.ts). Sized to finish in about 25
// minutes on a 2-core machine (the session list, which builds stores of many sessions, ~14 of them). `npm run bench -- --only=storage,scaling` reruns some parts and
// keeps the others' results from the existing bench/results.json; `npm run bench:report`
// (--report) only regenerates BENCHMARKS.md and the charts from bench/results.json.
import { spawnSync } from 'node:child_process'
import * as fs from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeReport, type SuiteResults } from './report'

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url))
const REPO = here('../')
const TMP = here('./.tmp')
const RESULTS = here('./results.json')

interface Run {
  /** Key in results.runs (children runs are keyed by size under `children`). */
  name: string
  file: string
  env: Record<string, string>
  /** For the children runs: the number of children. */
  size?: number
  /** Run with --expose-gc (the heap figures). Not for runs that start worker_threads, which refuse the flag. */
  gc?: boolean
}

const CHILDREN_SIZES = [10, 100, 1_000, 10_000]
/** Parts that came after the first suite (older results lack them). */
const LATER_PARTS = [
  'api',
  'postgres',
  'sync',
  'sync-browser',
  'streams',
  'time-travel',
  'inspector',
  'codec',
  'codec-browser',
  'sessions',
  'opfs',
  'many',
] as const

const RUNS: Run[] = [
  // The headline figures, through openStore() (issue 14); the runs after it are diagnostics of the layers below, and peers.
  { name: 'api', file: 'bench/api.ts', env: {} },
  // The PostgreSQL store through openStore (issue 16), on a throwaway cluster it starts itself.
  { name: 'postgres', file: 'bench/postgres.ts', env: {} },
  // HTTP sync (issue 17): store.connect and createSyncHandler on 127.0.0.1, fs and PostgreSQL servers.
  { name: 'sync', file: 'bench/http-sync.ts', env: {} },
  // HTTP sync in Chromium (issue 17): two devices (the demo sync page) through the demo sync server, against another tab.
  { name: 'sync-browser', file: 'bench/sync-browser.ts', env: {} },
  // Durable Streams (§16): createStreamsHandler (fs) against the reference server (@durable-streams/server, file-backed) on 127.0.0.1:
  // 50 idempotent producers, a catch-up read of 100,000 messages, append → SSE reader; the conformance suite's counts on each (6-10 min).
  { name: 'streams', file: 'bench/streams.ts', env: {} },
  // Time travel (§11): store.observe(id, { at }) at random points of a 1,000,000-event session, against a 1,000-event one and a refold; the history rows' size.
  { name: 'time-travel', file: 'bench/time-travel.ts', env: {} },
  // The inspector's timeline in Chromium (§11): a move to a random point of a 100,000-event session, against a move to the end.
  { name: 'inspector', file: 'bench/inspector-scrub.ts', env: {} },
  // The record codec: compression and encryption through openStore(): stored size of a text corpus, batched appends, a full read, a cold open.
  { name: 'codec', file: 'bench/codec.ts', env: {} },
  // The codec's Chromium half: appends, a full read and a cold open on the page's openStore() (IndexedDB, its Web Worker).
  { name: 'codec-browser', file: 'bench/codec-browser.ts', env: {} },
  // The session list (§14): store.sessions() first pages at a big store vs 100 sessions (fs, PostgreSQL, Chromium), an
  // append seen by another process's list, and the index's cost on appends and on disk. Builds its big stores first (~4 min).
  { name: 'sessions', file: 'bench/sessions.ts', env: {} },
  // storage 'opfs' in Chromium (issue 34): the page's openStore({ storage: 'opfs' }) against its openStore() on IndexedDB and Dexie, batched and single appends (~2 min).
  { name: 'opfs', file: 'bench/opfs.ts', env: {} },
  // Many sessions as cheap as few (issue 34): a changesSince pass from null and its import (applyChanges into a new store) over
  // 2,000 sessions of 2 events against 40 of 1,000 (500 × 2 against 10 × 1,000 in Chromium), through openStore() with its
  // defaults on fs, PostgreSQL and IndexedDB in Chromium (about 5 min, most of it the small imports).
  { name: 'many', file: 'bench/many.ts', env: {} },
  { name: 'storage', file: 'bench/storage.ts', env: {} },
  { name: 'projections', file: 'bench/projections.ts', gc: true, env: { BENCH_APPEND_ROUNDS: '7', BENCH_READ_ROUNDS: '7', BENCH_HEAP_ROUNDS: '3' } },
  { name: 'scaling', file: 'bench/scaling.ts', gc: true, env: {} },
  ...CHILDREN_SIZES.map(
    (n): Run => ({
      name: `children-${n}`,
      file: 'bench/children.ts',
      size: n,
      // Building 10,000 children costs about a minute (each child's files are fsynced): fewer rounds there.
      // At 10,000 the listing without checkpoints (every child refolded, about 8 s a run) is left out.
      env: {
        BENCH_CHILDREN: String(n),
        BENCH_ROUNDS: n >= 10_000 ? '3' : n >= 1_000 ? '7' : '9',
        BENCH_BUILD_CONCURRENCY: '16',
        ...(n >= 10_000 ? { BENCH_REFOLD: '0', BENCH_CLOSE_LIVE: '0' } : {}),
      },
    }),
  ),
  {
    name: 'client',
    file: 'bench/client.ts',
    env: { BENCH_LAT_APPENDS: '5000', BENCH_LAT_ROUNDS: '3', BENCH_PACED_APPENDS: '200', BENCH_NOOP_ROUNDS: '5', BENCH_TP_ROUNDS: '5' },
  },
  { name: 'browser', file: 'bench/browser/run.ts', env: { BENCH_SIZES: '100,1000,10000', BENCH_APPEND_ROUNDS: '7', BENCH_LAT_ROUNDS: '5' } },
]

function machine(browserResults: { environment?: { chromium?: string } } | undefined): Record<string, string | number> {
  const cpus = os.cpus()
  const sh = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' })
    return r.status === 0 ? r.stdout.trim() : ''
  }
  const fsType = sh('findmnt', ['-n', '-o', 'FSTYPE', '--target', os.tmpdir()])
  return {
    cores: cpus.length,
    cpu: cpus[0]?.model ?? 'unknown',
    memory: `${fmtGiB(os.totalmem())} GiB`,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    chromium: browserResults?.environment?.chromium ?? 'not run',
    'better-sqlite3': readVersion('better-sqlite3'),
    dexie: readVersion('dexie'),
    idb: readVersion('idb'),
    'temp folder (where the stores live)': `${os.tmpdir()} (${fsType || 'unknown fs'})`,
  }
}

const fmtGiB = (b: number) => (b / 2 ** 30).toFixed(1)

function readVersion(pkg: string): string {
  try {
    return (JSON.parse(fs.readFileSync(join(REPO, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return 'not installed'
  }
}

function main(): void {
  if (process.argv.includes('--report')) {
    // Only the page and charts, from the committed results.
    writeReport(JSON.parse(fs.readFileSync(RESULTS, 'utf8')) as SuiteResults)
    process.stderr.write('BENCHMARKS.md and bench/charts/*.svg written from bench/results.json\n')
    return
  }
  const only = process.argv
    .find((a) => a.startsWith('--only='))
    ?.slice(7)
    .split(',')
  const previous: SuiteResults | undefined = only && fs.existsSync(RESULTS) ? (JSON.parse(fs.readFileSync(RESULTS, 'utf8')) as SuiteResults) : undefined
  // A prefix selects the children runs (--only=children); --only=sync is sync alone, not sync-browser too.
  const selected = RUNS.filter((r) => !only || only.some((o) => r.name === o || (r.size !== undefined && r.name.startsWith(`${o}-`))))
  if (selected.length === 0) throw new Error(`--only matched no run (runs: ${RUNS.map((r) => r.name).join(', ')})`)
  fs.mkdirSync(TMP, { recursive: true })

  const started = performance.now()
  const runs: Record<string, unknown> = {}
  const settings: Record<string, Record<string, string>> = { ...previous?.settings }
  const seconds: Record<string, number> = { ...previous?.seconds }
  for (const run of selected) {
    const out = join(TMP, `results-${run.name}.json`)
    fs.rmSync(out, { force: true })
    process.stderr.write(
      `\n=== ${run.name}: ${run.file} ${Object.entries(run.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}\n`,
    )
    const t0 = performance.now()
    const r = spawnSync(process.execPath, [...(run.gc ? ['--expose-gc'] : []), '--import', 'tsx', run.file], {
      cwd: REPO,
      stdio: 'inherit',
      env: { ...process.env, ...run.env, BENCH_OUT: out },
    })
    seconds[run.name] = (performance.now() - t0) / 1000
    settings[run.name] = run.env
    if (r.status !== 0 || !fs.existsSync(out)) throw new Error(`${run.name} failed (exit ${r.status ?? r.signal})`)
    runs[run.name] = JSON.parse(fs.readFileSync(out, 'utf8'))
  }

  // Parts not run now: from bench/results.json, else from the last run of that part (bench/.tmp).
  const leftOver = (name: string): unknown => {
    const p = join(TMP, `results-${name}.json`)
    if (!fs.existsSync(p)) throw new Error(`no results for ${name}: run it (npm run bench -- --only=${name})`)
    process.stderr.write(`${name}: results of the earlier run in ${p}\n`)
    return JSON.parse(fs.readFileSync(p, 'utf8'))
  }
  const children: Record<string, unknown> = {}
  for (const run of RUNS) {
    if (run.size === undefined) continue
    children[String(run.size)] = runs[run.name] ?? previous?.runs.children[String(run.size)] ?? leftOver(run.name)
    seconds[run.name] ??= Number.NaN
  }
  const pick = (k: 'storage' | 'projections' | 'client' | 'browser' | 'scaling') => runs[k] ?? previous?.runs[k] ?? leftOver(k)
  // Parts added after the first suite: results made before one existed lack it, and the page
  // leaves its section out until it is run.
  const later: Record<string, unknown> = {}
  for (const name of LATER_PARTS) {
    const result = runs[name] ?? previous?.runs[name] ?? (fs.existsSync(join(TMP, `results-${name}.json`)) ? leftOver(name) : undefined)
    if (result !== undefined) later[name] = result
  }
  const durationSeconds = only ? Object.values(seconds).reduce((a, b) => a + b, 0) : (performance.now() - started) / 1000
  const results: SuiteResults = {
    suite: 'sessionfold',
    date: new Date().toISOString(),
    durationSeconds,
    machine: machine(pick('browser') as { environment?: { chromium?: string } } | undefined),
    settings,
    seconds,
    runs: {
      ...later,
      storage: pick('storage'),
      projections: pick('projections'),
      children,
      client: pick('client'),
      browser: pick('browser'),
      scaling: pick('scaling'),
    },
  }
  fs.writeFileSync(RESULTS, `${JSON.stringify(results, null, 1)}\n`)
  writeReport(results)
  // With --only, durationSeconds is the whole suite's (its parts' last runs added up, as the page says); this run's own time is told apart.
  const took = (performance.now() - started) / 60_000
  const whole = only ? ` (the suite's parts add up to ${(durationSeconds / 60).toFixed(1)} min)` : ''
  process.stderr.write(`\ndone in ${took.toFixed(1)} min${whole}: bench/results.json, BENCHMARKS.md, bench/charts/*.svg\n`)
}

main()
