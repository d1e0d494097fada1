// Deletes that travel (DESIGN §15), for every test that runs them (test/engine on memory, fs and
// IndexedDB, test/postgres): stores A, B and C hold the same sessions; A deletes a tree, and its
// tombstones delete B's copies, keep C's stale copy (written to after the delete) out of B,
// delete C's copies on the way back, and let the id be used again.
import { expect } from 'vitest'
import { sync, type ChangeCursor, type Changes, type Store } from 'sessionfold'
import { append } from './splice'
import { expectCode } from './helpers'

export const idsOf = async (store: Store) => (await store.listSessions()).map((h) => h.id).sort()

/** Every batch after `cursor` until done, merged: the last cursor, all entries' ids, all tombstones. */
export async function drain(store: Store, cursor: ChangeCursor | null, options: { maxEvents?: number } = {}) {
  const sessions: string[] = []
  const deleted: NonNullable<Changes['batch']['deleted']> = []
  for (let n = 0; ; n++) {
    expect(n).toBeLessThan(1000)
    const c = await store.changesSince(cursor, options)
    sessions.push(...c.batch.sessions.map((e) => e.header.id))
    deleted.push(...(c.batch.deleted ?? []))
    cursor = c.cursor
    if (c.done) return { cursor, sessions, deleted }
  }
}

export async function expectDeletesTravel(a: Store, b: Store, c: Store): Promise<void> {
  // A's sessions: x with a child, and y; B and C get them.
  const x = await a.createSession({ id: 'x' })
  await x.append({ type: 'msg', data: { text: 'one' } })
  await (await x.spawn({ mode: 'one-shot', id: 'xk' })).close()
  await x.close()
  await (await a.createSession({ id: 'y' })).close()
  expect(await sync(a, b)).toMatchObject({ copiedSessions: 3, deletedSessions: 0, skipped: [] })
  expect(await sync(a, c)).toMatchObject({ copiedSessions: 3, skipped: [] })
  const born = Object.fromEntries((await a.listSessions()).map((h) => [h.id, h.createdAt]))
  const { cursor } = await drain(a, null)

  // A deletes the tree: after B's cursor, changesSince carries the two tombstones and no session.
  const before = Date.now()
  await a.deleteSession('x', { tree: true })
  const since = await a.changesSince(cursor)
  expect(since.batch.sessions).toEqual([])
  expect(since.batch.deleted?.map((t) => [t.id, t.createdAt]).sort()).toEqual([
    ['x', born.x],
    ['xk', born.xk],
  ])
  for (const t of since.batch.deleted!) expect(t.deletedAt).toBeGreaterThanOrEqual(before)
  expect(since.done).toBe(true)
  expect((await a.changesSince(since.cursor)).batch).toEqual({ v: 1, sessions: [] })

  // B applies them: its copies go, and a tail on one hears it; again, nothing happens.
  const view = await b.observe('x')
  const tail = expectCode(
    (async () => {
      for await (const _ of view.events({ follow: true })) {
      }
    })(),
    'SESSION_NOT_FOUND',
  )
  expect(await b.applyChanges(since.batch)).toMatchObject({ deletedSessions: 2, copiedSessions: 0, skipped: [], conflicts: [] })
  await tail
  await view.close().catch(() => {})
  expect(await idsOf(b)).toEqual(['y'])
  expect(await b.applyChanges(since.batch)).toMatchObject({ deletedSessions: 0, skipped: [] })

  // C was away: it writes to its copy of x, then syncs to B. B refuses that life ('deleted',
  // with its tombstone) and stays as it was.
  await append(c, 'x', 'late')
  const stale = await sync(c, b)
  expect(stale).toMatchObject({ copiedSessions: 0, copiedEvents: 0, deletedSessions: 0, conflicts: [] })
  expect(stale.skipped.map((s) => [s.id, s.reason, s.tombstone?.createdAt]).sort()).toEqual([
    ['x', 'deleted', born.x],
    ['xk', 'deleted', born.xk],
  ])
  expect(await idsOf(b)).toEqual(['y'])
  // Both ways: B's tombstones come back to C, whose copies go.
  const both = await sync(c, b, { direction: 'both' })
  expect(both.deletedSessions).toBe(2)
  expect(await idsOf(c)).toEqual(['y'])

  // A new life of the id, on B: it goes to A (whose tombstone is of the old life) and to C.
  const again = await b.createSession({ id: 'x' })
  await again.append({ type: 'msg', data: { text: 'new' } })
  await again.close()
  const reborn = (await b.listSessions()).find((h) => h.id === 'x')!.createdAt
  expect(reborn).not.toBe(born.x)
  expect(await sync(b, a)).toMatchObject({ copiedSessions: 1, copiedEvents: 1, skipped: [], conflicts: [] })
  expect(await sync(b, c)).toMatchObject({ copiedSessions: 1, skipped: [], conflicts: [] })
  expect((await a.listSessions()).find((h) => h.id === 'x')?.createdAt).toBe(reborn)

  // A walk from nothing sends every tombstone before any session, in bounded batches.
  const walked = await drain(a, null, { maxEvents: 1 })
  expect(walked.deleted.map((t) => [t.id, t.createdAt]).sort()).toEqual([
    ['x', born.x],
    ['xk', born.xk],
  ])
  expect(walked.sessions.sort()).toEqual(['x', 'y'])
  const first = await a.changesSince(null, { maxEvents: 1 })
  expect(first.batch.sessions).toEqual([])
  expect(first.batch.deleted).toHaveLength(1)
}

/** A bad tombstone in a batch: INVALID_ARGUMENT, and nothing of the batch written. */
export async function expectBadTombstoneRefused(a: Store, b: Store): Promise<void> {
  await (await a.createSession({ id: 'keep' })).close()
  const { batch } = await a.changesSince(null)
  for (const deleted of [[{ id: 'bad id', createdAt: 1, deletedAt: 2 }], [{ id: 'keep', createdAt: -1, deletedAt: 2 }], [{ id: 'keep' }], 'keep']) {
    await expectCode(b.applyChanges({ ...batch, deleted } as never), 'INVALID_ARGUMENT')
  }
  expect(await idsOf(b)).toEqual([])
  expect((await drain(b, null)).deleted).toEqual([])
}
