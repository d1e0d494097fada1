// The record codec in Chromium (npm run bench:codec-browser): the Chromium half of the codec's
// targets (bench/codec.ts has the Node half and the stored size), measured on the page's own
// openStore() in headless Chromium (Debian's /usr/bin/chromium, a persistent context so that
// IndexedDB lives on disk; flags of test/support/chromium.ts): IndexedDB, the engine in its
// default module Web Worker, durability 'strict'. Vite serves bench/codec-browser/ (index.html
// and page.ts, which takes the samples) from this source tree; this file starts it, drives the
// page one call at a time (page.ts's window.codecBench), and reports. Variants, each a database
// (and a store, with its own worker) of its own:
//   plain       compression: 'none', no key (neither)
//   deflate     the default: compression 'deflate' (CompressionStream('deflate-raw')), no key
//   sealed      encryption: { key } (32 random bytes; WebCrypto AES-GCM) with compression 'deflate'
//   sealedRaw   (diagnostic) encryption: { key } with compression: 'none', to tell the cipher's cost from deflate's
//
//   (1) durable batched appends: BENCH_CODEC_BROWSER_BATCHES batches of 100 message events of
//       ~300 bytes (bench/common.ts messageInput, as bench/codec.ts appends: the same text in every
//       event), each awaited (`await session.append(batch)`), to a new session created before
//       the clock starts, after BENCH_CODEC_BROWSER_SETTLE_MS idle (IndexedDB compacts what the
//       last run wrote in the background). events/s. Each run's session is closed and kept
//       (deletions slow the origin's LevelDB for the runs after them: see bench/browser/bench.ts);
//       the profile is removed at the end.
//   (2) a full read: `for await (const e of view.events())` on `store.observe(id)` of a session
//       of BENCH_CODEC_BROWSER_READ_EVENTS such events (written in batches of 100, then closed:
//       its checkpoint row written), the view opened before the clock starts and closed after it
//       stops. events/s; BENCH_CODEC_BROWSER_READ_REPEATS palindromes of runs per round.
//   (3) cold open with a checkpoint (plain, sealed): the stores of (2) closed; per sample
//       a fresh openStore(...) of the variant's database in the same page (a new worker and its
//       own connection; untimed, its time reported for information), then the time of
//       `await store.observe(id)` of the (2) session. The control opens the plain database again
//       in the same round: plain ÷ plain is the ratio noise alone gives. As in bench/codec.ts,
//       "unchanged within noise": the per-round median of sealed ÷ plain no further from 1 than
//       10 %, or than the control's per-round median is when that is further. For information,
//       BENCH_CODEC_BROWSER_REOBSERVES more observe + close in the same fresh store, their median.
//       Diagnostic: the two reads of a cold observe (the header, the checkpoint row) made in the
//       page's thread with no store open, through the IndexedDB adapter alone and through the
//       codec over it (openSealed), ms per call, with the sizes of what is stored.
//   (4) (information) storage: navigator.storage.estimate() (usage and usageDetails.indexedDB)
//       before and after writing each variant's (2) session (then SETTLE_MS idle), variants one
//       after another in a new profile. These are the sizes of the origin's LevelDB files (its
//       write-ahead log and Snappy-compressed tables, compacted in the background): rough.
//   (diagnostic) the codec's steps on one frame (the 100 events of one append, as the codec cuts
//       them) timed in the page's thread with the code the worker runs: deflate, inflate,
//       AES-GCM, base64 (the browser's table-driven version), and whole seal and open per
//       variant, each the median of BENCH_CODEC_BROWSER_PRIMITIVE_SAMPLES samples; set beside the
//       per-batch and per-100-events time each variant adds in (1) and (2). Then, marked (alt), what
//       the codec does not do, to tell where the time goes: a 16-byte deflate (the per-call floor),
//       the Blob → Response round trip alone, the streams driven through their own writer and
//       reader, btoa/atob and the native Uint8Array base64 (where Chromium has it).
// They run in this order: the (2) sessions written (with (4)), (2), (3), then (1) in the stores
// opened again, then the diagnostic: the cold opens come before the appends' many writes, whose
// background compaction would land on them.
//
// Every timed figure is the median over rounds (min and max beside it) after one unrecorded
// warm-up round; each round runs every variant twice, A B C … C B A (twice over in (2)), in an
// order that rotates from round to round, and a round's figure is its runs together; ratios pair
// runs of the same round. The profile and Vite's cache live in a temp folder removed at the end.
// Results go to bench/results-codec-browser.json (BENCH_OUT when set). Settings:
// BENCH_CODEC_BROWSER_BATCHES, _APPEND_ROUNDS, _SETTLE_MS, _READ_EVENTS, _ROUNDS, _READ_REPEATS,
// _OPENS, _REOBSERVES, _PRIMITIVE_SAMPLES; CHROMIUM_PATH.
import * as fs from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright'
import { createServer, type ViteDevServer } from 'vite'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium'
import type { AdapterProbe, CodecPage, ColdOpen, PrimitiveResult, VariantKey, WriteResult } from './codec-browser/page'
import { messageInput, rotate, runRounds, sourceState } from './common'
import { checkSettings, env, fmt, fmtSummary, headlineRatio, nearOne, type HeadlineRatio, pairRatios, printTable, resultsPath, summarize, type Summary, settlesWithin } from './stats'

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  /** Events per append, everywhere. */
  batch: 100,
  eventBytes: 300,
  /** (1) batches per run (IndexedDB's strict commits make Chromium's appends 10-20x slower than Node's: fewer than bench/codec.ts's 100). */
  batches: env('BENCH_CODEC_BROWSER_BATCHES', 30),
  /** (1) rounds, each after one unrecorded warm-up round, and the idle time before each run. */
  appendRounds: env('BENCH_CODEC_BROWSER_APPEND_ROUNDS', 5),
  settleMs: env('BENCH_CODEC_BROWSER_SETTLE_MS', 250),
  /** (2) events of the session read, and opened cold in (3). */
  readEvents: env('BENCH_CODEC_BROWSER_READ_EVENTS', 10_000),
  /** Rounds of (2) and (3), each after one unrecorded warm-up round. */
  rounds: env('BENCH_CODEC_BROWSER_ROUNDS', 5),
  /** (2) palindromes (A B C … C B A) of full reads per round (a full read takes about half a second here). */
  readRepeats: env('BENCH_CODEC_BROWSER_READ_REPEATS', 1),
  /** (3) palindromes of cold opens per round, and observes after the first in each fresh store (information). */
  opens: env('BENCH_CODEC_BROWSER_OPENS', 1),
  reobserves: env('BENCH_CODEC_BROWSER_REOBSERVES', 3),
  /** (diagnostic) samples per step of the codec on one frame. */
  primitiveSamples: env('BENCH_CODEC_BROWSER_PRIMITIVE_SAMPLES', 15),
  /** A call to the page that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 60_000,
}

const TARGETS = {
  /** (1) sealed ÷ plain events/s, at least. */
  append: 0.7,
  /** (2) sealed ÷ plain events/s, at least. */
  read: 0.7,
  /** (3) sealed ÷ plain observe time: unchanged within noise, taken as within this of 1 (or as far as the control is, when further). */
  openTolerance: 0.1,
}

const LAYER = "the page's openStore() (Chromium: IndexedDB, engine in its module Web Worker, strict)"

const VARIANTS = [
  { key: 'plain', label: "compression: 'none', no key" },
  { key: 'deflate', label: "compression: 'deflate' (the default), no key" },
  { key: 'sealed', label: "encryption: { key }, compression: 'deflate'" },
  { key: 'sealedRaw', label: "(diagnostic) encryption: { key }, compression: 'none'" },
] as const satisfies readonly { key: VariantKey; label: string }[]

const REPO = fileURLToPath(new URL('..', import.meta.url))
const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)

/** Rejects when `promise` has not settled within CONFIG.stallMs: a hang stops the benchmark instead of the machine. */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => settlesWithin(promise, what, CONFIG.stallMs)

/** Calls window.codecBench[name](...args) in the page (page.ts); the timing happens there. */
async function call<K extends keyof CodecPage>(page: Page, name: K, ...args: Parameters<CodecPage[K]>): Promise<Awaited<ReturnType<CodecPage[K]>>> {
  // An inline function only: tsx's __name helper is not in the page.
  const result = page.evaluate(({ name, args }) => {
    const api = (window as unknown as { codecBench: Record<string, (...a: unknown[]) => unknown> }).codecBench
    return api[name]!(...args)
  }, { name: name as string, args: args as unknown[] })
  return (await within(result, `the page's ${String(name)}()`)) as Awaited<ReturnType<CodecPage[K]>>
}

// ---- main ---------------------------------------------------------------------------------

interface Measured {
  chromium: string
  info: ReturnType<CodecPage['info']>
  openMs: Record<VariantKey, number>
  writes: Map<VariantKey, WriteResult>
  appendRuns: Map<string, number[]>
  readRuns: Map<VariantKey, number[]>
  cold: Map<string, { observe: number[]; open: number[]; again: number[] }>
  probes: Map<VariantKey, AdapterProbe>
  primitives: PrimitiveResult
  warnings: string[]
  problems: string[]
}

const OPENS = [
  { key: 'plain', label: VARIANTS[0].label, db: 'plain', options: 'plain' },
  { key: 'sealed', label: VARIANTS[2].label, db: 'sealed', options: 'sealed' },
  { key: 'control', label: '(control) the plain database again', db: 'plain', options: 'plain' },
] as const satisfies readonly { key: string; label: string; db: VariantKey; options: VariantKey }[]

async function measure(page: Page, chromiumVersion: string, problems: string[]): Promise<Measured> {
  const info = await call(page, 'info')
  const input = messageInput(CONFIG.eventBytes)
  await call(page, 'setup', { stamp: Date.now().toString(36), inputJson: JSON.stringify(input), batch: CONFIG.batch, batches: CONFIG.batches, settleMs: CONFIG.settleMs })
  const openMs = await call(page, 'openAll')
  log(`stores opened (ms): ${VARIANTS.map((v) => `${v.key} ${fmt(openMs[v.key], 0)}`).join(', ')}`)

  // ---- (4) and the (2) sessions: written first, in a new profile ----
  const writes = new Map<VariantKey, WriteResult>()
  for (const v of VARIANTS) {
    const w = await call(page, 'writeRead', v.key, CONFIG.readEvents)
    writes.set(v.key, w)
    log(`wrote the ${fmt(CONFIG.readEvents, 0)}-event read session in ${v.key} in ${fmt(w.ms / 1000, 1)} s; storage usage +${fmt((w.after.usage - w.before.usage) / 1024, 0)} KiB`)
  }

  // ---- (2) full reads ----
  const readRuns = new Map<VariantKey, number[]>(VARIANTS.map((v) => [v.key, []]))
  for (let r = 0; r <= CONFIG.rounds; r++) {
    const order = rotate(VARIANTS, r)
    const ms = new Map<VariantKey, number>(VARIANTS.map((v) => [v.key, 0]))
    for (let k = 0; k < CONFIG.readRepeats; k++) {
      for (const v of [...order, ...[...order].reverse()]) ms.set(v.key, ms.get(v.key)! + (CONFIG.readEvents / (await call(page, 'readRun', v.key, CONFIG.readEvents))) * 1000)
    }
    const line: string[] = []
    for (const v of VARIANTS) {
      const rate = ((2 * CONFIG.readRepeats * CONFIG.readEvents) / ms.get(v.key)!) * 1000
      if (r > 0) readRuns.get(v.key)!.push(rate)
      line.push(`${v.key} ${fmt(rate, 0)}`)
    }
    log(`read ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (events/s): ${line.join(', ')}`)
  }
  await call(page, 'closeAll') // (3) opens each database afresh

  // ---- (3) cold opens ----
  const cold = new Map(OPENS.map((x) => [x.key as string, { observe: [] as number[], open: [] as number[], again: [] as number[] }]))
  for (let r = 0; r <= CONFIG.rounds; r++) {
    const order = rotate(OPENS, r)
    const got = new Map<string, ColdOpen[]>(OPENS.map((x) => [x.key, []]))
    for (let k = 0; k < CONFIG.opens; k++) {
      for (const x of [...order, ...[...order].reverse()]) got.get(x.key)!.push(await call(page, 'coldOpen', x.db, x.options, CONFIG.reobserves, CONFIG.readEvents))
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
    const line: string[] = []
    for (const x of OPENS) {
      const g = got.get(x.key)!
      if (r > 0) {
        const c = cold.get(x.key)!
        c.observe.push(mean(g.map((s) => s.observe)))
        c.open.push(mean(g.map((s) => s.open)))
        c.again.push(mean(g.map((s) => s.again)))
      }
      line.push(`${x.key} ${fmt(mean(g.map((s) => s.observe)), 2)}`)
    }
    log(`cold observe ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (ms): ${line.join(', ')}`)
  }

  // ---- (3, diagnostic) a cold observe's two reads at the adapter level ----
  const probes = new Map<VariantKey, AdapterProbe>()
  for (const v of VARIANTS) probes.set(v.key, await call(page, 'adapterProbe', v.key, CONFIG.primitiveSamples))

  // ---- (1) batched appends, in the stores opened again ----
  const reopenMs = await call(page, 'openAll')
  log(`stores opened again (ms): ${VARIANTS.map((v) => `${v.key} ${fmt(reopenMs[v.key], 0)}`).join(', ')}`)
  const appendEvents = CONFIG.batches * CONFIG.batch
  const appendRuns = await runRounds(VARIANTS.map((v) => ({ key: v.key, run: () => call(page, 'appendRun', v.key) })), CONFIG.appendRounds, appendEvents, log, fmt)
  await call(page, 'closeAll')

  // ---- (diagnostic) the codec's steps on one frame ----
  const primitives = await call(page, 'primitives', CONFIG.batch, CONFIG.primitiveSamples)
  log(`codec steps timed on one frame of ${CONFIG.batch} events`)
  const warnings = await call(page, 'warnings')
  return { chromium: chromiumVersion, info, openMs, writes, appendRuns, readRuns, cold, probes, primitives, warnings, problems }
}

async function main(): Promise<void> {
  checkSettings(CONFIG)
  const started = performance.now()
  const source = sourceState()
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`)
  const tmp = fs.mkdtempSync(join(os.tmpdir(), 'sessionfold-bench-codec-browser-'))
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

  let m: Measured
  try {
    server = await createServer({
      configFile: false,
      root: join(REPO, 'bench/codec-browser'),
      cacheDir: join(tmp, 'vite'),
      logLevel: 'warn',
      clearScreen: false,
      resolve: {
        alias: [
          { find: 'sessionfold/worker', replacement: join(REPO, 'src/host/entry/serve-browser.ts') },
          { find: /^sessionfold$/, replacement: join(REPO, 'src/index-browser.ts') },
        ],
      },
      // Everything the page and the worker import, optimised up front: a dependency found late
      // would make vite reload the page in the middle of the run.
      optimizeDeps: { entries: ['index.html'], include: ['comlink', 'idb', 'zod'] },
      // No file watching: source edited while the benchmark runs must not reload the page.
      server: { host: '127.0.0.1', port: 0, hmr: false, watch: null, fs: { allow: [REPO] } },
    })
    await server.listen()
    const address = server.httpServer?.address()
    if (!address || typeof address === 'string') throw new Error('vite did not listen on a port')
    const url = `http://127.0.0.1:${address.port}/index.html`
    const profile = join(tmp, 'profile')
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS })
    const chromiumVersion = context.browser()?.version() ?? ''
    const page = context.pages()[0] ?? (await context.newPage())
    const problems: string[] = []
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
    log(`vite on ${url}, Chromium ${chromiumVersion}, profile (IndexedDB on disk) in ${profile}`)
    await page.goto(url)
    await page.waitForFunction(() => typeof (window as unknown as { codecBench?: unknown }).codecBench === 'object', null, { timeout: CONFIG.stallMs })
    m = await measure(page, chromiumVersion, problems)
  } finally {
    await cleanup()
  }
  report(m, source, (performance.now() - started) / 1000)
}

// ---- report -------------------------------------------------------------------------------

function report(m: Measured, source: ReturnType<typeof sourceState>, totalSeconds: number): void {
  const aS = new Map(VARIANTS.map((v) => [v.key, summarize(m.appendRuns.get(v.key)!)]))
  const rS = new Map(VARIANTS.map((v) => [v.key, summarize(m.readRuns.get(v.key)!)]))
  const oS = new Map(OPENS.map((x) => [x.key, summarize(m.cold.get(x.key)!.observe)]))
  const openS = new Map(OPENS.map((x) => [x.key, summarize(m.cold.get(x.key)!.open)]))
  const againS = new Map(OPENS.map((x) => [x.key, summarize(m.cold.get(x.key)!.again)]))
  const control = summarize(pairRatios(oS.get('control')!.samples, oS.get('plain')!.samples))

  const near = (id: string, figure: string, what: string, a: Summary, b: Summary, judge?: { tolerance: number; noise: Summary }): HeadlineRatio =>
    nearOne(headlineRatio(id, figure, LAYER, what, a, b), judge)
  const appendFigure = `Chromium: durable batched appends (${CONFIG.batches} × ${CONFIG.batch} events of ~${CONFIG.eventBytes} B), events/s`
  const readFigure = `Chromium: full read of a ${fmt(CONFIG.readEvents, 0)}-event session (view.events() on store.observe(id)), events/s`
  const openFigure = `Chromium: cold store.observe(id) of a ${fmt(CONFIG.readEvents, 0)}-event session with its checkpoint row, in a freshly opened store`
  const headline: HeadlineRatio[] = [
    headlineRatio('browser-append-sealed', `${appendFigure}: encryption + deflate vs neither`, LAYER, 'sealed events/s ÷ plain events/s', aS.get('sealed')!, aS.get('plain')!, { atLeast: TARGETS.append }),
    headlineRatio('browser-append-deflate', `${appendFigure}: deflate only vs neither`, LAYER, 'deflate events/s ÷ plain events/s', aS.get('deflate')!, aS.get('plain')!),
    headlineRatio('browser-append-sealed-raw', `${appendFigure}: encryption only (diagnostic) vs neither`, LAYER, 'sealedRaw events/s ÷ plain events/s', aS.get('sealedRaw')!, aS.get('plain')!),
    headlineRatio('browser-read-sealed', `${readFigure}: encryption + deflate vs neither`, LAYER, 'sealed events/s ÷ plain events/s', rS.get('sealed')!, rS.get('plain')!, { atLeast: TARGETS.read }),
    headlineRatio('browser-read-deflate', `${readFigure}: deflate only vs neither`, LAYER, 'deflate events/s ÷ plain events/s', rS.get('deflate')!, rS.get('plain')!),
    headlineRatio('browser-read-sealed-raw', `${readFigure}: encryption only (diagnostic) vs neither`, LAYER, 'sealedRaw events/s ÷ plain events/s', rS.get('sealedRaw')!, rS.get('plain')!),
    near('browser-open-sealed', `${openFigure}: encryption + deflate vs neither`, 'time sealed ÷ time plain', oS.get('sealed')!, oS.get('plain')!, { tolerance: TARGETS.openTolerance, noise: control }),
    near('browser-open-control', `${openFigure}: the plain database again vs itself (control: the noise)`, 'time plain ÷ time plain', oS.get('control')!, oS.get('plain')!),
    near('browser-open-again-sealed', `(information) store.observe(id) again in the same fresh store, ${CONFIG.reobserves} times after the first (median): encryption + deflate vs neither`,
      'time sealed ÷ time plain', againS.get('sealed')!, againS.get('plain')!),
  ]

  const kib = (b: number) => (b < 0 ? '?' : fmt(b / 1024, 0))
  const cpu = os.cpus()
  console.log('')
  console.log(`sessionfold record codec in Chromium ${m.chromium}: ${LAYER}; source ${source.commit ?? '?'}${source.dirty?.length ? ` (+${source.dirty.length} uncommitted files)` : ''}`)
  console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${cpu.length} cpus (${cpu[0]?.model ?? '?'}); page: ${m.info.hardwareConcurrency} cores, crossOriginIsolated ${m.info.crossOriginIsolated} ` +
    `(performance.now() coarsened to 0.1 ms when false); profile under ${os.tmpdir()}`)
  console.log('figures: median (min–max) over rounds; ratios are per round (runs of the same round), median (min–max)')
  console.log('')
  console.log(`(1) Durable batched appends, events/s: ${CONFIG.batches} batches of ${CONFIG.batch} events of ~${CONFIG.eventBytes} B, each awaited, ${CONFIG.settleMs} ms idle before each run; ${CONFIG.appendRounds} rounds`)
  const plainBatchMs = (1000 * CONFIG.batch) / aS.get('plain')!.median
  printTable(['variant', 'events/s median (min–max)', 'ms per batch (of the median)', 'vs plain, ms per batch'], VARIANTS.map((v) => {
    const perBatch = (1000 * CONFIG.batch) / aS.get(v.key)!.median
    return [v.label, fmtSummary(aS.get(v.key)!, 0), fmt(perBatch, 2), v.key === 'plain' ? '' : `${perBatch >= plainBatchMs ? '+' : ''}${fmt(perBatch - plainBatchMs, 2)}`]
  }), ['left', 'right', 'right', 'right'])
  console.log('')
  console.log(`(2) Full read, events/s: view.events() of a ${fmt(CONFIG.readEvents, 0)}-event session (written ${CONFIG.batch} per append, closed); ${CONFIG.readRepeats * 2} runs per variant per round, ${CONFIG.rounds} rounds`)
  const plainReadMs = (1000 * CONFIG.batch) / rS.get('plain')!.median
  printTable(['variant', 'events/s median (min–max)', `ms per ${CONFIG.batch} events`, `vs plain, ms per ${CONFIG.batch} events`, 'written in, s'], VARIANTS.map((v) => {
    const per = (1000 * CONFIG.batch) / rS.get(v.key)!.median
    return [v.label, fmtSummary(rS.get(v.key)!, 0), fmt(per, 3), v.key === 'plain' ? '' : `${per >= plainReadMs ? '+' : ''}${fmt(per - plainReadMs, 3)}`, fmt(m.writes.get(v.key)!.ms / 1000, 1)]
  }), ['left', 'right', 'right', 'right', 'right'])
  console.log('')
  console.log(`(3) Cold open, ms: a fresh openStore() in the page (a new worker), then store.observe(id) of the ${fmt(CONFIG.readEvents, 0)}-event session; ${CONFIG.opens * 2} fresh stores per variant per round (their mean), ${CONFIG.rounds} rounds`)
  printTable(['variant', 'first observe ms median (min–max)', `(information) ${CONFIG.reobserves} observes after it, their median`, '(information) openStore ms'],
    OPENS.map((x) => [x.label, fmtSummary(oS.get(x.key)!, 2), fmtSummary(againS.get(x.key)!, 2), fmtSummary(openS.get(x.key)!, 0)]), ['left', 'right', 'right', 'right'])
  console.log(`  (diagnostic) a cold observe reads the session's header and its checkpoint row; the same two reads in the page's thread (no store open), ` +
    `the IndexedDB adapter alone and through the codec (openSealed over it), ms per call, median of ${CONFIG.primitiveSamples} samples:`)
  printTable(['  variant', 'header as stored, chars', 'checkpoint row as stored, chars', 'getSession: adapter / codec', 'getCheckpoint: adapter / codec', 'codec adds, ms'], VARIANTS.map((v) => {
    const p = m.probes.get(v.key)!
    const added = p.codec.getSession - p.inner.getSession + p.codec.getCheckpoint - p.inner.getCheckpoint
    return [`  ${v.label}`, `${fmt(p.headerChars, 0)}${p.headerSealed ? ' (sealed)' : ''}`, `${fmt(p.checkpointChars, 0)}${p.checkpointSealed ? ' (sealed)' : ''}`,
      `${fmt(p.inner.getSession, 3)} / ${fmt(p.codec.getSession, 3)}`, `${fmt(p.inner.getCheckpoint, 3)} / ${fmt(p.codec.getCheckpoint, 3)}`, fmt(added, 3)]
  }), ['left', 'right', 'right', 'right', 'right', 'right'])
  console.log('')
  console.log(`(4) (information) Storage: navigator.storage.estimate() around writing each variant's ${fmt(CONFIG.readEvents, 0)}-event session (one after another, ${CONFIG.settleMs} ms idle after each), KiB`)
  printTable(['variant', 'usage before', 'usage after', 'usage Δ', 'indexedDB Δ', 'usage Δ per event, B'], VARIANTS.map((v) => {
    const w = m.writes.get(v.key)!
    const idb = w.before.indexedDB >= 0 && w.after.indexedDB >= 0 ? w.after.indexedDB - w.before.indexedDB : -1
    return [v.label, kib(w.before.usage), kib(w.after.usage), kib(w.after.usage - w.before.usage), idb < 0 ? '?' : kib(idb), fmt((w.after.usage - w.before.usage) / CONFIG.readEvents, 0)]
  }), ['left', 'right', 'right', 'right', 'right', 'right'])
  console.log("  the sizes of the origin's LevelDB files (write-ahead log, Snappy-compressed tables, compacted in the background): rough; bench/codec.ts measures stored bytes.")
  console.log('')
  const p = m.primitives
  console.log(`(diagnostic) The codec's steps on one frame (${p.frame.events} events, ${fmt(p.frame.jsonBytes, 0)} B of JSON, deflated to ${fmt(p.frame.deflatedBytes, 0)} B; ` +
    `stored unit as base64: deflate ${fmt(p.frame.unitBase64.deflate, 0)}, sealed ${fmt(p.frame.unitBase64.sealed, 0)}, sealedRaw ${fmt(p.frame.unitBase64.sealedRaw, 0)} chars), ` +
    `timed in the page's thread; median of ${CONFIG.primitiveSamples} samples`)
  printTable(['step', 'ms per call'], p.steps.map((s) => [s.step, fmt(s.ms, 3)]), ['left', 'right'])
  console.log(`  one append of ${CONFIG.batch} events is one frame: the whole seal above is what the worker adds to each batch before its IndexedDB transaction; a read opens one frame per ${CONFIG.batch} events.`)
  console.log("  (alt) rows are not what the codec does: where the stream's time goes, and the platform's other ways to the same bytes.")
  console.log('')
  console.log('Headline figures')
  printTable(['figure', 'ratio', 'per round median (min–max)', 'of medians', 'target', 'result'],
    headline.map((x) => [x.figure, x.ratio, fmtSummary(x.perRound, 3), fmt(x.ofMedians, 3), x.target || '(information)', x.result]),
    ['left', 'left', 'right', 'right', 'right', 'left'])
  const issues = [...m.problems, ...m.warnings.filter((w) => !m.problems.some((p2) => p2.includes(w.replace(/^(warn|error): /, ''))))]
  if (issues.length > 0) {
    console.log('')
    console.log(`page warnings and errors (${issues.length}):`)
    for (const w of issues.slice(0, 10)) console.log(`  ${w}`)
  }
  console.log('')
  console.log(`total ${fmt(totalSeconds, 1)} s`)

  const results = {
    benchmark: 'codec-browser',
    date: new Date().toISOString(),
    source,
    environment: {
      node: process.version, chromium: m.chromium, userAgent: m.info.userAgent, platform: os.platform(), arch: os.arch(), cpus: cpu.length, cpuModel: cpu[0]?.model,
      pageCores: m.info.hardwareConcurrency, crossOriginIsolated: m.info.crossOriginIsolated, tmpdir: os.tmpdir(),
    },
    config: CONFIG,
    targets: TARGETS,
    layer: LAYER,
    variants: VARIANTS.map((v) => ({ key: v.key, label: v.label })),
    headline,
    append: { unit: 'events/s', events: CONFIG.batches * CONFIG.batch, ...Object.fromEntries(aS) },
    read: { unit: 'events/s', events: CONFIG.readEvents, writeMs: Object.fromEntries([...m.writes].map(([k, w]) => [k, w.ms])), ...Object.fromEntries(rS) },
    coldOpen: { unit: 'ms', observe: Object.fromEntries(oS), again: Object.fromEntries(againS), openStore: Object.fromEntries(openS), control, firstOpenMs: m.openMs, adapterProbe: Object.fromEntries(m.probes) },
    storage: { unit: 'bytes', note: 'navigator.storage.estimate() before and after writing each read session', ...Object.fromEntries([...m.writes].map(([k, w]) => [k, { before: w.before, after: w.after }])) },
    primitives: m.primitives,
    warnings: issues,
    totalSeconds,
  }
  const out = resultsPath('codec-browser')
  fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`results written to ${out}`)
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
