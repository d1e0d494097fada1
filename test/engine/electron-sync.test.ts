// Contract: §8 sync — examples/electron-sync: an fs store and an IndexedDB store kept equal both ways (docs/CONTRACT.md)
// examples/electron-sync: an fs store (the main process, engine in a worker thread) and an
// IndexedDB store (a renderer; fake-indexeddb here) kept in sync both ways over a MessageChannel
// while both sides run agents that spawn subagents in their own sessions.
import 'fake-indexeddb/auto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import type { Side } from '../../examples/electron-sync/agent'
import { startMain } from '../../examples/electron-sync/main-process'
import { startRenderer } from '../../examples/electron-sync/renderer'
import { until } from '../contract/client'
import { dumpStore } from '../support/helpers'

async function drain(a: Side, b: Side): Promise<void> {
  // Each side sends until it has nothing new (what it imported from the other is not sent
  // back): a round in which neither sends anything means both hold the same.
  for (let round = 0; round < 20; round++) {
    if ((await a.link.push()) + (await b.link.push()) === 0) return
  }
  throw new Error('the stores did not settle')
}

it('main (fs) and renderer (IndexedDB) end with equal logs, projections and trees', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-electron-'))
  const { port1, port2 } = new MessageChannel()
  const main = await startMain(join(dir, 'store'), port1)
  const renderer = await startRenderer(`renderer-${Math.random()}`, port2, { worker: false })
  try {
    // Both sides work at once, each in its own sessions, while the links run in the background.
    await Promise.all([main.runAgent('main-agent', 6), renderer.runAgent('ui-agent', 5), main.runAgent('indexer', 3)])
    // The background loops moved batches while the agents ran.
    await until(() => renderer.link.sent > 0 && main.link.sent > 0)
    await main.link.stop()
    await renderer.link.stop()
    await drain(main, renderer)

    // The renderer watches the main process's agent; what main appends later reaches it live.
    const watched = await renderer.store.observe('main-agent')
    expect(watched.projections.get('subagentCatalog')).toHaveLength(6)
    const agent = await main.store.openSession('main-agent')
    await (await agent.spawn({ mode: 'one-shot', label: 'late' })).close()
    await agent.close()
    await drain(main, renderer)
    await until(() => watched.projections.get('subagentCatalog')!.some((c) => c.label === 'late'))
    await watched.close()

    const [m, r] = [await dumpStore(main.store), await dumpStore(renderer.store)]
    expect(Object.keys(m)).toHaveLength(3 + 6 + 5 + 3 + 1)
    expect(r).toEqual(m)
    for (const id of ['main-agent', 'ui-agent', 'indexer']) {
      const [a, b] = [await main.store.observe(id), await renderer.store.observe(id)]
      expect(await b.listChildren({ recursive: true })).toEqual(await a.listChildren({ recursive: true }))
      await a.close()
      await b.close()
    }
    expect(main.link.conflicts).toEqual([])
    expect(renderer.link.conflicts).toEqual([])
  } finally {
    await main.link.stop()
    await renderer.link.stop()
    port1.close()
    await main.store.close()
    await renderer.store.close()
    await rm(dir, { recursive: true, force: true })
  }
})
