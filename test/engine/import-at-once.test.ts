// Contract: §8 sync — an import's entries go at once, its result reads as one after another (docs/CONTRACT.md)
// applyChanges imports up to 16 entries of a batch at a time (their disk waits overlap), and the
// small sessions new here 256 at a time in one createSessions where the storage has it. What it
// answers is what importing them one by one answers: counts, and conflicts and skips in the
// batch's order; a storage failure of one entry rejects the call once the entries under way
// have ended, and every entry before it in the batch is in.
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { ChangeBatch } from '../../src/core/changes'
import { SessionfoldError } from '../../src/core/errors'
import { Engine } from '../../src/engine'
import type { NewSession, StorageAdapter } from '../../src/storage/types'
import { openStore, sync } from 'sessionfold'

/** The memory adapter, counting its creations; without createSessions when not `grouped` (an import then creates one at a time). */
function counting(grouped: boolean) {
  const inner = createMemoryAdapter()
  const calls = { one: 0, many: [] as number[] }
  const storage: StorageAdapter = Object.create(inner)
  storage.createSession = (header, seed) => (calls.one++, inner.createSession(header, seed))
  storage.createSessions = grouped ? (news: readonly NewSession[]) => (calls.many.push(news.length), inner.createSessions!(news)) : undefined
  return { inner, storage, calls }
}

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
  it.each([
    ['grouped', true],
    ['one at a time', false],
  ])('lists conflicts in the batch order and counts what it copied, as one by one would (%s)', async (_, grouped) => {
    const batch = await sourceBatch()
    const { storage, calls } = counting(grouped)
    const target = new Engine({ storage })
    try {
      // Every third id is here already, with another history: a conflict each.
      const taken = ids.filter((_, i) => i % 3 === 1)
      for (const id of taken) await target.createSession({ id, cwd: '/here' })
      calls.one = 0
      const result = await target.applyChanges(batch)
      // Grouped: those not here in one call (the taken ones looked up first), none one at a time.
      expect(calls).toEqual(grouped ? { one: 0, many: [ids.length - taken.length] } : { one: ids.length - taken.length, many: [] })
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
    failing.createSessions = undefined // one at a time (the grouped path is the next test's)
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
  it('a grouped creation that fails rejects with it and writes nothing of its group', async () => {
    const batch = await sourceBatch()
    const { inner, storage } = counting(true)
    storage.createSessions = async () => {
      throw new SessionfoldError('STORAGE_UNAVAILABLE', 'the disk went away')
    }
    const target = new Engine({ storage })
    try {
      await expect(target.applyChanges(batch)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE', message: expect.stringContaining('the disk went away') })
      expect(await inner.listIds({ limit: 100 })).toEqual([])
    } finally {
      await target.close()
    }
  })

  it('a session made here meanwhile (its id taken when the group is stored) is compared as any copy here: a conflict', async () => {
    const batch = await sourceBatch()
    const { inner, storage, calls } = counting(true)
    const { createSessions } = storage
    storage.createSessions = async (news) => {
      // Another writer makes s05 between the import's lookup and its creation.
      await inner.createSession({ ...news.find((n) => n.header.id === 's05')!.header, cwd: '/elsewhere' })
      return createSessions!(news)
    }
    const target = new Engine({ storage })
    try {
      const result = await target.applyChanges(batch)
      expect(calls.many).toEqual([ids.length])
      expect(result.conflicts.map((c) => [c.id, c.reason])).toEqual([['s05', 'header']])
      expect(result.copiedSessions).toBe(ids.length - 1)
      expect((await target.reader.find('s05'))?.header.cwd).toBe('/elsewhere')
    } finally {
      await target.close()
    }
  })

  it('a life deleted here is refused as deleted, the others grouped', async () => {
    const batch = await sourceBatch()
    const { storage, calls } = counting(true)
    const target = new Engine({ storage })
    try {
      const s03 = batch.sessions.find((e) => e.header.id === 's03')!
      await target.applyChanges({ ...batch, sessions: [s03] })
      await target.deleteSessions(['s03'])
      calls.many.length = 0
      const result = await target.applyChanges(batch)
      expect(calls.many).toEqual([ids.length - 1])
      expect(result.skipped.map((s) => [s.id, s.reason])).toEqual([['s03', 'deleted']])
      expect(result.copiedSessions).toBe(ids.length - 1)
      expect(await target.reader.find('s03')).toBeUndefined()
    } finally {
      await target.close()
    }
  })
  it('groups hold at most about 8 MiB of events: big ones go in several calls', async () => {
    const source = new Engine({ storage: createMemoryAdapter() })
    const { storage, calls } = counting(true)
    const target = new Engine({ storage })
    try {
      const big = 'x'.repeat(900 * 1024)
      for (const id of ids.slice(0, 20)) {
        await source.createSession({ id })
        await source.append(id, [{ type: 'app/big', data: big }])
      }
      const c = await source.changesSince(null, { maxBytes: 64 * 1024 * 1024 })
      expect((c.batch as ChangeBatch).sessions).toHaveLength(20)
      expect(await target.applyChanges(c.batch)).toMatchObject({ copiedSessions: 20, copiedEvents: 20 })
      expect(calls.many).toEqual([9, 9, 2]) // 9 × 900 KiB fit in 8 MiB, a tenth does not
    } finally {
      await source.close()
      await target.close()
    }
  })

  it('the session list holds what a grouped import made (titles, tags, lengths) without reading the logs back', async () => {
    const source = new Engine({ storage: createMemoryAdapter() })
    const { inner, storage, calls } = counting(true)
    let reads = 0
    storage.readEvents = (id, range) => (reads++, inner.readEvents(id, range))
    const target = new Engine({ storage })
    try {
      for (const id of ids) {
        await source.createSession({ id })
        await source.append(id, [{ type: 'session/meta', data: { title: `title ${id}`, tags: ['imported'] } }, { type: 'app/a' }])
      }
      const c = await source.changesSince(null, {})
      await target.applyChanges(c.batch)
      expect(calls.many).toEqual([ids.length])
      reads = 0
      const page = await target.sessionsPage({ limit: 100 }, 100)
      expect(reads).toBe(0)
      const last = (c.batch as ChangeBatch).sessions.map((e) => e.events.at(-1)!.time)
      expect(page.items.map((r) => [r.id, r.title, r.tags, r.length, r.lastEventAt]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1))).toEqual(
        ids.map((id, i) => [id, `title ${id}`, ['imported'], 2, last[i]]),
      )
    } finally {
      await source.close()
      await target.close()
    }
  })

  it('a fork and its children, sealed by the record codec, imported grouped: every range reads back, verify finds nothing, a second sync continues', async () => {
    const source = await openStore({ storage: 'memory', worker: false })
    const target = await openStore({ storage: 'memory', worker: false, encryption: { key: new Uint8Array(32).fill(3) } })
    try {
      const root = await source.createSession({ id: 'root' })
      await root.append([{ type: 'app/a', data: { n: 1 } }, { type: 'app/b' }, { type: 'app/c', data: 'x'.repeat(300) }])
      const fork = await root.fork({ at: 2, id: 'fork' }) // its seed [0, 2), then its own events
      await fork.append([{ type: 'app/d' }, { type: 'app/e', data: [1, 2] }, { type: 'app/f' }])
      await fork.spawn({ id: 'child', mode: 'one-shot' })
      const all = await sync(source, target)
      expect(all).toMatchObject({ copiedSessions: 3, conflicts: [] })
      for (const [from, to] of [
        [0, 5],
        [1, 3],
        [2, 4],
        [4, 5],
      ] as const) {
        const copied = []
        for await (const e of (await target.observe('fork')).events({ from, to })) copied.push(e)
        const original = []
        for await (const e of (await source.observe('fork')).events({ from, to })) original.push(e)
        expect(copied, `[${from}, ${to})`).toEqual(original)
      }
      expect((await target.verify()).damaged).toEqual([])
      const view = await target.observe('fork')
      expect(view.projections.get('subagentCatalog')).toEqual((await source.observe('fork')).projections.get('subagentCatalog'))
      await fork.append({ type: 'app/g' })
      expect(await sync(source, target)).toMatchObject({ copiedEvents: 1, conflicts: [] })
      const copied: unknown[] = []
      const original: unknown[] = []
      for await (const e of (await target.observe('fork')).events()) copied.push(e)
      for await (const e of (await source.observe('fork')).events()) original.push(e)
      expect(copied).toEqual(original)
      expect(copied.at(-1)).toMatchObject({ type: 'app/g' })
    } finally {
      await source.close()
      await target.close()
    }
  })
})
