// Contract: §13 a delete in another process is seen, on PostgreSQL — observers hear it, calls reject, trees show it; §14 a live tail follows another process's appends (docs/CONTRACT.md)
// A child observed in this process is deleted by another process on the same schema: its views
// hear SESSION_NOT_FOUND, later calls and observe reject with it, the parent's tree shows the
// row unavailable; through the delete's notice, and through the poll when the notice is lost.
import { afterAll, beforeAll, describe, it } from 'vitest'
import { expectDeleteSeenFromAnotherProcess } from '../support/delete-seen'
import { expectSessionListOfAnotherProcess, expectTailOfAnotherProcess, expectTreeWatchOfAnotherProcess } from '../support/live-elsewhere'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
let url: string
let n = 0
beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('deleted')
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})

describe('PostgreSQL: a session deleted by another process is seen as deleted here', () => {
  for (const worker of [true, false]) {
    it(`its views hear it, calls reject, the tree shows it (${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectDeleteSeenFromAnotherProcess({ storage: 'postgres', url, schema: `deleted_${process.pid}_${n++}`, worker })
    })
    it(`a live tail (§14) yields what another process appends (${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectTailOfAnotherProcess({ storage: 'postgres', url, schema: `tail_${process.pid}_${n++}`, worker })
    })
    it(`watchChildren (§14) shows a tree another process grows and writes (${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectTreeWatchOfAnotherProcess({ storage: 'postgres', url, schema: `tree_${process.pid}_${n++}`, worker })
    })
    it(`store.sessions() lists what another process creates, titles, writes, lets go and deletes (${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectSessionListOfAnotherProcess({ storage: 'postgres', url, schema: `list_${process.pid}_${n++}`, worker })
    })
  }
})
