// Small helpers shared by the benchmarks: summaries of repeated samples and a plain-text table.
// Machines that run these are shared and noisy, so every figure is reported as the median of
// several runs with its min and max, and comparisons are ratios measured within one run.
import * as fs from 'node:fs'
import os from 'node:os'

export interface Summary {
  /** Number of samples. */
  n: number
  median: number
  min: number
  max: number
  /** The samples in the order they were taken. */
  samples: number[]
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export function min(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.min(...values)
}

export function max(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.max(...values)
}

export function summarize(samples: readonly number[]): Summary {
  return { n: samples.length, median: median(samples), min: min(samples), max: max(samples), samples: [...samples] }
}

/** Element-wise a[i] / b[i]: ratios of paired samples taken in the same round. */
export function pairRatios(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new Error(`pairRatios: ${a.length} samples vs ${b.length}`)
  return a.map((x, i) => x / b[i]!)
}

/** Times an async function: milliseconds and its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now()
  const value = await fn()
  return { ms: performance.now() - t0, value }
}

/** A number for a table: thousands separated, `digits` decimals below 100 (3 significant-ish figures). */
export function fmt(value: number, digits?: number): string {
  if (!Number.isFinite(value)) return String(value)
  const d = digits ?? (Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : Math.abs(value) >= 1 ? 2 : 3)
  return value.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })
}

/** "median (min–max)" of a summary. */
export function fmtSummary(s: Summary, digits?: number): string {
  return `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`
}

export type Align = 'left' | 'right'

/** Prints rows under headers with aligned columns; numbers-looking cells are right-aligned unless told. */
export function printTable(headers: readonly string[], rows: readonly (readonly string[])[], align?: readonly Align[]): void {
  console.log(formatTable(headers, rows, align))
}

export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[], align?: readonly Align[]): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)))
  const alignOf = (c: number): Align => align?.[c] ?? (c === 0 ? 'left' : 'right')
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (alignOf(c) === 'left' ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd()
  const rule = widths.map((w) => '-'.repeat(w)).join('  ')
  return [line(headers), rule, ...rows.map((r) => line(headers.map((_, c) => r[c] ?? '')))].join('\n')
}

/** A temp folder for one benchmark run; cleanup() removes it (and runs on Ctrl-C too). */
export async function benchRoot(prefix: string): Promise<{ root: string; cleanup: () => void }> {
  const { mkdtemp } = await import('node:fs/promises')
  const { rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const root = await mkdtemp(join(tmpdir(), prefix))
  let cleaned = false
  const cleanup = () => {
    if (cleaned) return
    cleaned = true
    rmSync(root, { recursive: true, force: true })
  }
  process.once('SIGINT', () => {
    cleanup()
    process.exit(130)
  })
  return { root, cleanup }
}

/** Every numeric setting (BENCH_* overrides included) must be a positive integer. */
/** A numeric setting from the environment (`BENCH_…`), or `fallback` when unset or empty. */
export function env(name: string, fallback: number): number {
  const v = process.env[name]
  return v === undefined || v === '' ? fallback : Number(v)
}

/** A headline ratio of the public API benchmarks (bench/api.ts, bench/postgres.ts), judged per round. */
export interface HeadlineRatio {
  id: string
  figure: string
  layer: string
  /** What is divided by what. */
  ratio: string
  /** Per-round ratios: each pairs runs of the same round. */
  perRound: Summary
  /** Ratio of the two medians, for comparison. */
  ofMedians: number
  /** '≥ 0.5', '≤ 2', or '' (information). */
  target: string
  pass: boolean | undefined
  result: 'PASS' | 'MISS' | ''
}

/** `a` ÷ `b` per round, judged on its median against `target` when there is one. */
export function headlineRatio(
  id: string,
  figure: string,
  layer: string,
  what: string,
  a: Summary,
  b: Summary,
  target?: { atLeast?: number; atMost?: number },
): HeadlineRatio {
  const perRound = summarize(pairRatios(a.samples, b.samples))
  const pass = target?.atLeast !== undefined ? perRound.median >= target.atLeast : target?.atMost !== undefined ? perRound.median <= target.atMost : undefined
  return {
    id,
    figure,
    layer,
    ratio: what,
    perRound,
    ofMedians: a.median / b.median,
    target: target?.atLeast !== undefined ? `≥ ${target.atLeast}` : target?.atMost !== undefined ? `≤ ${target.atMost}` : '',
    pass,
    result: pass === undefined ? '' : pass ? 'PASS' : 'MISS',
  }
}

/** `h` judged "unchanged within noise": its per-round median no further from 1 than `tolerance`, or than the control's (`noise`) when that is further. */
export function nearOne(h: HeadlineRatio, judge?: { tolerance: number; noise: Summary }): HeadlineRatio {
  if (judge === undefined) return h
  const band = Math.max(judge.tolerance, Math.abs(judge.noise.median - 1))
  const pass = h.perRound.median >= 1 - band && h.perRound.median <= 1 + band
  return { ...h, target: `≈ 1 (${fmt(1 - band, 2)}–${fmt(1 + band, 2)})`, pass, result: pass ? 'PASS' : 'MISS' }
}

export function checkSettings(config: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(config)) {
    if (typeof v === 'number' && !(Number.isSafeInteger(v) && v > 0)) throw new Error(`bad setting ${k}=${v}`)
  }
}

/**
 * Where a benchmark writes its results: bench/results-<name>.json, or BENCH_OUT when set (the
 * full suite, bench/all.ts, runs some benchmarks several times with different settings).
 */
export function resultsPath(name: string): string {
  const out = process.env.BENCH_OUT
  return out !== undefined && out !== '' ? out : new URL(`./results-${name}.json`, import.meta.url).pathname
}

/** Rejects when `promise` has not settled within `ms`: a hang stops a benchmark instead of the machine. */
export async function settlesWithin<T>(promise: Promise<T>, what: string, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const stall = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`stalled: ${what} took more than ${ms / 1000} s`)), ms)
  })
  try {
    return await Promise.race([promise, stall])
  } finally {
    clearTimeout(timer)
  }
}

/** A ratio of two summaries taken in the same rounds, judged on its per-round median. */
export interface Ratio {
  name: string
  perRound: Summary
  ofMedians: number
  /** '≥ 0.7', '≤ 2', or '' (for information). */
  target: string
  result: 'PASS' | 'MISS' | ''
}

/** `a` ÷ `b` round by round (the rounds both ran in), judged against `target` when there is one. */
export function ratio(name: string, a: Summary, b: Summary, target?: { atLeast?: number; atMost?: number }): Ratio {
  const n = Math.min(a.samples.length, b.samples.length)
  const perRound = summarize(pairRatios(a.samples.slice(0, n), b.samples.slice(0, n)))
  const pass = target?.atLeast !== undefined ? perRound.median >= target.atLeast : target?.atMost !== undefined ? perRound.median <= target.atMost : undefined
  return {
    name,
    perRound,
    ofMedians: a.median / b.median,
    target: target?.atLeast !== undefined ? `≥ ${target.atLeast}` : target?.atMost !== undefined ? `≤ ${target.atMost}` : '',
    result: pass === undefined ? '' : pass ? 'PASS' : 'MISS',
  }
}

/** A measured figure for the printed summary: its label, its summary over the rounds, its unit. */
export type Figure = [label: string, s: Summary, unit: string, digits?: number]

/**
 * The end of every benchmark: its figures and its ratios as two tables on stdout, then
 * `results` (with the date and the machine added) written to resultsPath(name).
 */
export function finishBench(
  name: string,
  title: string,
  figures: readonly Figure[],
  ratios: readonly { name?: string; figure?: string; layer?: string; perRound: Summary; target?: string; result?: string }[],
  results: object,
): void {
  console.log(`\n${title}\nnode ${process.version}, ${os.cpus().length} cpus; figures: median (min–max) over the rounds; ratios: per round, median (min–max)\n`)
  if (figures.length > 0) {
    printTable(
      ['figure', 'runs', 'median (min–max)', 'unit'],
      figures.map(([label, s, unit, d]) => [label, String(s.n), fmtSummary(s, d), unit]),
    )
    console.log('')
  }
  printTable(
    ['ratio', 'per round: median (min–max)', 'target', 'result'],
    ratios.map((r) => [r.name ?? `${r.figure} (${r.layer})`, fmtSummary(r.perRound), r.target ?? '', r.result ?? '']),
  )
  const out = resultsPath(name)
  const environment = {
    node: process.version,
    platform: os.platform(),
    arch: os.arch(),
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    tmpdir: os.tmpdir(),
  }
  fs.writeFileSync(out, `${JSON.stringify({ benchmark: name, date: new Date().toISOString(), environment, ...results }, null, 2)}\n`)
  console.log(`\nresults written to ${out}`)
}
