// Contract: §4 checkpoints, §8 sync — what an import writes besides its events (docs/CONTRACT.md)
// A store that receives a session a few events at a time (applyChanges, the HTTP sync's pushes
// and pulls) writes a checkpoint row when one is due, not one per batch, and a cold read of it
// still equals a refold.
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../adapters/memory'
import type { ChangeBatch } from '../../src/changes'
import { Engine } from '../../worker/engine'
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
})
