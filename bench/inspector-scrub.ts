// Time travel in Chromium, as a person scrubs: the inspector page (examples/inspector) over a
// 100,000-event sample session in the page's own store (IndexedDB, the engine in a Web Worker).
// Each sample is one move of the timeline, from the input event to the page showing the values,
// tree and events position of that point (store.observe(id, { at }) and its listChildren). The
// baseline, in the same run and page: a move to the end, which shows the live values (no read
// as of a point), so the ratio is what time travel adds to the page's own work.
// `npm run bench:inspector` (BENCH_INSPECTOR_EVENTS, BENCH_INSPECTOR_MOVES).
import fs from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium'
import { serveExample } from '../test/support/vite'
import { env, fmt, median, printTable, resultsPath } from './stats'

const EVENTS = env('BENCH_INSPECTOR_EVENTS', 100_000)
const MOVES = env('BENCH_INSPECTOR_MOVES', 80)
const log = (msg: string) => process.stderr.write(`${msg}\n`)

const quantile = (xs: readonly number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!
}

async function main(): Promise<void> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`)
  const { server, base } = await serveExample('inspector', 'inspector-bench')
  const profile = await mkdtemp(join(os.tmpdir(), 'sessionfold-inspector-bench-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 820 },
  })
  try {
    const page = await context.newPage()
    await page.goto(`${base}/`)
    await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 })
    type W = {
      inspector: { makeSample(n: number): Promise<string>; open(id: string): Promise<void>; scrubTo(at: number): Promise<number>; current: { length: number } }
    }
    const seeded = performance.now()
    const id = await page.evaluate((n) => (window as unknown as W).inspector.makeSample(n), EVENTS)
    log(`sample session of ${EVENTS} events written in ${fmt((performance.now() - seeded) / 1000, 1)} s`)
    await page.evaluate((id) => (window as unknown as W).inspector.open(id), id)
    const length = await page.evaluate(() => (window as unknown as W).inspector.current.length)
    // Random points (a fixed sequence, so runs compare), each followed by a move to the end.
    let seed = 42
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const travel: number[] = []
    const end: number[] = []
    for (let i = 0; i < MOVES + 5; i++) {
      const at = 1 + Math.floor(next() * (length - 2))
      const a = await page.evaluate((at) => (window as unknown as W).inspector.scrubTo(at), at)
      const b = await page.evaluate((at) => (window as unknown as W).inspector.scrubTo(at), length)
      if (i < 5) continue // warm-up
      travel.push(a)
      end.push(b)
    }
    const rows = [
      ['a move to a random point (store.observe(id, { at }) + listChildren)', fmt(median(travel), 1), fmt(quantile(travel, 0.99), 1)],
      ['baseline: a move to the end (live values, no read as of a point)', fmt(median(end), 1), fmt(quantile(end, 0.99), 1)],
    ]
    printTable(['from a timeline move to the page showing it (ms)', 'median', 'p99'], rows, ['left', 'right', 'right'])
    const ratio = median(travel) / median(end)
    console.log(`\nratio of medians (time travel ÷ baseline): ${fmt(ratio, 2)}; ${MOVES} moves over ${length} events`)
    const results = {
      benchmark: 'inspector-scrub',
      date: new Date().toISOString(),
      layer: "the inspector page's own store: openStore() in Chromium (IndexedDB, engine in a module Web Worker)",
      environment: { node: process.version, cpus: os.cpus().length, chromium: context.browser()?.version() ?? 'unknown' },
      config: { events: length, moves: MOVES },
      travel: { median: median(travel), p99: quantile(travel, 0.99), samples: travel },
      end: { median: median(end), p99: quantile(end, 0.99), samples: end },
      ratio,
    }
    fs.writeFileSync(resultsPath('inspector'), `${JSON.stringify(results, null, 1)}\n`)
  } finally {
    await context.close()
    await server.close()
    await rm(profile, { recursive: true, force: true })
  }
}

await main()
