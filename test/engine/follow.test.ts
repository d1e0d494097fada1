// Following another engine's appends (src/engine/follow.ts): a notice's length spares the
// lookup and a notice at or below what is held costs nothing; events a notice carried are folded
// without a read where they continue the log, and a tail that does not (a gap, a wrong seq) is
// read instead; calls made while one waits its turn join it, so a burst costs one read.
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../src/backends/memory'
import { Engine } from '../../src/engine'
import { instrument } from '../support/instrumented-adapter'

async function pair() {
  const shared = createMemoryAdapter()
  const writer = new Engine({ storage: { ...shared, close: async () => {} }, checkpoint: { everyEvents: 1e9, everyMs: 1e9 } })
  const inst = instrument({ ...shared, close: async () => {} })
  const follower = new Engine({ storage: inst.adapter, checkpoint: { everyEvents: 1e9, everyMs: 1e9 } })
  const { id } = await writer.createSession({ id: 'f' })
  await follower.observe(id)
  inst.reset()
  const storedEvents = async (from: number) => {
    const out: unknown[] = []
    for await (const page of shared.readEvents(id, { from })) out.push(...page)
    return out
  }
  return { writer, follower, inst, id, storedEvents }
}

describe('follow', () => {
  it('folds the events a notice carried without reading them; a length already held costs nothing', async () => {
    const { writer, follower, inst, id, storedEvents } = await pair()
    await writer.append(id, [{ type: 'turn/start' }, { type: 'app/a' }])
    await follower.follow(id, 2, { from: 0, events: await storedEvents(0) })
    expect(inst.counts.reads).toEqual([])
    expect(follower.snapshot(id)).toEqual(writer.snapshot(id))
    // Already held: nothing read, nothing folded again.
    await follower.follow(id, 2)
    await follower.follow(id, 1, { from: 0, events: (await storedEvents(0)).slice(0, 1) })
    expect(inst.counts.reads).toEqual([])
    expect(follower.snapshot(id).asOfSeq).toBe(1)
  })

  it('reads instead where the tail does not continue the log: a gap before it, or an event out of place', async () => {
    const { writer, follower, inst, id, storedEvents } = await pair()
    await writer.append(id, [{ type: 'app/a' }, { type: 'app/b' }, { type: 'turn/start' }])
    const all = await storedEvents(0)
    // Starts past what the follower holds (0): read from 0.
    await follower.follow(id, 3, { from: 2, events: all.slice(2) })
    expect(inst.counts.reads.map((r) => [r.from, r.to])).toEqual([[0, 3]])
    await writer.append(id, [{ type: 'turn/end' }])
    // A tail whose event says another seq: not trusted.
    const wrong = { ...((await storedEvents(3))[0] as object), seq: 7 }
    await follower.follow(id, 4, { from: 3, events: [wrong] })
    expect(inst.counts.reads.map((r) => [r.from, r.to])).toEqual([
      [0, 3],
      [3, 4],
    ])
    expect(follower.snapshot(id)).toEqual(writer.snapshot(id))
  })

  it('a burst of notices while one follow waits its turn costs one read, up to the newest length', async () => {
    const { writer, follower, inst, id } = await pair()
    for (let i = 0; i < 10; i++) await writer.append(id, { type: 'app/a' })
    // The first starts; the other nine queue behind it and join one step.
    await Promise.all(Array.from({ length: 10 }, (_, i) => follower.follow(id, i + 1)))
    expect(inst.counts.reads.length).toBeLessThanOrEqual(2)
    expect(follower.snapshot(id)).toEqual(writer.snapshot(id))
    // Without a length (a poll): looked up, then read.
    await writer.append(id, { type: 'app/b' })
    const before = inst.counts.reads.length
    await follower.follow(id)
    expect(inst.counts.reads.length).toBe(before + 1)
    expect(follower.snapshot(id)).toEqual(writer.snapshot(id))
  })
})
