// Contract: §13 a history that continues — sync never splices two histories into one log (docs/CONTRACT.md)
// The repro that found it: stores S and D share event 0, then S appends S-1 and D appends D-1.
// S's next batch (from 1) is a conflict at seq 1 and writes nothing; S appends S-2, and the
// batch after that (from 2) must be a conflict too, not D's log `0 | D-1 | S-2`. On every
// backend, through the record codec, in this thread and through a worker, and through sync()
// and the CLI-style import of split entries; HTTP push and pull in test/server/sync-splice.test.ts,
// PostgreSQL in test/postgres/sync-splice.test.ts.
import 'fake-indexeddb/auto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type ChangeCursor, type OpenStoreOptions } from 'sessionfold'
import { dumpStore, expectCode } from '../support/helpers'
import { eventsOf, expectNoSplice, parted } from '../support/splice'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-splice-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const key = new Uint8Array(32).fill(7)
const SPLICE_STORES: [string, (name: string) => OpenStoreOptions][] = [
  ['memory', () => ({ storage: 'memory', worker: false })],
  ['memory, encrypted and compressed', () => ({ storage: 'memory', worker: false, encryption: { key } })],
  ['fs, in this thread', (name) => ({ storage: 'fs', dir: join(dir, name), worker: false })],
  ['fs, worker_threads', (name) => ({ storage: 'fs', dir: join(dir, name) })],
  ['fs, encrypted, worker_threads', (name) => ({ storage: 'fs', dir: join(dir, name), encryption: { key } })],
  ['indexeddb, in this thread', (name) => ({ storage: 'indexeddb', name: `splice-${name}-${Math.random()}`, worker: false })],
]

describe('a batch continues only the history it was made from', () => {
  for (const [mode, options] of SPLICE_STORES) {
    it(`the splice repro ends in reported conflicts with both logs unchanged (${mode})`, async () => {
      const s = await openStore(options('s'))
      const d = await openStore(options('d'))
      try {
        await expectNoSplice(s, d)
      } finally {
        await s.close()
        await d.close()
      }
    })
  }

  it('a batch of the same history goes on past a chain mark, through many small batches, and ends equal', async () => {
    const s = await openStore({ storage: 'fs', dir: join(dir, 's'), worker: false })
    const d = await openStore({ storage: 'fs', dir: join(dir, 'd'), worker: false })
    const session = await s.createSession({ id: 'long' })
    let cursor: ChangeCursor | null = null
    for (let round = 0; round < 40; round++) {
      await session.append(Array.from({ length: 7 }, (_, i) => ({ type: 'msg', data: { text: `${round}.${i}` } })))
      const c = await s.changesSince(cursor, { maxEvents: 5 + (round % 4) })
      expect(await d.applyChanges(c.batch)).toMatchObject({ conflicts: [], skipped: [] })
      cursor = c.cursor
    }
    for (;;) {
      const c = await s.changesSince(cursor)
      if (c.batch.sessions.length === 0) break
      expect((await d.applyChanges(c.batch)).conflicts).toEqual([])
      cursor = c.cursor
    }
    await session.close()
    expect(await eventsOf(d, 'long')).toEqual(await eventsOf(s, 'long'))
    await s.close()
    await d.close()
  })

  it('an entry from past the start without its witness, or with a malformed one, is INVALID_ARGUMENT and writes nothing', async () => {
    const s = await openStore({ storage: 'memory', worker: false })
    const d = await openStore({ storage: 'memory', worker: false })
    const cursor = await parted(s, d)
    const batch = (await s.changesSince(cursor)).batch
    const before = await dumpStore(d)
    const entry = batch.sessions[0]!
    const { chain: _chain, ...without } = entry
    for (const bad of [without, { ...entry, chain: 'abc' }, { ...entry, chain: 7 }, { ...entry, chain: entry.chain!.toUpperCase() }]) {
      await expectCode(d.applyChanges({ v: 1, sessions: [bad as never] }), 'INVALID_ARGUMENT')
    }
    // From the start, an entry carries no witness but that of nothing.
    const whole = (await s.changesSince(null)).batch.sessions[0]!
    await expectCode(d.applyChanges({ v: 1, sessions: [{ ...whole, chain: entry.chain }] }), 'INVALID_ARGUMENT')
    expect(await dumpStore(d)).toEqual(before)
    await s.close()
    await d.close()
  })
})
