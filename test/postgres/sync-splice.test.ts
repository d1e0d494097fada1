// Contract: §13 a history that continues — the splice repro on PostgreSQL stores (docs/CONTRACT.md)
// Contract: §15 deletes across stores — tombstones on PostgreSQL stores (docs/CONTRACT.md)
// Two PostgreSQL stores (schemas of one throwaway cluster), in a worker and in this thread, plain
// and encrypted: S's batch from 2 after a conflict at seq 1 is a conflict too, never D's log
// `0 | D-1 | S-2` (test/support/splice.ts), and the chain marks a writer stores are read back by
// another store's engine (a second process over the same schema).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions } from 'sessionfold'
import { CHAIN_ZERO, chainOver, eventJson } from '../../src/core/chain'
import { eventsOf, expectNoSplice } from '../support/splice'
import { startCluster, type PgCluster } from '../support/postgres'
import { expectBadTombstoneRefused, expectDeletesTravel } from '../support/tombstones'

let cluster: PgCluster
let url: string
let n = 0
beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('splice')
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})

const key = new Uint8Array(32).fill(3)
const modes: [string, (schema: string) => OpenStoreOptions][] = [
  ['worker_threads', (schema) => ({ storage: 'postgres', url, schema })],
  ['in this thread', (schema) => ({ storage: 'postgres', url, schema, worker: false })],
  ['encrypted, worker_threads', (schema) => ({ storage: 'postgres', url, schema, encryption: { key } })],
]

describe('PostgreSQL: a batch continues only the history it was made from', () => {
  for (const [mode, options] of modes) {
    it(`the splice repro ends in reported conflicts with both logs unchanged (${mode})`, async () => {
      const base = `splice_${process.pid}_${n++}`
      const s = await openStore(options(`${base}_s`))
      const d = await openStore(options(`${base}_d`))
      try {
        await expectNoSplice(s, d)
      } finally {
        await s.close()
        await d.close()
      }
    })
  }

  it("a writer's chain marks serve another engine on the same schema with the log's values", async () => {
    const schema = `marks_${process.pid}_${n++}`
    const writer = await openStore({ storage: 'postgres', url, schema })
    const session = await writer.createSession({ id: 'long' })
    for (let i = 0; i < 5; i++) await session.append(Array.from({ length: 100 }, (_, k) => ({ type: 'msg', data: { i, k } })))
    await session.close() // the writer lets go: its marks are stored
    const reader = await openStore({ storage: 'postgres', url, schema, worker: false })
    const events = await eventsOf(reader, 'long')
    const { createdAt } = (await reader.listSessions())[0]!
    expect(await reader.verify()).toMatchObject({ damaged: [] })
    for (const from of [64, 100, 257, 499]) {
      const c = await reader.changesSince({ v: 1, sessions: { long: [createdAt, from] } })
      expect(c.batch.sessions[0]).toMatchObject({ from, chain: chainOver(CHAIN_ZERO, events.slice(0, from).map(eventJson)) })
    }
    await reader.close()
    await writer.close()
  })
})

describe('PostgreSQL: deletes travel as tombstones (test/support/tombstones.ts)', () => {
  for (const [mode, options] of modes) {
    it(`a delete reaches the other stores, a stale copy is refused and then deleted, and the id can be used again (${mode})`, async () => {
      const base = `tomb_${process.pid}_${n++}`
      const stores = [await openStore(options(`${base}_a`)), await openStore(options(`${base}_b`)), await openStore(options(`${base}_c`))]
      try {
        await expectDeletesTravel(stores[0]!, stores[1]!, stores[2]!)
        await expectBadTombstoneRefused(stores[1]!, await openStore(options(`${base}_d`)).then((d) => (stores.push(d), d)))
      } finally {
        for (const s of stores) await s.close()
      }
    })
  }
})
