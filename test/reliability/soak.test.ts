// Reliability: the soak, short — writers under strict durability, verify clean, heap flat, no leak per call (§7 durability)
// The soak (scripts/soak.ts, `npm run soak`: 1,000 sessions, 100 writers, 60 s) in a short
// run, so its code is exercised by every test run; and the leak it found: every client call
// used to stay reachable for the store's whole life.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import type { SoakResult } from '../../scripts/soak'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

describe('soak', () => {
  it('50 sessions, 10 writers, 5 s under strict durability: every acknowledged event stored, cold reads equal refolds, verify clean, heap flat', async () => {
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        '--import',
        'tsx',
        join(__dirname, '../../scripts/soak.ts'),
        '--sessions',
        '50',
        '--writers',
        '10',
        '--seconds',
        '5',
        '--interval',
        '1',
        '--json',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    const result = JSON.parse(out.trim().split('\n').at(-1)!) as SoakResult
    console.log(err.trim())
    expect(result.problems).toEqual([])
    expect(code).toBe(0)
    expect(result.ok).toBe(true)
    expect(result.gc).toBe(true)
    expect(result.eventsWritten).toBeGreaterThan(500)
    expect(result.sessions.total).toBeGreaterThan(50)
    expect(result.verify).toEqual({ sessions: result.sessions.total, events: result.eventsStored, damaged: 0 })
    expect(result.eventsStored).toBe(result.eventsWritten)
    expect(result.coldReadsChecked).toBe(result.sessions.total)
    expect(result.heap.length).toBeGreaterThanOrEqual(4)
  }, 60_000)

  it('a process started with V8 flags (--expose-gc, as the soak is) still gets its engine worker, without those flags', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-flags-'))
    const code = `import('${join(__dirname, '../../src/index-node.ts')}').then(async ({ openStore }) => {
      const store = await openStore({ dir: ${JSON.stringify(dir)}, worker: true })
      const s = await store.createSession({ id: 'x' })
      console.log(JSON.stringify(await s.append({ type: 'a' })))
      await store.close()
    })`
    const child = spawn(process.execPath, ['--expose-gc', '--max-old-space-size=300', '--import', 'tsx', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const exit = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    await rm(dir, { recursive: true, force: true })
    expect(err).not.toContain('ERR_WORKER_INVALID_EXEC_ARGV')
    expect(exit).toBe(0)
    expect(JSON.parse(out)).toEqual({ firstSeq: 0, lastSeq: 0 })
  })

  for (const worker of [false, true]) {
    it(`what a client call returns is not kept once the caller drops it (worker: ${worker})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sessionfold-leak-'))
      const store = await openStore({ dir, worker })
      try {
        const s = await store.createSession({ id: 's' })
        await s.append({ type: 'app/e' })
        const refs: WeakRef<object>[] = []
        for (let i = 0; i < 5; i++) {
          refs.push(new WeakRef(await store.listSessions()))
          refs.push(new WeakRef(await s.append({ type: 'app/e', data: i })))
        }
        for (let i = 0; i < 3; i++) {
          await new Promise((r) => setTimeout(r, 10))
          gc()
        }
        expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0)
      } finally {
        await store.close()
        await rm(dir, { recursive: true, force: true })
      }
    })
  }
})
