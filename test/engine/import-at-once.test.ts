// Contract: §8 sync — an import's entries go at once, its result reads as one after another (docs/CONTRACT.md)
// applyChanges imports up to 16 entries of a batch at a time (their disk waits overlap). What it
// answers is what importing them one by one answers: counts, and conflicts and skips in the
// batch's order; a storage failure of one entry rejects the call once the entries under way
// have ended, and every entry before it in the batch is in.
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { ChangeBatch } from '../../src/core/changes'
import { SessionfoldError } from '../../src/core/errors'
import { Engine } from '../../src/engine'
import type { StorageAdapter } from '../../src/storage/types'

const ids = Array.from({ length: 40 }, (_, i) => `s${String(i).padStart(2, '0')}`)

async function sourceBatch(): Promise<ChangeBatch> {
  const source = new Engine({ storage: createMemoryAdapter() })
  try {
    for (const id of ids) {
      await source.createSession({ id, cwd: '/there' })
      await source.append(id, [{ type: 'app/a' }, { type: 'app/b' }])
    }
    const c = await source.changesSince(null, {})
    expect(c.done).toBe(true)
    expect((c.batch as ChangeBatch).sessions).toHaveLength(ids.length)
    return c.batch as ChangeBatch
  } finally {
    await source.close()
  }
}

describe('applyChanges with many entries', () => {
  it('lists conflicts in the batch order and counts what it copied, as one by one would', async () => {
    const batch = await sourceBatch()
    const target = new Engine({ storage: createMemoryAdapter() })
    try {
      // Every third id is here already, with another history: a conflict each.
      const taken = ids.filter((_, i) => i % 3 === 1)
      for (const id of taken) await target.createSession({ id, cwd: '/here' })
      const result = await target.applyChanges(batch)
      expect(result.conflicts.map((c) => c.id)).toEqual(taken)
      expect(result.copiedSessions).toBe(ids.length - taken.length)
      expect(result.copiedEvents).toBe(2 * (ids.length - taken.length))
      expect(result.skipped).toEqual([])
      for (const id of ids.filter((x) => !taken.includes(x))) expect((await target.read(id)) !== undefined).toBe(true)
    } finally {
      await target.close()
    }
  })

  it('a storage failure of one entry rejects with it, after the entries under way; every entry before it is in', async () => {
    const batch = await sourceBatch()
    const inner = createMemoryAdapter()
    const failing: StorageAdapter = Object.create(inner)
    failing.createSession = async (header, seed) => {
      if (header.id === 's07') throw new SessionfoldError('STORAGE_UNAVAILABLE', 'the disk went away')
      return inner.createSession(header, seed)
    }
    const target = new Engine({ storage: failing })
    try {
      await expect(target.applyChanges(batch)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE', message: expect.stringContaining('the disk went away') })
      const there = new Set((await inner.listIds({ limit: 100 })).map(String))
      for (const id of ids.slice(0, 7)) expect(there.has(id), id).toBe(true)
      expect(there.has('s07')).toBe(false)
      // None started after the failure: at most the 16 begun with it and before it.
      expect(there.size).toBeLessThanOrEqual(16)
    } finally {
      await target.close()
    }
  })
})
