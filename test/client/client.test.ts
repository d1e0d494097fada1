// Contract: §6 client API — the client suite in this thread and in worker_threads; a dying worker, bad frames (docs/CONTRACT.md)
// The public client, run with the same assertions in this thread and in
// a real worker_threads worker, on fs and on IndexedDB (fake-indexeddb in Node).
import 'fake-indexeddb/auto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions, type ProjectionSnapshot } from 'sessionfold'
import { createFsAdapter } from '../../src/backends/fs'
import { clientConformance, tick, until } from '../contract/client'
import { expectCode, readAll } from '../support/helpers'

const fixture = (name: string) => new URL(`../fixtures/${name}`, import.meta.url)

const modes: [string, (dir: string) => OpenStoreOptions][] = [
  ['fs, in this thread', (dir) => ({ storage: 'fs', dir, worker: false })],
  ['fs, worker_threads', (dir) => ({ storage: 'fs', dir, worker: true })],
  ['indexeddb, in this thread', () => ({ storage: 'indexeddb', name: `db-${Math.random()}`, worker: false })],
  ['indexeddb, worker_threads', () => ({ storage: 'indexeddb', name: 'db', worker: true, workerUrl: fixture('idb-worker.ts') })],
]

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-client-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

for (const [mode, options] of modes) {
  clientConformance(
    mode,
    () => options(dir),
    mode.startsWith('fs')
      ? async (id: string) => {
          const a = createFsAdapter({ dir })
          try {
            return (await readAll(a, id)).map((e) => e.data)
          } finally {
            await a.close()
          }
        }
      : undefined,
  )
}

describe('client: workers and processes', () => {
  it('WORKER_TERMINATED for pending calls when the worker dies; subscribers are told; nothing acknowledged is lost', async () => {
    const store = await openStore({ dir, workerUrl: fixture('dying-worker.ts') })
    const s = await store.createSession({ id: 'w' })
    const acked: number[] = []
    for (let i = 0; i < 20; i++) acked.push((await s.append({ type: 'app/e', data: i })).lastSeq)
    const told: unknown[] = []
    s.projections.subscribe('subagentTiming', (_v, meta) => told.push(meta.error?.code))
    const pending = [s.append({ type: 'app/die' }), ...Array.from({ length: 10 }, (_, i) => s.append({ type: 'app/e', data: 100 + i }))]
    const results = await Promise.allSettled(pending)
    for (const r of results) {
      if (r.status === 'rejected') expect((r.reason as { code?: string }).code).toBe('WORKER_TERMINATED')
    }
    expect(results.some((r) => r.status === 'rejected')).toBe(true)
    await until(() => told.at(-1) === 'WORKER_TERMINATED')
    await expectCode(s.append({ type: 'x' }), 'WORKER_TERMINATED')
    await store.close()
    const again = await openStore({ dir })
    const reopened = await again.openSession('w') // the dead thread's lock was released
    const data: unknown[] = []
    for await (const e of reopened.events()) data.push(e.data)
    expect(data.slice(0, 20)).toEqual([...Array(20).keys()])
    await again.close()
  })

  it('a process waiting for pushed values stays alive until they come (spawn, then append, through the default worker)', async () => {
    const { execFileSync } = await import('node:child_process')
    for (let run = 0; run < 3; run++) {
      const out = execFileSync(process.execPath, [fileURLToPath(fixture('spawn-last.mjs')), join(dir, `spawn-${run}`)], { encoding: 'utf8', timeout: 60_000 })
      expect(out.trim()).toBe('children 20')
    }
  })

  it('projections need worker: false or a worker file of your own', async () => {
    await expectCode(openStore({ dir, projections: [] }), 'INVALID_ARGUMENT')
  })

  it('frames that fail validation never reach the app', async () => {
    const store = await openStore({ dir, worker: false })
    const s = await store.createSession({ id: 'f' })
    const seen: ProjectionSnapshot[] = []
    s.projections.subscribe((snap) => seen.push(snap))
    const push = (frames: unknown[]) => (store as unknown as { _push: (p: unknown) => void })._push({ kind: 'frames', frames })
    push([{ n: 1, sessionId: 'f', seq: 5, values: { subagentCatalog: [{ id: '../x' }] }, faults: {} }])
    await tick()
    expect(s.projections.get('subagentCatalog')).toEqual([])
    expect(s.projections.error?.code).toBe('PROJECTIONS_UNAVAILABLE')
    push([{ sessionId: 'other', seq: 'x' }, null, 'junk'])
    await store.close()
  })
})
