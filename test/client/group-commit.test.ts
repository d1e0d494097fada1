// Contract: §6 client API — group commit on the path users call: appends that arrive together share one write and one fdatasync, through a worker too (docs/CONTRACT.md)
// Counted in the engine's own thread (sync-counter.ts): concurrent appends through the store,
// in a worker_threads worker and in this thread, share fdatasyncs; appends awaited one after
// another each get their own, on the engine's thread (the lone flush, no thread-pool hop).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions, type Session } from 'sessionfold'
import { installSyncCounter, readSyncCount } from '../fixtures/sync-counter'

let root: string
let countFile: string
let storeDir: string
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sessionfold-group-'))
  countFile = join(root, 'syncs')
  storeDir = join(root, 'store')
  process.env.SESSIONFOLD_TEST_SYNC_COUNT = countFile
  process.env.SESSIONFOLD_TEST_SYNC_DIR = storeDir
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
})

const modes: [string, () => Promise<OpenStoreOptions>][] = [
  ['in a worker', async () => ({ dir: storeDir, workerUrl: new URL('../fixtures/sync-count-worker.ts', import.meta.url) })],
  [
    'in this thread',
    async () => {
      await installSyncCounter(countFile, storeDir)
      return { dir: storeDir, worker: false }
    },
  ],
]

const seqsOf = async (s: Session) => {
  const seqs: number[] = []
  for await (const e of s.events()) seqs.push(e.seq)
  return seqs
}

describe('group commit through the store', () => {
  for (const [mode, options] of modes) {
    it(`concurrent appends to one session or many share fdatasyncs; awaited ones sync alone on the engine's thread (${mode})`, async () => {
      const store = await openStore(await options())
      const one = await store.createSession({ id: `one-${mode.length}` })
      const many = await Promise.all(Array.from({ length: 8 }, (_, i) => store.createSession({ id: `m${i}-${mode.length}` })))
      let before = readSyncCount(countFile)
      for (let i = 0; i < 10; i++) await one.append({ type: 'app/e', data: i })
      let after = readSyncCount(countFile)
      expect(after.all - before.all).toBe(10)
      expect(after.onThread - before.onThread).toBe(10)

      before = after
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => one.append({ type: 'app/e', data: 10 + i })))
      after = readSyncCount(countFile)
      expect(results.map((r) => r.firstSeq).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => 10 + i))
      expect(await seqsOf(one)).toEqual([...Array(210).keys()])
      expect(after.all - before.all).toBeLessThanOrEqual(20) // one per group, not one per append

      before = after
      await Promise.all(many.flatMap((s) => Array.from({ length: 25 }, (_, i) => s.append({ type: 'app/e', data: i }))))
      after = readSyncCount(countFile)
      for (const s of many) expect(await seqsOf(s)).toEqual([...Array(25).keys()])
      expect(after.all - before.all).toBeLessThanOrEqual(8 * 5) // 200 appends to 8 logs
      await store.close()
    })
  }
})
