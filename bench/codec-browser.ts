// The record codec in Chromium (npm run bench:codec-browser): the Chromium half of bench/codec.ts,
// on the page's own openStore() in headless Chromium (IndexedDB on disk, the engine in its module
// Web Worker, strict). Vite serves bench/codec-browser/ (page.ts takes the samples); this file drives
// the page one call at a time. Variants: plain, deflate (CompressionStream), sealed (WebCrypto
// AES-GCM + deflate), sealedRaw (diagnostic: a key, compression 'none').
//   (1) durable batched appends of ~300 B messages, events/s against plain.
//   (2) a full read (view.events() on store.observe(id)), events/s against plain.
//   (3) cold open: a fresh openStore() in the page, then store.observe(id) of the (2) session,
//       sealed against plain, with a plain-again control (the noise); for information, more observes.
//   (4) (information) navigator.storage.estimate() around writing each variant's session; and
//       (diagnostic) the codec's steps on one frame, timed in the page's thread.
// The cold opens run before the appends (whose background compaction would land on them). Ratios
// pair runs of the same round (rotating), after a warm-up round. Settings: BENCH_CODEC_BROWSER_BATCHES,
// _APPEND_ROUNDS, _SETTLE_MS, _READ_EVENTS, _ROUNDS, _READ_REPEATS, _OPENS, _REOBSERVES,
// _PRIMITIVE_SAMPLES; CHROMIUM_PATH.
import * as fs from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { serveBenchPage } from './support/vite-page'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium'
import type { AdapterProbe, CodecPage, ColdOpen, PrimitiveResult, VariantKey, WriteResult } from './codec-browser/page'
import { messageInput, rotate, runRounds, sourceState } from './common'
import {
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  nearOne,
  type Figure,
  type HeadlineRatio,
  pairRatios,
  summarize,
  type Summary,
  settlesWithin,
} from './stats'

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

const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)

/** Rejects when `promise` has not settled within CONFIG.stallMs: a hang stops the benchmark instead of the machine. */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => settlesWithin(promise, what, CONFIG.stallMs)

/** Calls window.codecBench[name](...args) in the page (page.ts); the timing happens there. */
async function call<K extends keyof CodecPage>(page: Page, name: K, ...args: Parameters<CodecPage[K]>): Promise<Awaited<ReturnType<CodecPage[K]>>> {
  // An inline function only: tsx's __name helper is not in the page.
  const result = page.evaluate(
    ({ name, args }) => {
      const api = (window as unknown as { codecBench: Record<string, (...a: unknown[]) => unknown> }).codecBench
      return api[name]!(...args)
    },
    { name: name as string, args: args as unknown[] },
  )
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
  await call(page, 'setup', {
    stamp: Date.now().toString(36),
    inputJson: JSON.stringify(input),
    batch: CONFIG.batch,
    batches: CONFIG.batches,
    settleMs: CONFIG.settleMs,
  })
  const openMs = await call(page, 'openAll')
  log(`stores opened (ms): ${VARIANTS.map((v) => `${v.key} ${fmt(openMs[v.key], 0)}`).join(', ')}`)

  // ---- (4) and the (2) sessions: written first, in a new profile ----
  const writes = new Map<VariantKey, WriteResult>()
  for (const v of VARIANTS) {
    const w = await call(page, 'writeRead', v.key, CONFIG.readEvents)
    writes.set(v.key, w)
    log(
      `wrote the ${fmt(CONFIG.readEvents, 0)}-event read session in ${v.key} in ${fmt(w.ms / 1000, 1)} s; storage usage +${fmt((w.after.usage - w.before.usage) / 1024, 0)} KiB`,
    )
  }

  // ---- (2) full reads ----
  const readRuns = new Map<VariantKey, number[]>(VARIANTS.map((v) => [v.key, []]))
  for (let r = 0; r <= CONFIG.rounds; r++) {
    const order = rotate(VARIANTS, r)
    const ms = new Map<VariantKey, number>(VARIANTS.map((v) => [v.key, 0]))
    for (let k = 0; k < CONFIG.readRepeats; k++) {
      for (const v of [...order, ...[...order].reverse()])
        ms.set(v.key, ms.get(v.key)! + (CONFIG.readEvents / (await call(page, 'readRun', v.key, CONFIG.readEvents))) * 1000)
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
      for (const x of [...order, ...[...order].reverse()])
        got.get(x.key)!.push(await call(page, 'coldOpen', x.db, x.options, CONFIG.reobserves, CONFIG.readEvents))
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
  const appendRuns = await runRounds(
    VARIANTS.map((v) => ({ key: v.key, run: () => call(page, 'appendRun', v.key) })),
    CONFIG.appendRounds,
    appendEvents,
    log,
    fmt,
  )
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
    const served = await serveBenchPage('codec-browser', join(tmp, 'vite'))
    server = served.server
    const { url } = served
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
    headlineRatio(
      'browser-append-sealed',
      `${appendFigure}: encryption + deflate vs neither`,
      LAYER,
      'sealed events/s ÷ plain events/s',
      aS.get('sealed')!,
      aS.get('plain')!,
      { atLeast: TARGETS.append },
    ),
    headlineRatio(
      'browser-append-deflate',
      `${appendFigure}: deflate only vs neither`,
      LAYER,
      'deflate events/s ÷ plain events/s',
      aS.get('deflate')!,
      aS.get('plain')!,
    ),
    headlineRatio(
      'browser-append-sealed-raw',
      `${appendFigure}: encryption only (diagnostic) vs neither`,
      LAYER,
      'sealedRaw events/s ÷ plain events/s',
      aS.get('sealedRaw')!,
      aS.get('plain')!,
    ),
    headlineRatio(
      'browser-read-sealed',
      `${readFigure}: encryption + deflate vs neither`,
      LAYER,
      'sealed events/s ÷ plain events/s',
      rS.get('sealed')!,
      rS.get('plain')!,
      { atLeast: TARGETS.read },
    ),
    headlineRatio(
      'browser-read-deflate',
      `${readFigure}: deflate only vs neither`,
      LAYER,
      'deflate events/s ÷ plain events/s',
      rS.get('deflate')!,
      rS.get('plain')!,
    ),
    headlineRatio(
      'browser-read-sealed-raw',
      `${readFigure}: encryption only (diagnostic) vs neither`,
      LAYER,
      'sealedRaw events/s ÷ plain events/s',
      rS.get('sealedRaw')!,
      rS.get('plain')!,
    ),
    near('browser-open-sealed', `${openFigure}: encryption + deflate vs neither`, 'time sealed ÷ time plain', oS.get('sealed')!, oS.get('plain')!, {
      tolerance: TARGETS.openTolerance,
      noise: control,
    }),
    near(
      'browser-open-control',
      `${openFigure}: the plain database again vs itself (control: the noise)`,
      'time plain ÷ time plain',
      oS.get('control')!,
      oS.get('plain')!,
    ),
    near(
      'browser-open-again-sealed',
      `(information) store.observe(id) again in the same fresh store, ${CONFIG.reobserves} times after the first (median): encryption + deflate vs neither`,
      'time sealed ÷ time plain',
      againS.get('sealed')!,
      againS.get('plain')!,
    ),
  ]

  const issues = [...m.problems, ...m.warnings.filter((w) => !m.problems.some((p2) => p2.includes(w.replace(/^(warn|error): /, ''))))]
  for (const w of issues.slice(0, 10)) log(`page: ${w}`)
  finishBench(
    'codec-browser',
    `sessionfold record codec in Chromium ${m.chromium}: ${LAYER}`,
    [
      ...VARIANTS.map((v): Figure => [`batched appends, ${v.label}`, aS.get(v.key)!, 'events/s', 0]),
      ...VARIANTS.map((v): Figure => [`full read, ${v.label}`, rS.get(v.key)!, 'events/s', 0]),
      ...OPENS.map((x): Figure => [`cold observe in a fresh store, ${x.label}`, oS.get(x.key)!, 'ms', 2]),
    ],
    headline,
    {
      source,
      chromium: m.chromium,
      userAgent: m.info.userAgent,
      pageCores: m.info.hardwareConcurrency,
      crossOriginIsolated: m.info.crossOriginIsolated,
      config: CONFIG,
      targets: TARGETS,
      layer: LAYER,
      variants: VARIANTS.map((v) => ({ key: v.key, label: v.label })),
      headline,
      append: { unit: 'events/s', events: CONFIG.batches * CONFIG.batch, ...Object.fromEntries(aS) },
      read: { unit: 'events/s', events: CONFIG.readEvents, writeMs: Object.fromEntries([...m.writes].map(([k, w]) => [k, w.ms])), ...Object.fromEntries(rS) },
      coldOpen: {
        unit: 'ms',
        observe: Object.fromEntries(oS),
        again: Object.fromEntries(againS),
        openStore: Object.fromEntries(openS),
        control,
        firstOpenMs: m.openMs,
        adapterProbe: Object.fromEntries(m.probes),
      },
      storage: {
        unit: 'bytes',
        note: 'navigator.storage.estimate() before and after writing each read session',
        ...Object.fromEntries([...m.writes].map(([k, w]) => [k, { before: w.before, after: w.after }])),
      },
      primitives: m.primitives,
      warnings: issues,
      totalSeconds,
    },
  )
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
