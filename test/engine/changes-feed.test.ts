// Contract: §8 changesSince/applyChanges, §12 cost in proportion to what changed — feed cursors (docs/CONTRACT.md)
// changesSince on a store with a change feed: a first walk over every session, then only what
// the feed names after the cursor; the cursor stays a few fields however large the store.
import 'fake-indexeddb/auto'
import { fdatasyncSync, writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type ChangeCursor, type Store } from 'sessionfold'
import { folderOf } from '../../src/backends/fs/layout'
import { createFsAdapter, type FsPromises } from '../../src/backends/fs'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { StorageAdapter } from '../../src/storage/types'
import { Engine } from '../../src/engine'
import { encodeEventBody } from '../../src/core/validate'
import { dumpStore, expectCode } from '../support/helpers'
import { SessionfoldError } from '../../src/core/errors'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-feed-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Copies everything from `a` to `b` through changesSince/applyChanges, from `cursor`; returns the new cursor. */
async function pump(a: Store, b: Store, cursor: ChangeCursor | null, maxEvents?: number): Promise<{ cursor: ChangeCursor; calls: number; events: number }> {
  let calls = 0
  let events = 0
  for (;;) {
    const c = await a.changesSince(cursor, maxEvents ? { maxEvents } : {})
    calls++
    events += c.batch.sessions.reduce((n, e) => n + e.events.length, 0)
    if (c.batch.sessions.length > 0) {
      const r = await b.applyChanges(c.batch)
      expect(r.conflicts).toEqual([])
      expect(r.skipped).toEqual([])
    }
    cursor = c.cursor
    if (c.done) return { cursor, calls, events }
    expect(calls).toBeLessThan(10_000)
  }
}

for (const storage of ['fs', 'memory', 'indexeddb'] as const) {
  describe(`feed cursors on ${storage}`, () => {
    const open = (name: string) =>
      openStore(
        storage === 'fs'
          ? { storage, dir: join(dir, name) }
          : storage === 'indexeddb'
            ? { storage, name: `${name}-${Math.random()}`, worker: false }
            : { storage, worker: false },
      )

    it('a first walk sends everything, then only what was written since, in bounded batches that converge', async () => {
      const a = await open('a')
      const b = await open('b')
      try {
        const root = await a.createSession({ id: 'root' })
        await root.append(Array.from({ length: 250 }, (_, i) => ({ type: 'app/n', data: i })))
        await root.spawn({ mode: 'one-shot', id: 'kid', events: [{ type: 'app/task' }] })
        const f = await root.fork({ at: 120, id: 'fork' })
        await f.append({ type: 'app/after-fork' })
        const small = []
        for (let i = 0; i < 30; i++) {
          const s = await a.createSession({ id: `s${String(i).padStart(2, '0')}` })
          await s.append({ type: 'app/x', data: i })
          small.push(s)
        }
        const first = await pump(a, b, null, 40)
        expect(first.cursor.v).toBe(2)
        expect(first.calls).toBeGreaterThan(5)
        expect(await dumpStore(b)).toEqual(await dumpStore(a))
        // Nothing new: one call, nothing sent.
        const idle = await a.changesSince(first.cursor)
        expect(idle.batch.sessions).toEqual([])
        expect(idle.done).toBe(true)
        // Appends after the cursor: only those sessions, only their new events.
        const rootLength = root.projections.snapshot().asOfSeq + 1
        await root.append([{ type: 'app/late' }, { type: 'app/late2' }])
        await small[7]!.append({ type: 'app/late' })
        const c = await a.changesSince(idle.cursor)
        expect(c.batch.sessions.map((e) => [e.header.id, e.from, e.events.length]).sort()).toEqual([
          ['root', rootLength, 2],
          ['s07', 1, 1],
        ])
        await b.applyChanges(c.batch)
        expect(await dumpStore(b)).toEqual(await dumpStore(a))
        expect(JSON.stringify(c.cursor).length).toBeLessThan(200)
      } finally {
        await a.close()
        await b.close()
      }
    })
  })
}

describe('feed cursors: cost and checks', () => {
  /** An engine over a memory adapter that counts the session lookups and listings it makes. */
  function countingEngine(): { engine: Engine; counts: { getSession: number; listIds: number } } {
    const inner = createMemoryAdapter()
    const counts = { getSession: 0, listIds: 0 }
    const storage: StorageAdapter = {
      ...inner,
      getSession: (id) => (counts.getSession++, inner.getSession(id)),
      listIds: (o) => (counts.listIds++, inner.listIds(o)),
    }
    return { engine: new Engine({ storage }), counts }
  }

  it('a call after the walk looks at the sessions written since, not at every session of the store', async () => {
    const { engine, counts } = countingEngine()
    for (let i = 0; i < 2000; i++) await engine.createSession({ id: `s${i}` })
    // createSession leaves each open for writing here: append through the one that holds s1500.
    let cursor: ChangeCursor | null = null
    for (let c = await engine.changesSince(null, { maxEvents: 10_000 }); ; c = await engine.changesSince(cursor)) {
      cursor = c.cursor
      if (c.done) break
    }
    counts.getSession = 0
    counts.listIds = 0
    await engine.appendBodies('s1500', [encodeEventBody({ type: 'app/a' }, 's1500')])
    const c = await engine.changesSince(cursor)
    expect(c.batch.sessions.map((e) => e.header.id)).toEqual(['s1500'])
    expect(counts.listIds).toBe(0)
    expect(counts.getSession).toBeLessThanOrEqual(2)
    expect(JSON.stringify(c.cursor).length).toBeLessThan(200)
    await engine.close()
  })

  for (const grouped of [false, true]) {
    it(`the first walk looks sessions up several at a time${grouped ? ', in groups where the storage has getSessions (one that fails asked again one by one)' : ''}, and still hands them over in id order within the budget: small ones, big ones, a damaged one in its place`, async () => {
      const inner = createMemoryAdapter()
      let slow = false
      let inFlight = 0
      let most = 0
      let inGroups = 0
      let alone = 0
      const damaged = () => new SessionfoldError('CORRUPT_LOG', 'the header of s017 is damaged')
      const storage: StorageAdapter = {
        ...inner,
        // A lookup that takes a round trip's time, as on PostgreSQL or IndexedDB; s017's header damaged.
        getSession: async (id) => {
          most = Math.max(most, ++inFlight)
          alone++
          try {
            if (slow) await new Promise((resolve) => setTimeout(resolve, 2))
            if (slow && id === 's017') throw damaged()
            return await inner.getSession(id)
          } finally {
            inFlight--
          }
        },
        // As on PostgreSQL: one round trip for the group, which fails whole for a damaged header.
        getSessions: grouped
          ? async (ids, maxEvents) => {
              most = Math.max(most, (inFlight += ids.length))
              try {
                if (slow) await new Promise((resolve) => setTimeout(resolve, 2))
                if (slow && ids.includes('s017')) throw damaged()
                if (slow) inGroups += ids.length
                return await inner.getSessions!(ids, maxEvents)
              } finally {
                inFlight -= ids.length
              }
            }
          : undefined,
      }
      if (!grouped) delete storage.getSessions
      const engine = new Engine({ storage })
      const lengths = new Map<string, number>()
      for (let i = 0; i < 42; i++) {
        const id = `s${String(i).padStart(3, '0')}`
        const n = i === 10 || i === 30 ? 100 : 2 // two sessions longer than a look ahead reads whole
        await engine.createSession({ id })
        await engine.appendBodies(
          id,
          Array.from({ length: n }, (_, k) => encodeEventBody({ type: 'app/e', data: { id, k } }, id)),
        )
        if (id !== 's017') lengths.set(id, n)
      }
      slow = true
      most = 0
      alone = 0
      const order: string[] = []
      const seqs = new Map<string, number[]>()
      const failed: string[] = []
      let cursor: ChangeCursor | null = null
      for (let calls = 1; ; calls++) {
        const c = await engine.changesSince(cursor, { maxEvents: 50 })
        for (const e of c.batch.sessions) {
          if (!seqs.has(e.header.id)) order.push(e.header.id)
          const got = seqs.get(e.header.id) ?? []
          for (const event of e.events) {
            expect(event.data).toEqual({ id: e.header.id, k: event.seq })
            got.push(event.seq)
          }
          seqs.set(e.header.id, got)
        }
        expect(c.batch.sessions.reduce((n, e) => n + 1 + e.events.length, 0)).toBeLessThanOrEqual(50)
        failed.push(...c.failed.map((f) => f.id))
        cursor = c.cursor
        if (c.done) break
        expect(calls).toBeLessThan(100)
      }
      expect(order).toEqual([...lengths.keys()])
      for (const [id, n] of lengths) expect(seqs.get(id), id).toEqual(Array.from({ length: n }, (_, k) => k))
      expect(failed).toEqual(['s017'])
      expect(most).toBeGreaterThanOrEqual(4) // lookups overlapped (one at a time before)
      // In groups, most lookups were a group's (63 here), few alone (32: the first of each call, the big ones in their
      // turn, the failed group's); one by one, 107 were alone.
      if (grouped) expect({ inGroups: inGroups >= 40, alone: alone <= 45 }).toEqual({ inGroups: true, alone: true })
      await engine.close()
    })
  }

  it('a group lookup that fails for want of storage (not damage) fails the walk at once: its sessions are not asked for again one by one', async () => {
    const inner = createMemoryAdapter()
    let down = false
    let alone = 0
    const storage: StorageAdapter = {
      ...inner,
      getSession: async (id) => {
        if (down) alone++
        return inner.getSession(id)
      },
      getSessions: async (ids, maxEvents) => {
        if (down) throw new SessionfoldError('STORAGE_UNAVAILABLE', 'the store did not answer')
        return inner.getSessions!(ids, maxEvents)
      },
    }
    const engine = new Engine({ storage })
    for (let i = 0; i < 20; i++) await engine.createSession({ id: `u${String(i).padStart(2, '0')}` })
    down = true
    await expect(engine.changesSince(null)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
    // The first lookups of a walk go alone (its look-ahead grows from one); none after a group failed.
    expect(alone).toBeLessThanOrEqual(3)
    down = false
    await engine.close()
  })

  it('pending counts each event left behind once, however many feed entries name it', async () => {
    const store = await openStore({ storage: 'memory', worker: false })
    const s = await store.createSession({ id: 'one' })
    const { cursor } = await store.changesSince(null)
    for (let i = 0; i < 14; i++) await s.append({ type: 'app/e', data: i })
    let at: ChangeCursor = cursor
    for (let left = 14; left > 0; left--) {
      const c = await store.changesSince(at, { maxEvents: 2 }) // the header counts as one: one event a call
      expect(c.batch.sessions[0]!.events).toHaveLength(1)
      expect(c.pending).toBe(left - 1)
      at = c.cursor
    }
    await store.close()
  })

  it('a malformed feed cursor is INVALID_ARGUMENT; one of another store starts a walk; until goes with session-map cursors', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const b = await openStore({ storage: 'memory', worker: false })
    try {
      await a.createSession({ id: 'x' })
      const mine = (await a.changesSince(null)).cursor
      for (const bad of [{ v: 2 }, { v: 2, feed: 'f', at: 5 }, { v: 2, feed: 'f', at: '', extra: 1 }, { v: 2, feed: 'f', at: '', part: ['../x', 1, 2] }]) {
        await expectCode(a.changesSince(bad as never), 'INVALID_ARGUMENT')
      }
      await expectCode(a.changesSince(mine, { head: true }), 'INVALID_ARGUMENT')
      // b has never seen a's cursor's feed: it walks all of b.
      await b.createSession({ id: 'y' })
      const c = await b.changesSince(mine)
      expect(c.batch.sessions.map((e) => e.header.id)).toEqual(['y'])
      // A session-map cursor still works, and head/until still make them.
      const v1 = await a.changesSince({ v: 1, sessions: {} }, { head: true })
      expect(v1.cursor.v).toBe(1)
      expect(v1.head?.v).toBe(1)
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe('feed cursors on fs: a session whose folder is on its way', () => {
  it('a reader that sees its creation in the feed before its folder is in place waits for it, from a cursor and from no cursor', async () => {
    // The fs adapter writes a creation's feed record, then renames the session's folder into
    // place: hold that rename, as a slow disk (or a busy thread pool) would.
    let parked!: () => void
    const reached = new Promise<void>((resolve) => (parked = resolve))
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    let hold = false
    const fs: FsPromises = {
      ...nodeFs,
      writeSync,
      fdatasyncSync,
      rename: async (from, to) => {
        // The folder's rename (not a record's, the session index's of 'before' among them).
        if (hold && String(to).endsWith(folderOf('empty'))) {
          hold = false
          parked()
          await gate
        }
        return nodeFs.rename(from, to)
      },
    }
    const engine = new Engine({ storage: createFsAdapter({ dir, fs }) })
    try {
      await engine.createSession({ id: 'before' })
      const start = await engine.changesSince(null, {})
      hold = true
      const creating = engine.createSession({ id: 'empty' }) // no event will ever follow it
      await reached
      const fromCursor = engine.changesSince(start.cursor, {})
      const fromNothing = engine.changesSince(null, {})
      // Time for them to read the feed (without the wait, they answer now, without 'empty').
      await new Promise((resolve) => setTimeout(resolve, 100))
      open()
      await creating
      const ids = async (c: Promise<{ batch: { sessions: { header: { id: string } }[] } }>) => (await c).batch.sessions.map((e) => e.header.id)
      expect(await ids(fromCursor)).toEqual(['empty'])
      expect(await ids(fromNothing)).toEqual(['before', 'empty'])
    } finally {
      await engine.close()
    }
  })
})
