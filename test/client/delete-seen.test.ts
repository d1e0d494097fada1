// Contract: §13 a delete in another process is seen — observers hear it, calls reject, trees show it; §14 a live tail follows another process's appends (docs/CONTRACT.md)
// fs stores: a delete in this store and one in another process sharing the folder, in a worker
// and in this thread. PostgreSQL: test/postgres/delete-seen.test.ts.
import 'fake-indexeddb/auto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions, type SessionfoldError } from 'sessionfold'
import { expectDeleteSeenFromAnotherProcess } from '../support/delete-seen'
import { expectSessionListOfAnotherProcess, expectTailOfAnotherProcess, expectTreeWatchOfAnotherProcess } from '../support/live-elsewhere'
import { expectCode } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-delete-seen-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('a deleted session is seen as deleted by every view of it', () => {
  const here: [string, () => OpenStoreOptions][] = [
    ['memory', () => ({ storage: 'memory', worker: false })],
    ['fs, worker_threads', () => ({ storage: 'fs', dir })],
    ['fs, in this thread', () => ({ storage: 'fs', dir, worker: false })],
    ['indexeddb, in this thread', () => ({ storage: 'indexeddb', name: `deleted-${Math.random()}`, worker: false })],
  ]
  for (const [mode, options] of here) {
    it(`in this store: its views hear it, later calls reject with SESSION_NOT_FOUND (${mode})`, async () => {
      const store = await openStore(options())
      const parent = await store.createSession({ id: 'p' })
      const kid = await parent.spawn({ mode: 'one-shot', id: 'kid' })
      await kid.close()
      const a = await store.observe('kid')
      const b = await store.observe('kid')
      const heard: (SessionfoldError | undefined)[] = []
      a.projections.subscribe((_s, meta) => heard.push(meta?.error))
      b.projections.subscribe('subagentTiming', (_v, meta) => heard.push(meta.error))
      await store.deleteSession('kid')
      await new Promise((r) => setTimeout(r, 50))
      expect(heard.map((e) => e?.code)).toEqual([undefined, undefined, 'SESSION_NOT_FOUND', 'SESSION_NOT_FOUND'])
      await expectCode(b.listChildren(), 'SESSION_NOT_FOUND')
      await expectCode(store.observe('kid'), 'SESSION_NOT_FOUND')
      expect(await parent.listChildren()).toEqual([expect.objectContaining({ kind: 'diagnostic', id: 'kid', reason: 'unavailable' })])
      await a.close()
      await b.close()
      await parent.close()
      await store.close()
    })
  }

  for (const worker of [true, false]) {
    it(`in another process sharing the folder: heard within the follow bound (fs, ${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectDeleteSeenFromAnotherProcess({ storage: 'fs', dir, worker })
    })
  }
})

describe('live tails and watched trees (§14) show what another process does', () => {
  for (const worker of [true, false]) {
    it(`events({ follow: true }) on a session another process writes (fs, ${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectTailOfAnotherProcess({ storage: 'fs', dir, worker })
    })
    it(`watchChildren on a tree another process grows and writes (fs, ${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectTreeWatchOfAnotherProcess({ storage: 'fs', dir, worker })
    })
    it(`store.sessions() lists what another process creates, titles, writes, lets go and deletes (${worker ? 'worker_threads' : 'in this thread'})`, async () => {
      await expectSessionListOfAnotherProcess({ storage: 'fs', dir, worker })
    })
  }
})
