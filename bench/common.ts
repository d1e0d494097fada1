// What the benchmarks share (bench/client.ts, bench/api.ts, bench/storage.ts): the ~300-byte
// message event they append, the rotation of variants from round to round, the state of the
// source measured, and the raw disk limit their appends are held against.
import { execFileSync } from 'node:child_process'
import * as fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { EventInput } from '../src/index-node'

/** The commit measured, and whether src/, worker/ or adapters/ differ from it (other work in progress). */
export function sourceState(): { commit?: string; dirty?: string[] } {
  try {
    const cwd = fileURLToPath(new URL('..', import.meta.url))
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'worker', 'adapters'], { cwd, encoding: 'utf8' })
      .split('\n').filter(Boolean).map((l) => l.slice(3))
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

const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '

/** A message input whose stored JSON ({"seq",type,time,data}, 5-digit seq, 13-digit time) is `bytes` long. */
export function messageInput(bytes: number): EventInput {
  const stored = (text: string) => JSON.stringify({ seq: 10_000, type: 'message/assistant', time: 1_700_000_000_000, data: { role: 'assistant', text } }).length
  const n = bytes - stored('')
  return { type: 'message/assistant', data: { role: 'assistant', text: WORDS.repeat(Math.ceil(n / WORDS.length)).slice(0, n) } }
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
      let done = 0
      while (done < buf.length) done += fs.writeSync(fd, buf, done, buf.length - done)
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
