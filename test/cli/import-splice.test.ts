// Contract: §13 a history that continues — import into a store that already holds the session (docs/CONTRACT.md)
// `sessionfold import` applies a long session in entries of 1,000 events. A store that holds
// the session's first 990 events and 10 of its own at seqs 990-999 conflicts with the first
// entry, and the second (from seq 1000) must not go on after its own events: it carries the
// export's chain value there, so it is a conflict too, and the store is left as it was. A store
// holding the same first 990 events takes the rest and ends equal.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type SessionEvent } from 'sessionfold'
import { runCli } from '../support/run-cli'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-import-splice-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const run = (args: string[], stdin?: string) => runCli(args, { stdin })

async function appendTo(path: string, id: string, count: number, tag: string, create = false): Promise<void> {
  const store = await openStore({ dir: path, worker: false })
  const s = create ? await store.createSession({ id }) : await store.openSession(id)
  for (let done = 0; done < count; done += 500) {
    await s.append(Array.from({ length: Math.min(500, count - done) }, (_, i) => ({ type: 'msg', data: { tag, i: done + i } })))
  }
  await store.close()
}

async function eventsIn(path: string, id: string): Promise<SessionEvent[]> {
  const store = await openStore({ dir: path, worker: false })
  const view = await store.observe(id)
  const out: SessionEvent[] = []
  for await (const e of view.events()) out.push(e)
  await store.close()
  return out
}

describe('import into a store that already holds the session', () => {
  it("goes on only from the same history: a later entry is never appended after the store's own events", async () => {
    const source = join(dir, 'source')
    const mine = join(dir, 'mine')
    const same = join(dir, 'same')
    await appendTo(source, 'long', 990, 'source', true)
    const early = await run(['export', 'long', '--dir', source])
    for (const target of [mine, same]) expect((await run(['import', '--dir', target], early.out)).code).toBe(0)
    await appendTo(mine, 'long', 10, 'mine')
    await appendTo(source, 'long', 1510, 'source')
    const full = await run(['export', 'long', '--dir', source])
    const before = await eventsIn(mine, 'long')
    const result = await run(['import', '--dir', mine, '--json'], full.out)
    expect(result.code).toBe(1)
    const applied = JSON.parse(result.out) as { copiedEvents: number; conflicts: { id: string; seq: number }[] }
    expect(applied.copiedEvents).toBe(0)
    expect(applied.conflicts).toEqual([
      expect.objectContaining({ id: 'long', seq: 990, reason: 'event' }), // the first entry shows where they part
      expect.objectContaining({ id: 'long', seq: 999, reason: 'event' }), // the second: before it, from its witness
    ])
    expect(await eventsIn(mine, 'long')).toEqual(before)
    // The same history takes the rest, entry after entry, and ends equal.
    const taken = await run(['import', '--dir', same, '--json'], full.out)
    expect(taken.code).toBe(0)
    expect(JSON.parse(taken.out)).toMatchObject({ copiedEvents: 1510, conflicts: [] })
    expect(await eventsIn(same, 'long')).toEqual(await eventsIn(source, 'long'))
  })
})
