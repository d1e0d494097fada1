// Client: a Node process that never calls store.close() exits by itself, its acknowledged
// appends durable, and the next process takes the session over; a view following another
// process's appends keeps it up while it has listeners, and lets it exit after the last one.
// Real processes on real files, through the built package (dist/), with the default worker
// and with worker: false.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'

const script = fileURLToPath(new URL('../fixtures/no-close.mjs', import.meta.url))
let dir: string

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-exit-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

interface Run {
  /** Resolves with the exit code and everything printed, once the process exited by itself. */
  exited: Promise<{ code: number | null; signal: string | null; out: string; err: string }>
  /** Resolves once the process printed `line`. */
  printed(line: string): Promise<void>
  running(): boolean
  kill(): void
}

function run(...args: string[]): Run {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  let done = false
  const waiting: { line: string; resolve: () => void }[] = []
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d
    for (const w of waiting) if (out.split('\n').includes(w.line)) w.resolve()
  })
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
  // No timeout of its own: a process that never exits is what these tests look for, and the
  // test's timeout (with the message below) is what catches it.
  const exited = new Promise<{ code: number | null; signal: string | null; out: string; err: string }>((resolve) => {
    child.once('exit', () => (done = true))
    child.once('close', (code, signal) => resolve({ code, signal, out, err })) // exited, its output all read
  })
  return {
    exited,
    printed: (line) =>
      new Promise((resolve) => {
        if (out.split('\n').includes(line)) resolve()
        else waiting.push({ line, resolve })
      }),
    running: () => !done,
    kill: () => child.kill('SIGKILL'),
  }
}

/** Within `ms`, or a failure saying what did not happen (the process is killed). */
async function within<T>(ms: number, what: string, p: Promise<T>, r?: Run): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms)))])
  } catch (err) {
    r?.kill()
    throw err
  } finally {
    clearTimeout(timer)
  }
}

async function dataOf(id: string): Promise<unknown[]> {
  const store = await openStore({ dir, worker: false })
  const out: unknown[] = []
  for await (const e of (await store.observe(id)).events()) out.push(e.data)
  await store.close()
  return out
}

describe('a Node process that never calls close()', () => {
  for (const thread of [false, true]) {
    const flags = thread ? ['thread'] : []
    it(`exits by itself; its acknowledged appends are durable and the next process takes the session over (${thread ? 'worker: false' : 'default worker'})`, async () => {
      const first = run('write', dir, 's', '5', ...flags)
      const a = await within(30_000, 'the first writer exiting without close()', first.exited, first)
      expect(a, a.err).toMatchObject({ code: 0, out: 'acked 4\n' })

      const second = run('write', dir, 's', '3', 'open', ...flags)
      const b = await within(30_000, 'the second writer (taking the session over) exiting without close()', second.exited, second)
      expect(b, b.err).toMatchObject({ code: 0, out: 'acked 7\n' })

      expect(await dataOf('s')).toEqual([0, 1, 2, 3, 4, 0, 1, 2])
    })
  }

  for (const thread of [false, true]) {
    const flags = thread ? ['thread'] : []
    it(`stays up while a view following another process's appends has a listener, and exits after the last unsubscribe (${thread ? 'worker: false' : 'default worker'})`, async () => {
      const writer = run('write', dir, 's', '2')
      expect((await within(30_000, 'the writer exiting', writer.exited, writer)).code).toBe(0)

      const follower = run('follow', dir, 's', '4', ...flags)
      await within(30_000, 'the follower starting', follower.printed('following'), follower)
      // Nothing of its own to wait for: only the listener keeps it up.
      await new Promise((r) => setTimeout(r, 1500))
      expect(follower.running()).toBe(true)

      const more = run('write', dir, 's', '3', 'open')
      expect((await within(30_000, 'the second writer exiting', more.exited, more)).code).toBe(0)
      // The follower hears seq 4 from the other process, unsubscribes, and exits without close().
      const f = await within(30_000, 'the follower exiting after its last unsubscribe', follower.exited, follower)
      expect(f, f.err).toMatchObject({ code: 0, out: 'following\nsaw 4\n' })
    })
  }
})
