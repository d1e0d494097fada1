// Contract: §14 the session list follows other processes' writes soon after they happen — the
// engine's index is woken by the backend (fs: a watch of the store's change feed file) rather
// than waiting for its poll, and a feed entry that comes before its events (fs records the entry
// first) is looked at again until the log has them, so the list does not miss that append.
import { appendFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsAdapter } from '../../src/backends/fs'
import { fsGrowth } from '../../src/backends/fs/growth'
import { FEED_FILE } from '../../src/backends/fs/layout'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { SessionId } from '../../src/core/model'
import { Engine } from '../../src/engine'
import { StoreReader } from '../../src/engine/reader'
import { SessionIndex } from '../../src/engine/session-index'
import { recordsOf } from '../../src/storage/records'
import type { ChangeFeed, FeedEntry, StorageAdapter } from '../../src/storage/types'
import { until } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-wake-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("the fs backend's watch of the change feed", () => {
  it('calls back when another writer records a write in feed.log (made by that write), and not after its stop', async () => {
    const growth = fsGrowth(dir)
    let calls = 0
    const stop = growth.watchFeed!(() => calls++)
    // Another writer on the folder (here an adapter of its own): the feed file does not exist yet.
    const other = createFsAdapter({ dir })
    await other.createSession({ version: 1, id: 's', createdAt: 1, seedLength: 0, delegationDepth: 0, origin: 'root' })
    await until(() => calls > 0)
    // Files of the folder other than the feed are not a write to the store.
    const before = calls
    await appendFile(join(dir, 'notes.txt'), 'x')
    await sleep(100)
    expect(calls).toBe(before)
    stop()
    await appendFile(join(dir, FEED_FILE), '\n')
    await sleep(100)
    expect(calls).toBe(before)
    await other.close()
    growth.close()
  })
})

/** A feed the test writes, and a reader that shows a session's log only up to `cap` events (its bytes not yet written). */
function staged(storage: StorageAdapter) {
  const entries: FeedEntry[] = []
  const feed: ChangeFeed = {
    id: async () => 'staged',
    head: async () => (entries.length === 0 ? '' : entries.at(-1)!.at),
    read: async (after, limit) => entries.filter((e) => Number(e.at) > Number(after || 0)).slice(0, limit),
  }
  const real = new StoreReader(storage, [])
  const cap = new Map<SessionId, number>()
  let finds = 0
  const reader: ConstructorParameters<typeof SessionIndex>[0]['reader'] = {
    async find(id) {
      finds++
      const info = await real.find(id)
      return info && { ...info, length: Math.min(info.length, cap.get(id) ?? Infinity) }
    },
    pages: (id, range) => real.pages(id, range),
    ids: () => real.ids(),
  }
  return { entries, feed, reader, cap, finds: () => finds }
}

/** A memory store holding session `s` of 2 events (written by an engine that keeps no index: its feed hidden). */
async function storeOfTwo(): Promise<{ storage: StorageAdapter; writer: Engine }> {
  const storage = createMemoryAdapter()
  const { feed: _hidden, ...withoutFeed } = storage
  const writer = new Engine({ storage: withoutFeed })
  expect(writer.index).toBeUndefined()
  await writer.createSession({ id: 's' })
  await writer.append('s', [{ type: 'app/a' }, { type: 'app/b' }])
  await writer.release('s', 'writer')
  return { storage, writer } // closing the writer would close the storage: the test does, at its end
}

/** An index over `storage`'s records that reads the staged feed and log lengths (no writer holds a session). */
function stagedIndex(storage: StorageAdapter, s: ReturnType<typeof staged>): SessionIndex {
  return new SessionIndex({
    records: recordsOf(storage)!,
    feed: s.feed,
    reader: s.reader,
    locks: { isHeld: async () => false },
    onError: (e) => {
      throw e
    },
  })
}

describe('a feed entry ahead of its events', () => {
  it('is looked at again until the log has them, and the list is told', async () => {
    const { storage, writer } = await storeOfTwo()
    const s = staged(storage)
    s.cap.set('s', 1)
    const index = stagedIndex(storage, s)
    let told = 0
    const stop = index.subscribe(() => told++)
    await index.pass()
    expect((await index.row('s'))?.length).toBe(1)
    // The feed names event 1, whose bytes are not in the log yet; no entry follows when they are.
    s.entries.push({ at: '1', id: 's', from: 1, to: 2 })
    await index.pass()
    expect((await index.row('s'))?.length).toBe(1)
    const toldBefore = told
    s.cap.set('s', 2)
    await until(async () => (await index.row('s'))?.length === 2)
    await until(() => told > toldBefore)
    stop()
    await index.close()
    await writer.close()
  })

  it('gives up after a while when the log never gets them (a crash cut the write back)', async () => {
    const { storage, writer } = await storeOfTwo()
    const s = staged(storage)
    s.cap.set('s', 1)
    const index = stagedIndex(storage, s)
    const stop = index.subscribe(() => {})
    await index.pass()
    s.entries.push({ at: '1', id: 's', from: 1, to: 2 })
    await index.pass()
    // Looked at again a bounded number of times, then no more (the poll's passes read no new entries).
    await until(async () => {
      const n = s.finds()
      await sleep(300)
      return s.finds() === n
    }, 10_000)
    expect(s.finds()).toBeLessThanOrEqual(40)
    expect((await index.row('s'))?.length).toBe(1)
    stop()
    await index.close()
    await writer.close()
  })
})
