// Contract: §13 a history that continues — chain values kept with the log: O(1) per append and per batch, a cache rebuilt when missing, checked by verify (docs/CONTRACT.md)
// An engine's writer steps the chain as it folds and stores a mark every 64 events (chains.ts).
// Another engine on the same storage (another process) finds the value at any position from the
// mark at or below it and at most 63 events read, never the whole prefix. A store written
// before chains existed (no marks) gives the same values from its log, and its next writer
// stores the marks; marks a crash left beyond the log go before that writer appends; verify
// reports marks that do not match the log, and changes nothing.
import 'fake-indexeddb/auto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsAdapter } from '../../src/backends/fs'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { StorageAdapter } from '../../src/storage/types'
import { CHAIN_ZERO, chainOver, eventJson, murmur128 } from '../../src/core/chain'
import type { SessionHeader } from '../../src/core/model'
import { Engine } from '../../src/engine'
import { MARK_EVERY, decodePage, encodePage } from '../../src/engine/chains'
import { instrument } from '../support/instrumented-adapter'
import { readAll, recordsOf, snapshotStore, until } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-marks-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const backends: [string, () => StorageAdapter][] = [
  ['memory', () => createMemoryAdapter()],
  ['fs', () => createFsAdapter({ dir })],
  ['indexeddb (fake)', () => createIndexedDbAdapter({ name: `marks-${Math.random()}` })],
]

/** The chain of the stored log at each position, computed from its events alone. */
async function expectedChains(storage: StorageAdapter, id: string): Promise<string[]> {
  const events = await readAll(storage, id)
  const out = [CHAIN_ZERO]
  for (let i = 0; i < events.length; i++) out.push(chainOver(out[i]!, [eventJson(events[i]!)]))
  return out
}

const shared = (storage: StorageAdapter): StorageAdapter => ({ ...storage, close: async () => {} })

async function writeLog(engine: Engine, id: string, batches: number[]): Promise<SessionHeader> {
  const header = await engine.createSession({ id })
  let n = 0
  for (const size of batches)
    await engine.append(
      id,
      Array.from({ length: size }, () => ({ type: 'msg', data: { n: n++, text: 'é'.repeat(n % 7) } })),
    )
  await engine.release(id, 'writer')
  return header
}

for (const [name, make] of backends) {
  describe(`chain marks on ${name}`, () => {
    it('a value anywhere costs the mark at or below it and at most 63 events read, in another engine too', async () => {
      const storage = make()
      const writer = new Engine({ storage: shared(storage) })
      const header = await writeLog(writer, 'long', [1, 100, 37, 300, 64, 1, 2000])
      const want = await expectedChains(storage, 'long')
      // Stored: one block of 64 marks per 4,096 events, each the log's chain value there.
      const blocks = Object.entries(await recordsOf(storage)).filter(([k]) => k.startsWith('session/long/chain/'))
      expect(blocks.map(([k]) => k)).toEqual(['session/long/chain/0'])
      const marks = decodePage(blocks[0]![1], header.createdAt)!
      expect(marks).toEqual(Array.from({ length: Math.floor((want.length - 1) / MARK_EVERY) }, (_, i) => want[(i + 1) * MARK_EVERY]))
      const inst = instrument(shared(storage))
      const other = new Engine({ storage: inst.adapter })
      for (const at of [0, 1, 63, 64, 65, 127, 128, 1000, 2439, 2503, want.length - 1]) {
        inst.reset()
        expect(await other.chainAt(header, at)).toBe(want[at])
        expect(inst.counts.eventsRead).toBeLessThan(MARK_EVERY)
      }
      // The writer's own engine answers from memory at its ends, and from the marks elsewhere.
      await writer.close()
      await other.close()
      await storage.close()
    })

    it('a store without marks (written before chains) gives the same values; its next writer stores them; verify is clean', async () => {
      const storage = make()
      const writer = new Engine({ storage: shared(storage) })
      const header = await writeLog(writer, 'old', [500, 500, 300])
      await writer.close()
      // As a store of sessionfold 0.1 is: no records at all.
      for (const key of await storage.kv!.list([])) await storage.kv!.delete(key)
      const want = await expectedChains(storage, 'old')
      const inst = instrument(shared(storage))
      const reader = new Engine({ storage: inst.adapter })
      expect(await reader.chainAt(header, 1000)).toBe(want[1000])
      expect(await reader.chainAt(header, 1300)).toBe(want[1300])
      const before = await snapshotStore(storage)
      expect(await recordsOf(storage)).toEqual({}) // a read never writes back
      // A writer opens it: the chain is rebuilt from the log, and its marks stored.
      await reader.openSession('old')
      await until(async () => decodePage(await storage.kv!.get(['session', 'old', 'chain', '0']), header.createdAt)?.length === Math.floor(1300 / MARK_EVERY))
      await reader.release('old', 'writer')
      expect(await snapshotStore(storage)).not.toEqual(before)
      const fresh = new Engine({ storage: instrument(shared(storage)).adapter })
      const plan = await fresh.verifyPlan()
      expect(await fresh.verifyStep(undefined, plan.events + 1)).toMatchObject({ damaged: [] })
      inst.reset()
      expect(await reader.chainAt(header, 1299)).toBe(want[1299])
      expect(inst.counts.eventsRead).toBeLessThan(MARK_EVERY)
      await reader.close()
      await fresh.close()
      await storage.close()
    })

    it("a page of the first format (its marks possibly made without events' versions) is passed over, not reported, and written again by the next writer", async () => {
      const storage = make()
      const writer = new Engine({ storage: shared(storage) })
      const header = await writeLog(writer, 's', [200])
      await writer.close()
      const key = ['session', 's', 'chain', '0']
      const want = await expectedChains(storage, 's')
      // Format 1, with a good sum and wrong marks (as such a writer made them).
      const m = ['1'.repeat(32), '2'.repeat(32), '3'.repeat(32)].join('')
      const sum = murmur128(new TextEncoder().encode(`${header.createdAt}:${m}`)).slice(0, 16)
      await storage.kv!.put(key, JSON.stringify({ v: 1, c: header.createdAt, m, s: sum }))
      const checker = new Engine({ storage: shared(storage) })
      expect((await checker.verifyStep(undefined, 10_000)).damaged).toEqual([])
      expect(await checker.chainAt(header, 192)).toBe(want[192]) // from the log, not the page
      await checker.openSession('s')
      await checker.append('s', [{ type: 'more' }])
      await checker.release('s', 'writer')
      expect(decodePage(await storage.kv!.get(key), header.createdAt)).toEqual([64, 128, 192].map((at) => want[at]))
      expect(JSON.parse((await storage.kv!.get(key))!)).toMatchObject({ v: 2 })
      await checker.close()
      await storage.close()
    })

    it('marks a crash left beyond the log go before its next writer appends; verify reports marks that do not match, and changes nothing', async () => {
      const storage = make()
      const writer = new Engine({ storage: shared(storage) })
      const header = await writeLog(writer, 's', [200])
      await writer.close()
      const key = ['session', 's', 'chain', '0']
      const marks = decodePage(await storage.kv!.get(key), header.createdAt)!
      expect(marks).toHaveLength(3)
      // Marks past the log, with a good sum: a machine crash took back the events they were made from.
      const stale = ['1'.repeat(32), '2'.repeat(32)]
      await storage.kv!.put(key, encodePage(header.createdAt, [...marks, ...stale]))
      const checker = new Engine({ storage: shared(storage) })
      const before = await snapshotStore(storage)
      let report = await checker.verifyStep(undefined, 10_000)
      expect(report.damaged).toEqual(
        [256, 320].map((at) =>
          expect.objectContaining({ id: 's', code: 'CORRUPT_CHECKPOINT', detail: expect.stringContaining(`chain mark ${at} of session "s" lies beyond`) }),
        ),
      )
      expect(await snapshotStore(storage)).toEqual(before)
      // The next writer drops them before it appends: the marks there are its own events' values.
      await checker.openSession('s')
      expect(decodePage(await storage.kv!.get(key), header.createdAt)).toEqual(marks)
      await checker.append(
        's',
        Array.from({ length: 200 }, (_, n) => ({ type: 'other', data: { n } })),
      )
      await checker.release('s', 'writer')
      const want = await expectedChains(storage, 's')
      expect(decodePage(await storage.kv!.get(key), header.createdAt)).toEqual([64, 128, 192, 256, 320, 384].map((at) => want[at]))
      expect(await new Engine({ storage: shared(storage) }).chainAt(header, 320)).toBe(want[320])
      // Damaged marks (a flipped digit, the sum made to fit): verify says so, and nothing changes.
      const flipped = decodePage(await storage.kv!.get(key), header.createdAt)!.map((m, i) => (i === 1 ? `${m[0] === '0' ? '1' : '0'}${m.slice(1)}` : m))
      await storage.kv!.put(key, encodePage(header.createdAt, flipped))
      report = await checker.verifyStep(undefined, 10_000)
      expect(report.damaged).toEqual([
        expect.objectContaining({
          id: 's',
          code: 'CORRUPT_CHECKPOINT',
          detail: expect.stringContaining('chain mark 128 of session "s" is not the chain value'),
        }),
      ])
      // A block that does not open (its sum no longer fits) is reported, and not used: values come from the log.
      await storage.kv!.put(key, (await storage.kv!.get(key))!.replace('"s":"', '"s":"0'))
      report = await checker.verifyStep(undefined, 10_000)
      expect(report.damaged).toEqual([
        expect.objectContaining({ id: 's', code: 'CORRUPT_CHECKPOINT', detail: expect.stringContaining('block 0 is not a block of marks') }),
      ])
      expect(await new Engine({ storage: shared(storage) }).chainAt(header, 300)).toBe(want[300])
      await checker.close()
      await storage.close()
    })
  })
}
