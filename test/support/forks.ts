// Support: conflicts resolved by forks (DESIGN §15), the same scenario on every kind of server
// and device. Two devices share a session, both write to it while apart, one reaches the server
// first; the other's own events move to a fork of the common prefix, its copy takes the
// server's history (an open view there hears it with meta.reset), and every store ends with the
// same sessions, the fork included.
import { expect } from 'vitest'
import type { SessionEvent, SessionHeader, Store } from 'sessionfold'
import type { Replication } from '../../src/sync/connect'
import { dumpStore, eventsOf, until } from './helpers'

export interface ForkDevices {
  server: Store
  a: Store
  b: Store
  /** A replication of `store` with the server (the test's token, closed with the test). */
  connect(store: Store, options?: Parameters<Store['connect']>[1]): Replication
}

const types = (events: readonly SessionEvent[]) => events.map((e) => e.type)

/** Both devices hold `id` with one event, through the server; then neither is connected. */
async function shared({ a, b, connect }: ForkDevices, id: string): Promise<void> {
  const s = await a.createSession({ id })
  await s.append({ type: 'app/first' })
  await s.close()
  const ra = connect(a)
  await ra.whenSynced()
  await ra.close()
  const rb = connect(b)
  await until(async () => (await b.listSessions()).some((h) => h.id === id), 10_000)
  await rb.whenSynced()
  await rb.close()
}

async function write(store: Store, id: string, ...kinds: string[]): Promise<void> {
  const s = await store.openSession(id)
  for (const type of kinds) await s.append({ type })
  await s.close()
}

/**
 * The scenario: `a` writes two events and syncs first, `b` wrote two others meanwhile and holds
 * a view open; `b` connects with the default onConflict. Returns the fork's id.
 */
export async function expectConflictForked(d: ForkDevices, id = 'u1-both'): Promise<string> {
  const { server, a, b, connect } = d
  await shared(d, id)
  await write(a, id, 'app/from-a')
  await write(b, id, 'app/from-b1', 'app/from-b2')
  const ra = connect(a)
  await ra.whenSynced()
  await ra.close()

  const view = await b.observe(id)
  const heard: { seq: number; reset?: true; asOfSeq: number }[] = []
  const stop = view.projections.subscribe(
    (snapshot, meta) => void heard.push({ seq: meta.seq, asOfSeq: snapshot.asOfSeq, ...(meta.reset ? { reset: meta.reset } : {}) }),
  )
  expect(view.projections.asOfSeq).toBe(2)
  const rb = connect(b)
  await until(() => rb.conflicts.some((c) => c.forkedAs), 15_000)
  const conflict = rb.conflicts.find((c) => c.forkedAs)!
  expect(conflict).toMatchObject({ id, seq: 1, reason: 'event' })
  const forkedAs = conflict.forkedAs!
  expect(forkedAs.startsWith(`${id}-f`)).toBe(true) // the session's id first: rules by prefix (authorize) hold for it
  await rb.whenSynced()

  // b: the session is the server's history; its own events are in the fork, at their seqs.
  expect(types(await eventsOf(b, id))).toEqual(['app/first', 'app/from-a'])
  const fork = await eventsOf(b, forkedAs)
  expect(types(fork)).toEqual(['app/first', 'app/from-b1', 'app/from-b2'])
  expect(fork.map((e) => e.seq)).toEqual([0, 1, 2])
  const header = (await b.listSessions()).find((h) => h.id === forkedAs) as SessionHeader
  expect(header).toMatchObject({ origin: 'fork', forkedFrom: id, seedLength: 1 })

  // The open view heard the new values once, with reset, its asOfSeq going back.
  await until(() => heard.some((h) => h.reset), 5000)
  expect(view.projections.asOfSeq).toBe(1)
  expect(heard.filter((h) => h.reset)).toEqual([{ seq: 1, asOfSeq: 1, reset: true }])
  stop()
  await view.close()

  // Every store ends with the same sessions: the fork reaches the server and a.
  expect(types(await eventsOf(server, forkedAs))).toEqual(['app/first', 'app/from-b1', 'app/from-b2'])
  const ra2 = connect(a)
  await until(async () => (await a.listSessions()).some((h) => h.id === forkedAs), 10_000)
  await ra2.whenSynced()
  await rb.whenSynced()
  expect(await dumpStore(a)).toEqual(await dumpStore(server))
  expect(await dumpStore(b)).toEqual(await dumpStore(server))
  expect([ra2.pending, rb.pending, ra2.conflicts.length]).toEqual([0, 0, 0])
  return forkedAs
}

/** While `b` holds the session open for writing, the conflict is reported and nothing moves; once it closes, the fork is made. */
export async function expectForkWaitsForWriter(d: ForkDevices, id = 'u1-held'): Promise<void> {
  const { server, a, b, connect } = d
  await shared(d, id)
  await write(a, id, 'app/from-a')
  const ra = connect(a)
  await ra.whenSynced()
  await ra.close()
  const held = await b.openSession(id)
  await held.append({ type: 'app/from-b' })
  const rb = connect(b)
  await until(() => rb.conflicts.length > 0, 15_000)
  await new Promise((resolve) => setTimeout(resolve, 500)) // rounds pass; the writer still holds it
  expect(rb.conflicts.every((c) => c.forkedAs === undefined)).toBe(true)
  expect(rb.pending).toBe(1) // not on the server: pending until its fork takes it
  expect(types(await eventsOf(b, id))).toEqual(['app/first', 'app/from-b'])
  await held.append({ type: 'app/from-b-later' }) // still writing: these move too
  await held.close()
  await until(() => rb.conflicts.some((c) => c.forkedAs), 15_000)
  const forkedAs = rb.conflicts.find((c) => c.forkedAs)!.forkedAs!
  await rb.whenSynced()
  expect(rb.pending).toBe(0)
  expect(types(await eventsOf(b, id))).toEqual(['app/first', 'app/from-a'])
  expect(types(await eventsOf(server, forkedAs))).toEqual(['app/first', 'app/from-b', 'app/from-b-later'])
}

/** With `onConflict: 'report'` nothing moves on either side, as before forks. */
export async function expectReportOnly(d: ForkDevices, id = 'u1-report'): Promise<void> {
  const { server, a, b, connect } = d
  await shared(d, id)
  await write(a, id, 'app/from-a')
  await write(b, id, 'app/from-b')
  const ra = connect(a)
  await ra.whenSynced()
  await ra.close()
  const rb = connect(b, { onConflict: 'report' })
  await until(() => rb.conflicts.length > 0, 15_000)
  await rb.whenSynced()
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(rb.conflicts.every((c) => c.forkedAs === undefined)).toBe(true)
  expect((await b.listSessions()).map((h) => h.id).sort()).toEqual([id])
  expect(types(await eventsOf(b, id))).toEqual(['app/first', 'app/from-b'])
  expect(types(await eventsOf(server, id))).toEqual(['app/first', 'app/from-a'])
}
