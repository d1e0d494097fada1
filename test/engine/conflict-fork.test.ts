// Contract: §15 conflicts resolved without loss — the engine's move of a conflicted session's events to a fork (docs/CONTRACT.md)
// The replication (test/server/http-forks.test.ts) hands the engine the server's whole copy of
// a session; the engine moves its own events after the parting seq to a fork and gives the
// session the server's history. Here: the copy checked (nothing written for a bad one), the move
// waiting for a writer, a move cut short at each step finished by the next try with one fork
// (not two), and a session with nothing to move left alone.
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { ChangeBatch, ChangeEntry } from '../../src/core/changes'
import type { SessionEvent } from '../../src/core/model'
import { Engine } from '../../src/engine'
import type { EngineOptions } from '../../src/engine/options'
import { lazyStreams } from '../../src/engine/streams-lazy'
import { forkConflict, type ConflictForkHost } from '../../src/engine/conflict-fork'
import type { ProjectionChange } from '../../src/engine/watchers'
import { expectCode } from '../support/helpers'

async function eventsOf(engine: Engine, id: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = []
  for await (const page of engine.reader.pages(id, { from: 0, to: (await engine.reader.info(id)).length })) out.push(...page)
  return out
}
const types = (events: readonly SessionEvent[]) => events.map((e) => e.type)

/** An engine holding `s` as [app/common, mine/1, mine/2], and the server's copy [app/common, theirs/1]. */
async function conflicted(settings: Partial<Pick<EngineOptions, 'streams'>> = {}): Promise<{ engine: Engine; copy: ChangeBatch }> {
  const engine = new Engine({ storage: createMemoryAdapter(), ...settings })
  await engine.createSession({ id: 's' })
  await engine.append('s', { type: 'app/common' })
  await engine.release('s', 'writer')
  const common = await engine.changesSince(null, {})
  const entry = common.batch.sessions[0]! as ChangeEntry
  await engine.openSession('s')
  await engine.append('s', [{ type: 'mine/1' }, { type: 'mine/2' }])
  await engine.release('s', 'writer')
  const theirs: SessionEvent = { seq: 1, type: 'theirs/1', time: 5, data: null }
  return { engine, copy: { v: 1, sessions: [{ header: entry.header, from: 0, events: [...entry.events, theirs] }] } }
}

/** Every session's id, header and events: what a bad call must leave as it was. */
async function dump(engine: Engine): Promise<unknown> {
  const out: unknown[] = []
  for (const header of await engine.reader.listSessions()) out.push([header, await eventsOf(engine, header.id)])
  return out
}

describe('a conflicted session moved to a fork (the engine)', () => {
  it("the session takes the server's events; its own after the parting seq go to a fork at their seqs; an open view hears one reset", async () => {
    const { engine, copy } = await conflicted()
    await engine.observe('s')
    const heard: ProjectionChange[] = []
    const unwatch = engine.watch('s', (c) => void heard.push(c))
    const outcome = await engine.forkConflict(copy)
    if (typeof outcome === 'string') throw new Error(`no fork: ${outcome}`)
    expect(outcome.at).toBe(1)
    expect(outcome.forkedAs).toMatch(/^s-f[0-9a-f]{14}$/)
    expect(types(await eventsOf(engine, 's'))).toEqual(['app/common', 'theirs/1'])
    const fork = await engine.reader.info(outcome.forkedAs)
    expect(fork.header).toMatchObject({ origin: 'fork', forkedFrom: 's', seedLength: 1 })
    expect((await eventsOf(engine, outcome.forkedAs)).map((e) => [e.seq, e.type])).toEqual([
      [0, 'app/common'],
      [1, 'mine/1'],
      [2, 'mine/2'],
    ])
    expect(heard.map((c) => [c.seq, c.reset])).toEqual([[1, true]])
    // Nothing more to move: this copy is the server's.
    expect(await engine.forkConflict(copy)).toBe('none')
    // The view goes on following the new log, and its unwatch still lets go of it.
    expect(engine.snapshot('s').asOfSeq).toBe(1)
    await engine.openSession('s')
    await engine.append('s', { type: 'app/after' })
    expect(heard.map((c) => c.seq)).toEqual([1, 2])
    unwatch()
    await engine.append('s', { type: 'app/unheard' })
    expect(heard.length).toBe(2)
    await engine.release('s', 'writer')
    expect((await engine.reader.listSessions()).map((h) => h.id).sort()).toEqual(['s', outcome.forkedAs])
    await engine.close()
  })

  it('waits while the session is open for writing: locked, nothing moved', async () => {
    const { engine, copy } = await conflicted()
    const before = await dump(engine)
    await engine.openSession('s')
    expect(await engine.forkConflict(copy)).toBe('locked')
    expect(await dump(engine)).toEqual(before)
    await engine.release('s', 'writer')
    expect(typeof (await engine.forkConflict(copy))).toBe('object')
    await engine.close()
  })

  it('lets go of the writer a Durable Streams append keeps here (up to 1 s idle) and moves the session', async () => {
    const { engine, copy } = await conflicted({ streams: lazyStreams })
    const appended = await engine.streams.run({ op: 'append', id: 's', contentType: 'application/json', body: { json: [{ type: 'mine/3' }] }, close: false })
    expect(appended.status).toBe('appended')
    const outcome = await engine.forkConflict(copy)
    if (typeof outcome === 'string') throw new Error(`no fork: ${outcome}`)
    expect(types(await eventsOf(engine, 's'))).toEqual(['app/common', 'theirs/1'])
    expect(types(await eventsOf(engine, outcome.forkedAs))).toEqual(['app/common', 'mine/1', 'mine/2', 'mine/3'])
    // The stream goes on from the server's history: its next append lands after theirs/1.
    const next = await engine.streams.run({ op: 'append', id: 's', contentType: 'application/json', body: { json: [{ type: 'app/after' }] }, close: false })
    expect(next).toMatchObject({ status: 'appended', stream: { length: 3 } })
    expect(types(await eventsOf(engine, 's'))).toEqual(['app/common', 'theirs/1', 'app/after'])
    await engine.close()
  })

  it('a bad copy is INVALID_ARGUMENT and writes nothing', async () => {
    const { engine, copy } = await conflicted()
    const before = await dump(engine)
    const entry = copy.sessions[0]!
    for (const bad of [
      { v: 1, sessions: [] },
      { v: 1, sessions: [{ ...entry, from: 1, events: entry.events.slice(1), chain: '0'.repeat(32) }] },
      { v: 1, sessions: [{ ...entry, events: [...entry.events.slice(0, 1), { seq: 1, type: '', time: 1, data: null }] }] },
      { v: 1, sessions: [entry, { ...entry, header: { ...entry.header, id: 't' } }] },
      { v: 2, sessions: [entry] },
    ]) {
      await expectCode(engine.forkConflict(bad), 'INVALID_ARGUMENT')
    }
    expect(await dump(engine)).toEqual(before)
    await engine.close()
  })

  it('a move cut after the fork, or half way through the fork, is finished by the next try with the same fork', async () => {
    const { engine, copy } = await conflicted()
    const parts = engine as unknown as Omit<ConflictForkHost, 'now'> & { now: () => number }
    const host = (over: Partial<ConflictForkHost['sessions']>): ConflictForkHost => ({
      reader: engine.reader,
      locks: engine.locks,
      maxEventBytes: 1 << 20,
      index: undefined,
      now: Date.now,
      sessions: {
        withImportWriter: (id, write) => parts.sessions.withImportWriter(id, write),
        replaceLog: (...args) => parts.sessions.replaceLog(...args),
        ...over,
      },
    })
    // 1. Cut half way through making the fork: its seed is there, its own events are not.
    const cut = new Error('the process died')
    await expect(
      forkConflict(
        host({
          withImportWriter: (id, write) =>
            parts.sessions.withImportWriter(id, (w) =>
              write({
                ...w,
                create: w.create,
                append: async () => {
                  throw cut
                },
              }),
            ),
        }),
        copy,
      ),
    ).rejects.toBe(cut)
    const half = await engine.reader.info((await engine.reader.listSessions()).find((h) => h.id !== 's')!.id)
    expect(half.length).toBe(1)
    // 2. Cut after the fork, before the session took the server's events.
    await expect(forkConflict(host({ replaceLog: () => Promise.reject(cut) }), copy)).rejects.toBe(cut)
    expect((await engine.reader.info(half.header.id)).length).toBe(3)
    expect(types(await eventsOf(engine, 's'))).toEqual(['app/common', 'mine/1', 'mine/2'])
    // 3. The next try: the same fork, finished once; the session is the server's.
    const outcome = await engine.forkConflict(copy)
    expect(outcome).toEqual({ forkedAs: half.header.id, at: 1 })
    expect(types(await eventsOf(engine, half.header.id))).toEqual(['app/common', 'mine/1', 'mine/2'])
    expect(types(await eventsOf(engine, 's'))).toEqual(['app/common', 'theirs/1'])
    expect((await engine.reader.listSessions()).length).toBe(2)
    await engine.close()
  })

  it("nothing to move: this copy is a prefix of the server's, or another life of the id", async () => {
    const { engine, copy } = await conflicted()
    const entry = copy.sessions[0]!
    const longer: ChangeBatch = {
      v: 1,
      sessions: [{ ...entry, events: [...(await eventsOf(engine, 's')), { seq: 3, type: 'theirs/3', time: 9, data: null }] }],
    }
    const before = await dump(engine)
    expect(await engine.forkConflict(longer)).toBe('none')
    expect(await engine.forkConflict({ v: 1, sessions: [{ ...entry, header: { ...entry.header, createdAt: entry.header.createdAt + 1 } }] })).toBe('none')
    expect(await dump(engine)).toEqual(before)
    await engine.close()
  })
})
