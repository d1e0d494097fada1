// What the benchmarks share (bench/client.ts, bench/api.ts, bench/storage.ts): the ~300-byte
// message event they append, the rotation of variants from round to round, the state of the
// source measured, and the raw disk limit their appends are held against.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { AppendResult, EventInput, Store } from '../src/index-node'
import { settlesWithin } from './stats'

/** The commit measured, and whether src/, worker/ or adapters/ differ from it (other work in progress). */
export function sourceState(): { commit?: string; dirty?: string[] } {
  try {
    const cwd = fileURLToPath(new URL('..', import.meta.url))
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'worker', 'adapters'], { cwd, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3))
    return { commit, dirty }
  } catch {
    return {}
  }
}

/** Rotates `items` by `r` places: each round starts with a different variant. */
export function rotate<T>(items: readonly T[], r: number): T[] {
  const k = r % items.length
  return [...items.slice(k), ...items.slice(0, k)]
}

/** Runs steps in the given order, or reversed on odd rounds, so drift favours no side. */
export async function alternate(round: number, steps: (() => Promise<void>)[]): Promise<void> {
  for (const step of round % 2 === 0 ? steps : [...steps].reverse()) await step()
}

/**
 * Rounds of throughput runs: round 0 a warm-up (not recorded), then `rounds` rounds, each
 * running every variant twice in an order that rotates from round to round and back (A B C …
 * C B A), so that drift on a shared machine falls on all alike. `run` returns events/s for
 * `events` events; each round records the rate over both runs of a variant. The per-round
 * rates of each variant, by key.
 */
export async function runRounds(
  variants: readonly { key: string; run: () => Promise<number> }[],
  rounds: number,
  events: number,
  log: (line: string) => void,
  fmt: (v: number, digits: number) => string,
): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>(variants.map((x) => [x.key, []]))
  for (let r = 0; r <= rounds; r++) {
    const warmUp = r === 0
    const order = rotate(variants, r)
    const ms = new Map<string, number>(variants.map((x) => [x.key, 0]))
    for (const x of [...order, ...[...order].reverse()]) ms.set(x.key, ms.get(x.key)! + (events / (await x.run())) * 1000)
    const line: string[] = []
    for (const x of variants) {
      const v = ((2 * events) / ms.get(x.key)!) * 1000
      if (!warmUp) out.get(x.key)!.push(v)
      line.push(`${x.key} ${fmt(v, 0)}`)
    }
    log(`batched ${warmUp ? 'warm-up' : `round ${r}/${rounds}`} (events/s): ${line.join(', ')}`)
  }
  return out
}

const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '

/** A message input whose stored JSON ({"seq",type,time,data}, 5-digit seq, 13-digit time) is `bytes` long. */
export function messageInput(bytes: number): EventInput {
  const stored = (text: string) => JSON.stringify({ seq: 10_000, type: 'message/assistant', time: 1_700_000_000_000, data: { role: 'assistant', text } }).length
  const n = bytes - stored('')
  return { type: 'message/assistant', data: { role: 'assistant', text: WORDS.repeat(Math.ceil(n / WORDS.length)).slice(0, n) } }
}

/** Writes all of `buf` to `fd` at `position` (at the file's end when omitted), however many writes it takes. */
export function writeAllSync(fd: number, buf: Buffer, position?: number): void {
  let done = 0
  while (done < buf.length) done += fs.writeSync(fd, buf, done, buf.length - done, position === undefined ? null : position + done)
}

/**
 * The raw limit: `bufs` written with writeSync + fsyncSync one after another into a new file at
 * `path` (checked for its size, then removed); the ms it took, open and close excluded.
 */
export function rawWriteFsync(path: string, bufs: readonly Buffer[]): number {
  const fd = fs.openSync(path, 'w')
  let ms: number
  try {
    const t0 = performance.now()
    for (const buf of bufs) {
      writeAllSync(fd, buf)
      fs.fsyncSync(fd)
    }
    ms = performance.now() - t0
  } finally {
    fs.closeSync(fd)
  }
  const size = fs.statSync(path).size
  const expected = bufs.reduce((n, b) => n + b.length, 0)
  if (size !== expected) throw new Error(`raw file holds ${size} bytes, expected ${expected}`)
  fs.unlinkSync(path)
  return ms
}

/**
 * Appends `batches` one after another to a new session (each append bounded by `stallMs` when
 * given), checks the last seq, deletes the session; events/s.
 */
export async function runBatched(store: Store, batches: readonly EventInput[][], stallMs?: number): Promise<number> {
  const session = await store.createSession()
  const events = batches.reduce((k, b) => k + b.length, 0)
  let last: AppendResult | undefined
  const t0 = performance.now()
  for (const b of batches) last = await (stallMs === undefined ? session.append(b) : settlesWithin(session.append(b), 'a batched append', stallMs))
  const ms = performance.now() - t0
  if (last?.lastSeq !== events - 1) throw new Error(`batched run: last seq ${last?.lastSeq}, expected ${events - 1}`)
  await session.close()
  await store.deleteSession(session.id)
  return (events / ms) * 1000
}
