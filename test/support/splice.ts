// The splice repro of DESIGN §13, for every test that runs it (test/engine, test/postgres,
// test/server): stores S and D share event 0, then S appends S-1 and D appends D-1.
import { expect } from 'vitest'
import { sync, type ChangeCursor, type SessionEvent, type Store } from 'sessionfold'
import { CHAIN_ZERO, chainOver, eventJson } from '../../src/core/chain'
import { dumpStore } from './helpers'

export async function eventsOf(store: Store, id: string): Promise<SessionEvent[]> {
  const view = await store.observe(id)
  const out: SessionEvent[] = []
  for await (const e of view.events()) out.push(e)
  await view.close()
  return out
}

export const texts = (events: SessionEvent[]) => events.map((e) => (e.data as { text: string }).text)

export async function append(store: Store, id: string, text: string): Promise<void> {
  const s = await store.openSession(id)
  await s.append({ type: 'msg', data: { text } })
  await s.close()
}

/** S and D share event 0 ('common'); then S writes S-1 and D writes D-1. S's cursor is past event 0. */
export async function parted(s: Store, d: Store): Promise<ChangeCursor> {
  const session = await s.createSession({ id: 'talk' })
  await session.append({ type: 'msg', data: { text: 'common' } })
  await session.close()
  const first = await s.changesSince(null)
  expect(await d.applyChanges(first.batch)).toMatchObject({ copiedSessions: 1, copiedEvents: 1, conflicts: [] })
  await append(s, 'talk', 'S-1')
  await append(d, 'talk', 'D-1')
  return first.cursor
}

/**
 * S's batches after `parted`: the first (from 1) is a conflict at seq 1 and writes nothing; S
 * appends S-2, and the next (from 2) is a conflict too, with both chain values, not D's log
 * `0 | D-1 | S-2`. Then D's batch to S, and sync() both ways: conflicts, nothing changed.
 */
export async function expectNoSplice(s: Store, d: Store): Promise<void> {
  const cursor = await parted(s, d)
  const one = await s.changesSince(cursor)
  // Its witness: the chain over the event both hold.
  const common = (await eventsOf(s, 'talk')).slice(0, 1)
  expect(one.batch.sessions).toEqual([expect.objectContaining({ from: 1, chain: chainOver(CHAIN_ZERO, common.map(eventJson)) })])
  const beforeD = await dumpStore(d)
  const first = await d.applyChanges(one.batch)
  expect(first).toMatchObject({ copiedEvents: 0, conflicts: [{ id: 'talk', seq: 1, reason: 'event' }] })
  await append(s, 'talk', 'S-2')
  const two = await s.changesSince(one.cursor)
  expect(two.batch.sessions).toEqual([expect.objectContaining({ from: 2, events: [expect.objectContaining({ seq: 2 })] })])
  const second = await d.applyChanges(two.batch)
  // The histories parted before the entry's first event: the conflict says so, with both chain values.
  expect(second.copiedEvents).toBe(0)
  expect(second.conflicts).toEqual([
    {
      id: 'talk',
      seq: 1,
      reason: 'event',
      source: expect.objectContaining({ id: 'talk' }),
      target: expect.objectContaining({ id: 'talk' }),
      chain: { at: 2, source: two.batch.sessions[0]!.chain, target: expect.stringMatching(/^[0-9a-f]{32}$/) },
    },
  ])
  expect(second.conflicts[0]!.chain!.target).not.toBe(second.conflicts[0]!.chain!.source)
  expect(await dumpStore(d)).toEqual(beforeD)
  expect(texts(await eventsOf(d, 'talk'))).toEqual(['common', 'D-1'])
  expect(texts(await eventsOf(s, 'talk'))).toEqual(['common', 'S-1', 'S-2'])
  // The other way, the same: D's batch from where S stands is refused by S.
  const back = await d.changesSince(cursor)
  const beforeS = await dumpStore(s)
  expect((await s.applyChanges(back.batch)).conflicts).toEqual([expect.objectContaining({ id: 'talk', seq: 1, reason: 'event' })])
  expect(await dumpStore(s)).toEqual(beforeS)
  // And sync() reports it, changing nothing.
  const synced = await sync(s, d, { direction: 'both' })
  expect(synced.conflicts).toEqual([expect.objectContaining({ id: 'talk', seq: 1, reason: 'event' })])
  expect(await dumpStore(s)).toEqual(beforeS)
  expect(await dumpStore(d)).toEqual(beforeD)
}
