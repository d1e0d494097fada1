// Contract: §14 the session list. A pass of the session index reads and writes the rows of many
// sessions together (the records' getMany and writeMany: a query or a transaction a step, not one
// a row), and still gets each row right: a session deleted before its row is written gets none
// and leaves no entry, and a row the codec cannot open is written again.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsAdapter } from '../../src/backends/fs'
import { createMemoryAdapter } from '../../src/backends/memory'
import { SessionfoldError } from '../../src/core/errors'
import type { SessionId } from '../../src/core/model'
import { resolveSessionQuery } from '../../src/core/session-list'
import { StoreReader } from '../../src/engine/reader'
import { SessionIndex } from '../../src/engine/session-index'
import { flat } from '../../src/storage/kv'
import { recordsOf } from '../../src/storage/records'
import { summaryKey } from '../../src/storage/records/keys'
import type { KeyValueStore, StorageAdapter } from '../../src/storage/types'
import { ev, rootHeader } from '../../src/testing/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-groups-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const ids = (n: number): SessionId[] => Array.from({ length: n }, (_, i) => `g-${String(i).padStart(3, '0')}`)

/** An index over `storage` whose records are `records` (the storage's own, or a wrapper of them). */
function indexOver(storage: StorageAdapter, records: KeyValueStore): SessionIndex {
  return new SessionIndex({
    records,
    feed: storage.feed!,
    reader: new StoreReader(storage, []),
    locks: { isHeld: async () => false },
    onError: (e) => {
      throw e
    },
  })
}

/** Every id the list of all sessions holds, page by page. */
async function listed(index: SessionIndex): Promise<SessionId[]> {
  const out: SessionId[] = []
  let after: string | undefined
  for (;;) {
    const page = await index.page(resolveSessionQuery({ order: 'created' }), 100, after)
    out.push(...page.items.map((r) => r.id))
    if (page.next === null) return out.sort()
    after = page.next
  }
}

/** The session ids the index's entries name. */
async function entryIds(records: KeyValueStore): Promise<Set<string>> {
  return new Set((await records.list(['_index'], { limit: 10_000 })).filter((k) => k.length === 4).map((k) => k[3]!))
}

/**
 * Sessions s0 and s1 in a memory store, and two indexes over it, both passed once: A's view of the
 * store waits on s1's session once `block()` is called (a slow log read, as any of 127 others may
 * be), until `release()`; `atS1` resolves when it waits.
 */
async function twoEngines() {
  const storage = createMemoryAdapter()
  for (const id of ['s0', 's1']) await storage.createSession(rootHeader(id))
  let blocked: Promise<void> | undefined
  let release!: () => void
  let reached!: () => void
  const atS1 = new Promise<void>((r) => (reached = r))
  const slow: StorageAdapter = {
    ...storage,
    getSession: async (id: SessionId) => {
      if (id === 's1' && blocked) {
        reached()
        await blocked
      }
      return storage.getSession(id)
    },
  }
  const records = recordsOf(storage)!
  const a = indexOver(slow, records)
  const b = indexOver(storage, records)
  await a.pass()
  await b.pass()
  const block = () => {
    blocked = new Promise((r) => (release = r))
  }
  return { storage, a, b, block, atS1, release: () => release() }
}

describe("the session index's groups of rows", () => {
  for (const kind of ['memory', 'fs'] as const) {
    it(`writes 300 hinted sessions' rows in groups, and none for one deleted before the pass (${kind})`, async () => {
      const storage = kind === 'fs' ? createFsAdapter({ dir }) : createMemoryAdapter()
      const records = recordsOf(storage)!
      const calls = { get: 0, getMany: 0, writeMany: 0 }
      const counted: KeyValueStore = {
        ...records,
        get: (key) => {
          calls.get++
          return records.get(key)
        },
        ...(records.getMany && {
          getMany: (keys) => {
            calls.getMany++
            return records.getMany!(keys)
          },
        }),
        ...(records.writeMany && {
          writeMany: (writes, options) => {
            calls.writeMany++
            return records.writeMany!(writes, options)
          },
        }),
      }
      const all = ids(300)
      for (const [i, id] of all.entries()) await storage.createSession(rootHeader(id, { createdAt: 1000 + i }))
      const index = indexOver(storage, counted)
      // What an engine tells of the sessions it made (as an import does), then one of them deleted.
      for (const [i, id] of all.entries())
        index.wrote({ header: rootHeader(id, { createdAt: 1000 + i }), length: 0, lastEventAt: 5000 + i, title: null, tags: [] })
      await storage.deleteSession('g-150')
      // The first pass builds the index (from the logs, with the hints), then takes the hint left (g-150's).
      await index.pass()
      const byPass = { ...calls }
      expect(await listed(index)).toEqual(all.filter((id) => id !== 'g-150'))
      expect(await index.row('g-150')).toBeUndefined()
      expect((await index.row('g-151'))?.lastEventAt).toBe(5151)
      const named = await entryIds(records)
      expect(named.has('g-150')).toBe(false)
      expect(named.size).toBe(299)
      if (kind === 'fs') {
        // 3 groups of the 299 sessions there, then g-150 alone: a getMany each (the one get is the index's state); a
        // writeMany for the entries and one for the rows each (g-150's rejected: then put alone), one for the entries it left.
        expect(byPass).toEqual({ getMany: 4, get: 1, writeMany: 3 * 2 + 3 })
      }
      await index.close()
      await storage.close()
    })
  }

  // Found in review: a group works out each row in turn, reading logs, and wrote them all at the
  // end; a row another engine moved on meanwhile was put back.
  it('leaves a row another engine moved on while the group read its logs (a row only moves forward)', async () => {
    const { storage, a, b, block, atS1, release } = await twoEngines()
    await storage.append('s0', [ev('s0', 0)])
    await storage.append('s1', [ev('s1', 0)])
    block()
    const passA = a.pass() // the group [s0, s1]: s0's next row worked out (length 1), then it waits on s1
    await atS1
    // Meanwhile B (whose engine wrote it) moves s0 on: a title, length 2.
    await storage.append('s0', [ev('s0', 1, { title: 'renamed' }, 'session/meta')])
    b.wrote({ header: rootHeader('s0'), length: 2, lastEventAt: 1_700_000_000_001, title: 'renamed', tags: [] })
    await b.pass()
    release()
    await passA
    const rows = (await b.page(resolveSessionQuery({ order: 'created' }), 10, undefined)).items.map((r) => [r.id, r.length, r.title])
    expect(rows).toEqual([
      ['s0', 2, 'renamed'],
      ['s1', 1, null],
    ])
    await a.close()
    await b.close()
    await storage.close()
  })

  // Found in the review of that fix: a session deleted and made again meanwhile got the old life's row.
  it('leaves the row of a session deleted and made again while the group read its logs, and looks at it again', async () => {
    const { storage, a, b, block, atS1, release } = await twoEngines()
    await storage.append('s0', [ev('s0', 0), ev('s0', 1, { title: 'old' }, 'session/meta')])
    await storage.append('s1', [ev('s1', 0)])
    block()
    const passA = a.pass() // s0's next row worked out from its old life (length 2, 'old'), then it waits on s1
    await atS1
    await storage.deleteSession('s0')
    await storage.createSession(rootHeader('s0', { createdAt: 1_800_000_000_000 }))
    await b.pass()
    release()
    await passA
    const rows = async (index: SessionIndex) =>
      (await index.page(resolveSessionQuery({ order: 'created' }), 10, undefined)).items.map((r) => [r.id, r.createdAt, r.length, r.title])
    expect(await rows(b)).toEqual([
      ['s0', 1_800_000_000_000, 0, null],
      ['s1', 1_700_000_000_000, 1, null],
    ])
    await a.pass() // the session it left, looked at again: the new life's row stays
    expect((await a.row('s0'))?.createdAt).toBe(1_800_000_000_000)
    await a.close()
    await b.close()
    await storage.close()
  })

  it('reads a group again row by row when one row cannot be opened (CORRUPT_LOG), and writes that row again', async () => {
    const storage = createMemoryAdapter()
    const records = recordsOf(storage)!
    const all = ids(5)
    for (const id of all) await storage.createSession(rootHeader(id))
    const plain = indexOver(storage, records)
    await plain.pass()
    await plain.close()
    const damaged = flat(summaryKey('g-002'))
    let broken = true
    const failing: KeyValueStore = {
      ...records,
      get: async (key) => {
        if (broken && flat(key) === damaged) throw new SessionfoldError('CORRUPT_LOG', 'the row does not open')
        return records.get(key)
      },
      getMany: async (keys) => {
        if (broken && keys.some((k) => flat(k) === damaged)) throw new SessionfoldError('CORRUPT_LOG', 'a row does not open')
        return Promise.all(keys.map((k) => records.get(k)))
      },
    }
    const index = indexOver(storage, failing)
    for (const id of all) index.wrote({ header: rootHeader(id), length: 0, lastEventAt: 7, title: 'again', tags: [] })
    await index.pass()
    broken = false
    // The damaged row reads as none, so the hint makes it again; the others were read, one by one, and stay.
    expect(await Promise.all(all.map(async (id) => (await index.row(id))?.title))).toEqual([null, null, 'again', null, null])
    await index.close()
    await storage.close()
  })
})
