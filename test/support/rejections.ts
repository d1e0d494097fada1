// Setup of every Node test file (vitest.config.ts, setupFiles): a test fails, by name, on an
// unhandled rejection it caused in this process, on the failure of a worker thread it started
// (an engine's: an unhandled rejection there ends the thread), and on an unhandled rejection in
// any Node process it ran (the CLI, fixtures, their worker threads). Vitest alone fails only
// the run, naming no test, for errors of its own process, and sees nothing of threads it did
// not start or of other processes.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Worker } from 'node:worker_threads'
import { afterAll, afterEach, expect } from 'vitest'

/** Where children write what they saw (child-rejections.mjs), and the env names they read. */
export const LEAKS_DIR_ENV = 'SESSIONFOLD_TEST_REJECTIONS'
export const CHILD_HOOK = pathToFileURL(join(import.meta.dirname, 'child-rejections.mjs')).href

interface Leak {
  test: string | undefined
  what: string
  detail: string
}

const leaks: Leak[] = []
const currentTest = () => expect.getState().currentTestName

/** An error as it is worth reading: its stack (or text), and the driver's or our code. */
export function describeError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  const text = err instanceof Error ? (err.stack ?? `${err.name}: ${err.message}`) : String(err)
  return typeof code === 'string' && !text.includes(code) ? `[${code}] ${text}` : text
}

process.on('unhandledRejection', (reason) => {
  leaks.push({ test: currentTest(), what: 'an unhandled rejection in the test process', detail: describeError(reason) })
})
process.on('worker', (worker: Worker) => {
  const test = currentTest()
  worker.on('error', (err) =>
    leaks.push({ test, what: `worker thread ${worker.threadId} failed (an uncaught error or unhandled rejection in it)`, detail: describeError(err) }),
  )
})

// Node processes started from here load the hook (NODE_OPTIONS is inherited by children).
let dir = process.env[LEAKS_DIR_ENV]
if (!dir) {
  const made = mkdtempSync(join(tmpdir(), 'sessionfold-leaks-'))
  dir = process.env[LEAKS_DIR_ENV] = made
  process.once('exit', () => rmSync(made, { recursive: true, force: true }))
}
if (!process.env.NODE_OPTIONS?.includes(CHILD_HOOK)) {
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--import=${CHILD_HOOK}`].filter(Boolean).join(' ')
}

/** Lines of each child's file already reported. */
const read = new Map<string, number>()

function childLeaks(): Leak[] {
  const out: Leak[] = []
  let names: string[]
  try {
    names = readdirSync(dir!)
  } catch {
    return out
  }
  for (const name of names) {
    const lines = readFileSync(join(dir!, name), 'utf8').split('\n')
    lines.pop() // an unterminated last line is still being written
    for (const line of lines.slice(read.get(name) ?? 0)) {
      const r = JSON.parse(line) as { pid: number; argv: string; what: string; detail: string }
      out.push({ test: currentTest(), what: `${r.what} in child process ${r.pid} (${r.argv})`, detail: r.detail })
    }
    read.set(name, lines.length)
  }
  return out
}

async function check(): Promise<void> {
  // A rejection is reported once the turn that made it has run its microtasks: wait for that.
  await new Promise((resolve) => setImmediate(resolve))
  const found = [...leaks.splice(0), ...childLeaks()]
  if (found.length === 0) return
  throw new Error(`${found.length} unhandled failure(s):\n\n${found.map((l) => `${l.what}${l.test ? `, during "${l.test}"` : ''}:\n${l.detail}`).join('\n\n')}`)
}

afterEach(check)
afterAll(check)
