// Append-to-listener latency for bench/client.ts (its part (1)): appends to a new session, each
// awaited, timed until a subscribe listener on the writing handle and on a second handle
// (store.observe) is first called with that seq or a later one.
import type { EventInput, Store } from '../../src/index-node'
import { TURN_END, TURN_START } from '../../src/core/units/payloads'
import { messageInput } from '../common'

/** Nearest-rank quantile of unsorted samples. */
export function quantile(values: ArrayLike<number>, q: number): number {
  const s = Float64Array.from(values).sort()
  if (s.length === 0) return Number.NaN
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!
}

export function mean(values: ArrayLike<number>): number {
  let sum = 0
  for (let i = 0; i < values.length; i++) sum += values[i]!
  return sum / values.length
}

interface Dist {
  median: number
  p99: number
  mean: number
  max: number
}

function dist(values: ArrayLike<number>): Dist {
  return { median: quantile(values, 0.5), p99: quantile(values, 0.99), mean: mean(values), max: quantile(values, 1) }
}

export type Durability = 'strict' | 'relaxed'

/**
 * stream: each append awaited, the next one called at once (the listener is not waited for);
 * an append counts as heard when a listener is first called with its seq or a later one.
 * lockstep: the next append is called once both listeners heard the previous one.
 * paced: as lockstep, then a pause of `paceMs` after the listeners heard (longer than the
 * projection view's 1 ms notify interval, so every append finds its subscribers quiet).
 */
export type Pacing = 'stream' | 'lockstep' | 'paced'

export interface LatencyVariant {
  key: string
  label: string
  worker: boolean
  durability: Durability
  /** turn: turn/start, turn/end alternating, heard on the `subagentTiming` key; message: ~300-byte events, heard through the whole-map subscribe. */
  kind: 'turn' | 'message'
  pacing: Pacing
  /** Has a target. */
  primary: boolean
}

export const LATENCY_VARIANTS: LatencyVariant[] = [
  {
    key: 'worker-strict',
    label: 'worker, fs strict, turn events, key subscribe',
    worker: true,
    durability: 'strict',
    kind: 'turn',
    pacing: 'stream',
    primary: true,
  },
  {
    key: 'worker-relaxed',
    label: 'worker, fs relaxed, turn events, key subscribe',
    worker: true,
    durability: 'relaxed',
    kind: 'turn',
    pacing: 'stream',
    primary: true,
  },
  {
    key: 'worker-strict-msg',
    label: 'worker, fs strict, 300 B messages, map subscribe',
    worker: true,
    durability: 'strict',
    kind: 'message',
    pacing: 'stream',
    primary: false,
  },
  {
    key: 'worker-relaxed-msg',
    label: 'worker, fs relaxed, 300 B messages, map subscribe',
    worker: true,
    durability: 'relaxed',
    kind: 'message',
    pacing: 'stream',
    primary: false,
  },
  {
    key: 'thread-strict',
    label: 'in this thread, fs strict, turn events, key subscribe',
    worker: false,
    durability: 'strict',
    kind: 'turn',
    pacing: 'stream',
    primary: false,
  },
  {
    key: 'thread-relaxed',
    label: 'in this thread, fs relaxed, turn events, key subscribe',
    worker: false,
    durability: 'relaxed',
    kind: 'turn',
    pacing: 'stream',
    primary: false,
  },
  {
    key: 'worker-relaxed-lockstep',
    label: 'worker, fs relaxed, turn events, lockstep*',
    worker: true,
    durability: 'relaxed',
    kind: 'turn',
    pacing: 'lockstep',
    primary: false,
  },
  {
    key: 'worker-strict-paced',
    label: 'worker, fs strict, turn events, paced*',
    worker: true,
    durability: 'strict',
    kind: 'turn',
    pacing: 'paced',
    primary: false,
  },
  {
    key: 'worker-relaxed-paced',
    label: 'worker, fs relaxed, turn events, paced*',
    worker: true,
    durability: 'relaxed',
    kind: 'turn',
    pacing: 'paced',
    primary: false,
  },
]

export interface LatencyRun {
  appends: number
  /** append() called → append() resolved. */
  append: Dist
  /** append() called → the writing handle's listener called with this seq or a later one. */
  same: Dist
  /** append() called → the observing handle's listener called with this seq or a later one. */
  observer: Dist
  /** Listener calls (after the first, at subscribe), per handle: fewer than appends when a burst is batched. */
  sameCalls: number
  observerCalls: number
  /** Listener calls whose seq did not advance (0 expected). */
  stray: number
  totalMs: number
}

/** Progress of the running latency run, for the stall watchdog. */
export const progress = { appends: 0 }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export async function runLatency(
  store: Store,
  kind: 'turn' | 'message',
  n: number,
  pacing: Pacing,
  cfg: { eventBytes: number; paceMs: number },
): Promise<LatencyRun> {
  const writer = await store.createSession()
  const observer = await store.observe(writer.id)
  const t0 = new Float64Array(n)
  const appendMs = new Float64Array(n)
  const sameMs = new Float64Array(n).fill(Number.NaN)
  const obsMs = new Float64Array(n).fill(Number.NaN)
  /** Appends called so far: seqs 0..issued-1 (a new session's first event is seq 0). */
  let issued = 0
  const heard = { same: -1, observer: -1 }
  const calls = { same: 0, observer: 0 }
  let stray = 0
  /** When both listeners last caught up with every append called. */
  let bothAt = 0
  let waiter: { seq: number; resolve: () => void } | undefined
  // A listener call at time t covers every append up to its seq not heard before.
  const hear = (which: 'same' | 'observer', out: Float64Array) => (seq: number) => {
    const t = performance.now()
    if (issued === 0) return // the current value, delivered at subscribe
    calls[which]++
    const top = Math.min(seq, issued - 1)
    if (top <= heard[which]) return void stray++
    for (let i = heard[which] + 1; i <= top; i++) out[i] = t - t0[i]!
    heard[which] = top
    const both = Math.min(heard.same, heard.observer)
    if (both === issued - 1) bothAt = t
    if (waiter && both >= waiter.seq) {
      const w = waiter
      waiter = undefined
      w.resolve()
    }
  }
  const untilHeard = (seq: number): Promise<void> | undefined =>
    Math.min(heard.same, heard.observer) >= seq ? undefined : new Promise<void>((resolve) => (waiter = { seq, resolve }))
  const onSame = hear('same', sameMs)
  const onObs = hear('observer', obsMs)
  const unsubscribe =
    kind === 'turn'
      ? [writer.projections.subscribe('subagentTiming', (_v, m) => onSame(m.seq)), observer.projections.subscribe('subagentTiming', (_v, m) => onObs(m.seq))]
      : [writer.projections.subscribe((s) => onSame(s.asOfSeq)), observer.projections.subscribe((s) => onObs(s.asOfSeq))]
  const inputs: EventInput[] = kind === 'turn' ? [{ type: TURN_START }, { type: TURN_END }] : [messageInput(cfg.eventBytes)]
  const start = performance.now()
  for (let i = 0; i < n; i++) {
    if (pacing !== 'stream' && i > 0) {
      await untilHeard(i - 1)
      if (pacing === 'paced') {
        const wait = bothAt + cfg.paceMs - performance.now()
        if (wait > 0) await sleep(wait)
      }
    }
    const input = inputs[i % inputs.length]!
    t0[i] = performance.now()
    issued = i + 1
    const result = await writer.append(input)
    appendMs[i] = performance.now() - t0[i]!
    if (result.firstSeq !== i || result.lastSeq !== i) throw new Error(`latency run: append ${i} got seqs ${result.firstSeq}..${result.lastSeq}`)
    progress.appends++
  }
  await untilHeard(n - 1)
  const totalMs = performance.now() - start
  for (const u of unsubscribe) u()
  await observer.close()
  await writer.close()
  await store.deleteSession(writer.id)
  return {
    appends: n,
    append: dist(appendMs),
    same: dist(sameMs),
    observer: dist(obsMs),
    sameCalls: calls.same,
    observerCalls: calls.observer,
    stray,
    totalMs,
  }
}
