// Contract: §6 client API — a view that cannot cross the worker faults its unit; the append that made it resolves, and nothing else breaks (docs/CONTRACT.md)
// An app's view schema may let anything through (z.any(), z.custom()). A view value holding a
// function failed the whole frame at the worker's port: the append waiting on it rejected with
// an untyped DataCloneError after its events were written (an app retrying it would write them
// twice), and no other view of the session moved. Now the engine faults that unit, naming where
// the function is, and the frame crosses.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { until } from '../contract/client'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-uncloneable-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

it('an append whose fold leaves a view holding a function resolves once; that unit faults, the others go on', async () => {
  const store = await openStore({ storage: 'fs', dir, workerUrl: new URL('../fixtures/uncloneable-view-worker.ts', import.meta.url) })
  try {
    const session = await store.createSession({ id: 's' })
    const view = await store.observe('s')
    await session.append([{ type: 'app/a' }])
    await until(() => (view.projections.get('loose' as never) as { n?: number } | null)?.n === 1)
    const appended = await session.append([{ type: 'app/fn' }, { type: 'turn/start', data: { turnId: 't1' } }])
    expect(appended).toEqual({ firstSeq: 1, lastSeq: 2 })
    await until(() => view.projections.snapshot().asOfSeq === 2)
    const snap = view.projections.snapshot()
    expect(snap.values['loose' as never]).toBeNull()
    expect(snap.faults['loose' as never]).toBe('corrupt')
    // The other units of the session moved with the same frame.
    expect(view.projections.get('subagentTiming')).not.toBeNull()
    // Written once: what the append said, and nothing more.
    const types: string[] = []
    for await (const e of view.events()) types.push(e.type)
    expect(types).toEqual(['app/a', 'app/fn', 'turn/start'])
    await session.append([{ type: 'app/b' }])
    await until(() => view.projections.snapshot().asOfSeq === 3)
    await session.close()
  } finally {
    await store.close()
  }
})
