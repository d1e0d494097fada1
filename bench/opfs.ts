// storage 'opfs' in Chromium (npm run bench:opfs), issue 34: the page's own openStore({ storage:
// 'opfs' }) (the Origin Private File System through sync access handles in the engine's module
// Web Worker, durability 'strict': each append waits for flush()) against the page's openStore()
// on IndexedDB (the default storage, strict) and against Dexie 4 on IndexedDB, in headless
// Chromium with a profile on disk. Vite serves bench/opfs/ (page.ts takes the samples); this file
// drives the page one run at a time, summarises and reports.
//   batched  BENCH_OPFS_EVENTS events of ~300 B JSON data in batches of 100, each batch awaited:
//            session.append([...100]) / Dexie bulkAdd(100 rows).
//   single   BENCH_OPFS_SINGLES appends of one event awaited one after another: session.append({...}) / Dexie add(row).
// Dexie runs twice: with its defaults (no durability hint, so the browser's default: the
// issue's target rows are against this one) and with chromeTransactionDurability: 'strict' (the
// commit sessionfold's IndexedDB store waits for): both printed. For reference, the physical
// limit (not a target): a dedicated worker writing the same bytes through a sync access handle,
// write + flush() per batch (per event for 'single').
// Every run has a store (database, folder) of its own, deleted after it; a few untimed appends in
// it first (another session) warm the new worker. Round 0 warms up and is not recorded; then
// BENCH_OPFS_ROUNDS rounds, the systems back to back in an order rotating each round. Ratios pair
// runs of the same round. Settings: BENCH_OPFS_ROUNDS, BENCH_OPFS_EVENTS, BENCH_OPFS_SINGLES,
// BENCH_OPFS_SETTLE_MS; CHROMIUM_PATH.
import * as fs from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { serveBenchPage } from './support/vite-page'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium'
import { SYSTEMS, WORKLOADS, type OpfsPage, type RunResult, type SystemKey, type Workload } from './opfs/types'
import { messageInput, rotate, sourceState } from './common'
import { checkSettings, env, finishBench, fmt, headlineRatio, settlesWithin, summarize, type Figure, type HeadlineRatio, type Summary } from './stats'

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  /** Recorded rounds, after one unrecorded warm-up round. */
  rounds: env('BENCH_OPFS_ROUNDS', 5),
  /** 'batched': events per run, in appends of `batch`. */
  events: env('BENCH_OPFS_EVENTS', 10_000),
  batch: 100,
  /** 'single': one-event appends per run. */
  singles: env('BENCH_OPFS_SINGLES', 300),
  eventBytes: 300,
  /** Untimed appends to another session of each run's new store first: batches ('batched'), events ('single'). */
  primeBatches: 5,
  primeSingles: 20,
  /** Idle ms before each run (IndexedDB compacts what the last run wrote and deleted in the background). */
  settleMs: env('BENCH_OPFS_SETTLE_MS', 250),
  /** A call to the page that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 120_000,
}

/** Issue 34: opfs ÷ each, events/s, at least (per-round median). */
const TARGETS: Record<Workload, { idb: number; dexie: number }> = {
  batched: { idb: 5, dexie: 1 },
  single: { idb: 2, dexie: 1 },
}

const LAYER = "the page's openStore() in headless Chromium (the engine in its module Web Worker, durability 'strict')"

const LABELS: Record<SystemKey, string> = {
  opfs: "sessionfold openStore({ storage: 'opfs' }), strict",
  idb: 'sessionfold openStore() on IndexedDB (default), strict',
  dexie: 'Dexie 4, default durability (the target row)',
  dexieStrict: "Dexie 4, chromeTransactionDurability: 'strict'",
  raw: 'raw OPFS: sync handle write + flush (physical limit, not a target)',
}

/** The ratios' names in the printed table (the JSON has the full figure). */
const SHORT: Record<string, string> = {
  'opfs-batched-idb': 'batched: opfs ÷ IndexedDB openStore()',
  'opfs-batched-dexie': 'batched: opfs ÷ Dexie bulkAdd, default durability (target)',
  'opfs-batched-dexie-strict': "batched: opfs ÷ Dexie bulkAdd, 'strict' (information)",
  'opfs-batched-raw': 'batched: opfs ÷ raw OPFS write + flush (physical limit)',
  'opfs-single-idb': 'single: opfs ÷ IndexedDB openStore()',
  'opfs-single-dexie': 'single: opfs ÷ Dexie add, default durability (target)',
  'opfs-single-dexie-strict': "single: opfs ÷ Dexie add, 'strict' (information)",
  'opfs-single-raw': 'single: opfs ÷ raw OPFS write + flush (physical limit)',
}

const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)

/** Calls window.opfsBench[name](...args) in the page (opfs/page.ts); the timing happens there. */
async function call<K extends keyof OpfsPage>(page: Page, name: K, ...args: Parameters<OpfsPage[K]>): Promise<Awaited<ReturnType<OpfsPage[K]>>> {
  // An inline function only: tsx's __name helper is not in the page.
  const result = page.evaluate(
    ({ name, args }) => {
      const api = (window as unknown as { opfsBench: Record<string, (...a: unknown[]) => unknown> }).opfsBench
      return api[name]!(...args)
    },
    { name: name as string, args: args as unknown[] },
  )
  return (await settlesWithin(result, `the page's ${String(name)}()`, CONFIG.stallMs)) as Awaited<ReturnType<OpfsPage[K]>>
}

// ---- main ---------------------------------------------------------------------------------

type Rates = Record<Workload, Record<SystemKey, number[]>>

interface Measured {
  chromium: string
  info: ReturnType<OpfsPage['info']>
  eventJsonBytes: number
  rates: Rates
  /** Per recorded round and workload, the order the systems ran in. */
  order: string[]
  /** Untimed parts of each recorded run (ms), by workload and system: open, and close + delete. */
  openMs: Record<Workload, Record<SystemKey, number[]>>
  cleanupMs: Record<Workload, Record<SystemKey, number[]>>
  leftovers: string[]
  warnings: string[]
}

const perSystem = (): Record<Workload, Record<SystemKey, number[]>> =>
  Object.fromEntries(WORKLOADS.map((w) => [w, Object.fromEntries(SYSTEMS.map((s) => [s, [] as number[]]))])) as Record<Workload, Record<SystemKey, number[]>>

async function measure(page: Page, chromiumVersion: string): Promise<Measured> {
  const info = await call(page, 'info')
  if (!info.opfs) throw new Error('this Chromium has no origin private file system (navigator.storage.getDirectory)')
  const { eventJsonBytes } = await call(page, 'setup', {
    stamp: Date.now().toString(36),
    inputJson: JSON.stringify(messageInput(CONFIG.eventBytes)),
    events: CONFIG.events,
    batch: CONFIG.batch,
    singles: CONFIG.singles,
    primeBatches: CONFIG.primeBatches,
    primeSingles: CONFIG.primeSingles,
    settleMs: CONFIG.settleMs,
  })
  log(
    `events of ${fmt(eventJsonBytes, 1)} bytes of JSON; batched: ${fmt(CONFIG.events, 0)} in batches of ${CONFIG.batch}; single: ${fmt(CONFIG.singles, 0)} one by one`,
  )
  const rates = perSystem()
  const openMs = perSystem()
  const cleanupMs = perSystem()
  const order: string[] = []
  for (let r = 0; r <= CONFIG.rounds; r++) {
    const warmUp = r === 0
    for (const workload of r % 2 === 0 ? WORKLOADS : [...WORKLOADS].reverse()) {
      const systems = rotate(SYSTEMS, r)
      const line: string[] = []
      for (const system of systems) {
        const res: RunResult = await call(page, 'run', system, workload, `r${r}`)
        const rate = (res.events / res.ms) * 1000
        if (!warmUp) {
          rates[workload][system].push(rate)
          openMs[workload][system].push(res.openMs)
          cleanupMs[workload][system].push(res.cleanupMs)
        }
        line.push(`${system} ${fmt(rate, 0)}`)
      }
      if (!warmUp) order.push(`${workload}: ${systems.join(',')}`)
      log(`${workload} ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (events/s): ${line.join(', ')}`)
    }
  }
  const leftovers = await call(page, 'leftovers')
  const warnings = await call(page, 'warnings')
  return { chromium: chromiumVersion, info, eventJsonBytes, rates, order, openMs, cleanupMs, leftovers, warnings }
}

async function main(): Promise<void> {
  checkSettings(CONFIG)
  if (CONFIG.events % CONFIG.batch !== 0) throw new Error(`BENCH_OPFS_EVENTS must be a multiple of ${CONFIG.batch}`)
  const started = performance.now()
  const source = sourceState()
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`)
  const tmp = fs.mkdtempSync(join(os.tmpdir(), 'sessionfold-bench-opfs-'))
  let server: ViteDevServer | undefined
  let context: BrowserContext | undefined
  let cleaned = false
  const cleanup = async () => {
    if (cleaned) return
    cleaned = true
    await context?.close().catch((err) => log(`closing Chromium: ${err}`))
    await server?.close().catch((err) => log(`closing vite: ${err}`))
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)))

  const problems: string[] = []
  let m: Measured
  try {
    const served = await serveBenchPage('opfs', join(tmp, 'vite'), ['dexie'])
    server = served.server
    const { url } = served
    const profile = join(tmp, 'profile')
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS })
    const chromiumVersion = context.browser()?.version() ?? ''
    const page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (msg) => {
      if ((msg.type() === 'error' || msg.type() === 'warning') && !msg.location().url.endsWith('/favicon.ico')) {
        problems.push(`console ${msg.type()}: ${msg.text()}`)
        log(`page ${msg.type()}: ${msg.text()} (${msg.location().url})`)
      }
    })
    page.on('pageerror', (err) => {
      problems.push(`page error: ${err.message}`)
      log(`page error: ${err.message}`)
    })
    log(`vite on ${url}, Chromium ${chromiumVersion}, profile (IndexedDB and OPFS on disk) in ${profile}`)
    await page.goto(url)
    await page.waitForFunction(() => typeof (window as unknown as { opfsBench?: unknown }).opfsBench === 'object', null, { timeout: CONFIG.stallMs })
    m = await measure(page, chromiumVersion)
  } finally {
    await cleanup()
  }
  report(m, problems, source, (performance.now() - started) / 1000)
}

// ---- report -------------------------------------------------------------------------------

function report(m: Measured, problems: string[], source: ReturnType<typeof sourceState>, totalSeconds: number): void {
  const s = Object.fromEntries(WORKLOADS.map((w) => [w, Object.fromEntries(SYSTEMS.map((k) => [k, summarize(m.rates[w][k])]))])) as Record<
    Workload,
    Record<SystemKey, Summary>
  >
  const figureOf: Record<Workload, string> = {
    batched: `Chromium: batched strict appends (${fmt(CONFIG.events, 0)} events of ~${CONFIG.eventBytes} B, batches of ${CONFIG.batch}, each awaited), events/s`,
    single: `Chromium: single durable appends (${fmt(CONFIG.singles, 0)} one-event appends awaited one after another), events/s`,
  }
  const dexieCall: Record<Workload, string> = { batched: 'bulkAdd of each batch', single: 'add of each event' }
  const headline: HeadlineRatio[] = WORKLOADS.flatMap((w) => [
    headlineRatio(
      `opfs-${w}-idb`,
      `${figureOf[w]}: storage 'opfs' vs IndexedDB (the default storage)`,
      LAYER,
      'opfs events/s ÷ IndexedDB events/s',
      s[w].opfs,
      s[w].idb,
      { atLeast: TARGETS[w].idb },
    ),
    headlineRatio(
      `opfs-${w}-dexie`,
      `${figureOf[w]}: storage 'opfs' vs Dexie ${dexieCall[w]}, Dexie's default durability (the target row)`,
      LAYER,
      'opfs events/s ÷ Dexie events/s',
      s[w].opfs,
      s[w].dexie,
      { atLeast: TARGETS[w].dexie },
    ),
    headlineRatio(
      `opfs-${w}-dexie-strict`,
      `${figureOf[w]}: storage 'opfs' vs Dexie ${dexieCall[w]}, chromeTransactionDurability: 'strict' (information)`,
      LAYER,
      'opfs events/s ÷ Dexie strict events/s',
      s[w].opfs,
      s[w].dexieStrict,
    ),
    headlineRatio(
      `opfs-${w}-raw`,
      `${figureOf[w]}: storage 'opfs' vs the physical limit, sync handle write + flush of the same bytes (information)`,
      LAYER,
      'opfs events/s ÷ raw events/s',
      s[w].opfs,
      s[w].raw,
    ),
  ])

  const issues = [...problems, ...m.warnings.filter((w) => !problems.some((p) => p.includes(w.replace(/^(warn|error): /, ''))))]
  if (m.leftovers.length > 0) issues.push(`left behind after the runs: ${m.leftovers.join(', ')}`)
  for (const w of issues.slice(0, 10)) log(`page: ${w}`)
  finishBench(
    'opfs',
    `sessionfold storage 'opfs' in Chromium ${m.chromium}: ${LAYER}; events of ${fmt(m.eventJsonBytes, 1)} bytes of JSON`,
    WORKLOADS.flatMap((w) => SYSTEMS.map((k): Figure => [`${w}: ${LABELS[k]}`, s[w][k], 'events/s', 0])),
    headline.map((h) => ({ ...h, name: SHORT[h.id] ?? h.id })),
    {
      source,
      chromium: m.chromium,
      userAgent: m.info.userAgent,
      pageCores: m.info.hardwareConcurrency,
      config: CONFIG,
      targets: TARGETS,
      layer: LAYER,
      eventJsonBytes: m.eventJsonBytes,
      systems: SYSTEMS.map((k) => ({ key: k, label: LABELS[k] })),
      headline,
      rates: { unit: 'events/s', ...s },
      untimed: {
        unit: 'ms, median over the recorded runs',
        open: Object.fromEntries(WORKLOADS.map((w) => [w, Object.fromEntries(SYSTEMS.map((k) => [k, summarize(m.openMs[w][k]).median]))])),
        closeAndDelete: Object.fromEntries(WORKLOADS.map((w) => [w, Object.fromEntries(SYSTEMS.map((k) => [k, summarize(m.cleanupMs[w][k]).median]))])),
      },
      order: m.order,
      warnings: issues,
      totalSeconds,
    },
  )
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
