// What the browser benchmark's page parts share (bench/browser/bench.ts, ./latency.ts): the
// events they write, the page's clock and log, and waits on a handle's catalog.
import type { EventInput, Json, SessionView } from 'sessionfold'

export const CATALOG = 'subagent/catalog'
export const TIME0 = 1_700_000_000_000
const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '
export const WAIT_MS = 20_000

export const warnings: string[] = []
for (const level of ['warn', 'error'] as const) {
  const original = console[level].bind(console)
  console[level] = (...args: unknown[]) => {
    warnings.push(`${level}: ${args.map(String).join(' ')}`)
    original(...args)
  }
}

export const log = (msg: string) => console.log(`[bench] ${msg}`)
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
export const now = () => performance.now()

// ---- events -------------------------------------------------------------------------------

export interface StoredEvent {
  seq: number
  type: string
  time: number
  data: Json
}

/** What Dexie stores: the event with its session id, the compound primary key [sessionId+seq]. */
export interface DexieEvent extends StoredEvent {
  sessionId: string
}

/** Pads so an event with a 5-digit seq encodes to `bytes` of JSON, as sessionfold stores it. */
export function padFor(bytes: number): string {
  const base = JSON.stringify({ seq: 10_000, type: 'message/assistant', time: TIME0, data: { role: 'assistant', text: '' } }).length
  const n = Math.max(0, bytes - base)
  return WORDS.repeat(Math.ceil(n / WORDS.length) + 1).slice(0, n)
}

export function message(seq: number, pad: string): EventInput {
  return { type: 'message/assistant', time: TIME0 + seq, data: { role: 'assistant', text: pad } }
}

export function catalogFact(childId: string, time = Date.now()): EventInput {
  return { type: CATALOG, time, data: { v: 2, childId, childCreatedAt: 1, mode: 'one-shot' } }
}

export const stored = (seq: number, e: EventInput): StoredEvent => ({ seq, type: e.type, time: e.time ?? TIME0, data: e.data ?? null })

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

export const jsonBytes = (events: readonly StoredEvent[]) =>
  events.reduce((n, e) => n + new TextEncoder().encode(JSON.stringify(e)).length, 0) / Math.max(1, events.length)

/** Waits for a subscriber's entry count; the time is taken in the listener itself. */
export class Watcher {
  count = -1
  private waits: { n: number; resolve: (t: number) => void; timer: ReturnType<typeof setTimeout> }[] = []

  constructor(readonly label: string) {}

  see(n: number): void {
    const t = now()
    this.count = n
    this.waits = this.waits.filter((w) => {
      if (n < w.n) return true
      clearTimeout(w.timer)
      w.resolve(t)
      return false
    })
  }

  /** Resolves with the time the count first reached `n`. Call it before the write. */
  until(n: number): Promise<number> {
    if (this.count >= n) return Promise.resolve(now())
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: count stayed at ${this.count}, waited for ${n}`)), WAIT_MS)
      this.waits.push({ n, resolve, timer })
    })
  }
}

/**
 * Median ms of one call of `fn` over `n` samples; each sample repeats it for at least 5 ms
 * (the page's clock is coarse: 0.1 ms steps).
 */
export function medianTime(n: number, fn: () => unknown): number {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    let reps = 0
    const t0 = now()
    let t = t0
    do {
      fn()
      reps++
      t = now()
    } while (t - t0 < 5)
    times.push((t - t0) / reps)
  }
  return times.sort((a, b) => a - b)[n >> 1]!
}

export const catalogLength = (view: SessionView): number => view.projections.get('subagentCatalog')?.length ?? 0

/** Resolves once the handle's catalog holds `length` entries (or more). */
export function untilCatalogLength(view: SessionView, length: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false
    let unsubscribe: (() => void) | undefined
    const timer = setTimeout(() => {
      done = true
      unsubscribe?.()
      reject(new Error(`catalog stayed at ${catalogLength(view)} entries, waited for ${length}`))
    }, WAIT_MS)
    unsubscribe = view.projections.subscribe('subagentCatalog', (value) => {
      if (done || (value?.length ?? 0) < length) return
      done = true
      clearTimeout(timer)
      unsubscribe?.()
      resolve()
    })
    if (done) unsubscribe()
  })
}
