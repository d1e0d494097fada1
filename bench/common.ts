// What the benchmarks that go through openStore share (bench/client.ts, bench/api.ts): the
// ~300-byte message event they append, the rotation of variants from round to round, and the
// state of the source measured.
import { execFileSync } from 'node:child_process'
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
