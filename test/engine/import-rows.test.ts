// Contract: §4 checkpoints, §8 sync — what an import writes besides its events (docs/CONTRACT.md)
// A store that receives a session a few events at a time (applyChanges, the HTTP sync's pushes
// and pulls) writes a checkpoint row when one is due, not one per batch, and a cold read of it
// still equals a refold; its history rows land where they are due.
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { ChangeBatch } from '../../src/core/changes'
import { Engine } from '../../src/engine'
import { HISTORY_EVERY } from '../../src/engine/history'
import { fullRefold } from '../support/refold'
import { instrument } from '../support/instrumented-adapter'

describe('imports and checkpoint rows', () => {
  it('200 one-event batches write a row about every everyEvents events, not one per batch', async () => {
    const source = new Engine({ storage: createMemoryAdapter() })
    await source.createSession({ id: 'moving' })
    const inst = instrument(createMemoryAdapter())
    const target = new Engine({ storage: inst.adapter, checkpoint: { everyEvents: 64 } })
    try {
      let cursor: unknown = null
      for (let i = 0; i < 200; i++) {
        await source.append('moving', { type: 'app/n', data: i })
        const c = await source.changesSince(cursor, {})
        const result = await target.applyChanges(c.batch as ChangeBatch)
        expect(result.conflicts).toEqual([])
        cursor = c.cursor
      }
      expect((await inst.adapter.getSession('moving'))?.length).toBe(200)
      // The creation's row, then one per 64 events or so: not 200.
      expect(inst.counts.checkpointWrites.length).toBeGreaterThanOrEqual(2)
      expect(inst.counts.checkpointWrites.length).toBeLessThanOrEqual(6)
      expect(await target.read('moving')).toEqual(await fullRefold(inst.adapter, 'moving'))
    } finally {
      await source.close()
      await target.close()
    }
  })

  it('an imported log gets its history rows where they are due, as an appended one does (DESIGN §9)', async () => {
    const source = new Engine({ storage: createMemoryAdapter() })
    await source.createSession({ id: 'long' })
    for (let i = 0; i < 30; i++)
      await source.append(
        'long',
        Array.from({ length: 100 }, (_, k) => ({ type: 'app/n', data: i * 100 + k })),
      )
    const storage = createMemoryAdapter()
    const target = new Engine({ storage })
    try {
      // In batches of 100, as a sync moves them.
      for (let cursor: unknown = null; ; ) {
        const c = await source.changesSince(cursor, { maxEvents: 100 })
        await target.applyChanges(c.batch as ChangeBatch)
        cursor = c.cursor
        if (c.done) break
      }
      await target.history!.settled('long')
      expect((await storage.getSession('long'))?.length).toBe(3000)
      expect(await storage.history!.list('long')).toEqual([HISTORY_EVERY, 2 * HISTORY_EVERY])
      expect((await target.observeAt('long', { at: 2500 })).snapshot).toEqual((await source.observeAt('long', { at: 2500 })).snapshot)
    } finally {
      await source.close()
      await target.close()
    }
  })
})
