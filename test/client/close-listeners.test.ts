// Contract: §6 client API — close(): every subscriber hears once more with meta.error, and a call made from that callback rejects there (docs/CONTRACT.md)
// Per-key and whole-snapshot subscribers, on a writer and on an observer, in this thread and in
// worker_threads: each is called exactly once more when the store closes (CLOSED) or its worker
// dies (WORKER_TERMINATED), with `{ seq, error }` as a deleted session's views hear it. A call
// made from inside that callback rejects with the code, its stack at the callback (not at
// Store.close), and no rejection goes unhandled anywhere.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type ChangeMeta, type ErrorCode, type Session, type SessionView, type Store } from 'sessionfold'
import { until } from '../contract/client'
import { expectCode } from '../support/helpers'

let dir: string
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => void unhandled.push(reason)
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-close-'))
  unhandled.length = 0
  process.on('unhandledRejection', onUnhandled)
})
afterEach(async () => {
  process.off('unhandledRejection', onUnhandled)
  await rm(dir, { recursive: true, force: true })
})

/** A few turns of the event loop: anything left unhandled has been reported by then. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0))
}

interface Heard {
  kind: string
  seq: number
  error?: ErrorCode
}

/**
 * Subscribes both ways to `handle` and, in the notification that carries an error, makes
 * calls on the handle and the store, keeping their promises (each handled at once, so only the
 * library could leave one unhandled).
 */
function listen(name: string, store: Store, handle: SessionView, heard: Heard[], calls: Promise<unknown>[]): void {
  const keep = (p: Promise<unknown>) => {
    p.catch(() => {})
    calls.push(p)
  }
  function onStopCalls(): void {
    keep(handle.events().next())
    keep(handle.listChildren())
    keep(store.listSessions())
    keep(store.observe(handle.id))
    if ('append' in handle) keep((handle as Session).append({ type: 'app/after' }))
  }
  handle.projections.subscribe('subagentTiming', (_value, meta: ChangeMeta) => {
    heard.push({ kind: `${name} key`, seq: meta.seq, ...(meta.error ? { error: meta.error.code } : {}) })
    if (meta.error) onStopCalls()
  })
  handle.projections.subscribe((snapshot, meta: ChangeMeta | undefined) => {
    heard.push({ kind: `${name} snapshot`, seq: meta?.seq ?? NaN, ...(meta?.error ? { error: meta.error.code } : {}) })
    if (snapshot.asOfSeq !== meta?.seq) heard.push({ kind: `${name} snapshot: meta.seq is not asOfSeq`, seq: snapshot.asOfSeq })
    if (meta?.error) onStopCalls()
  })
}

/** Every call made from the callbacks rejected with `code`, at the call: its stack names the callback, not Store.close. */
async function refusedAtTheCall(calls: Promise<unknown>[], code: ErrorCode): Promise<void> {
  expect(calls.length).toBeGreaterThan(0)
  for (const p of calls) {
    const err = await expectCode(p, code)
    expect(err.stack).toContain('onStopCalls')
    expect(err.stack).not.toContain('Store.close')
  }
}

describe('close(): the last notification carries the error', () => {
  for (const worker of [false, true]) {
    it(`key and snapshot subscribers of a writer and an observer hear CLOSED once; calls from the callback reject there (worker: ${worker})`, async () => {
      const store = await openStore({ dir, worker })
      const s = await store.createSession({ id: 's' })
      await s.append([{ type: 'turn/start', time: 1 }, { type: 'app/x' }])
      const view = await store.observe('s')
      const heard: Heard[] = []
      const calls: Promise<unknown>[] = []
      listen('writer', store, s, heard, calls)
      listen('view', store, view, heard, calls)
      const first = [
        { kind: 'writer key', seq: 1 },
        { kind: 'writer snapshot', seq: 1 },
        { kind: 'view key', seq: 1 },
        { kind: 'view snapshot', seq: 1 },
      ]
      expect(heard).toEqual(first)
      await store.close()
      await until(() => heard.length === 8)
      await turns()
      expect(heard.slice(4).sort((a, b) => a.kind.localeCompare(b.kind))).toEqual(
        first.map((h) => ({ ...h, error: 'CLOSED' })).sort((a, b) => a.kind.localeCompare(b.kind)),
      )
      expect(calls).toHaveLength(4 * 5 - 2) // the observer has no append
      await refusedAtTheCall(calls, 'CLOSED')
      // A subscriber that comes later hears the stop at once.
      const late: (ErrorCode | undefined)[] = []
      view.projections.subscribe((_snap, meta) => late.push(meta.error?.code))
      s.projections.subscribe('subagentTiming', (_v, meta) => late.push(meta.error?.code))
      expect(late).toEqual(['CLOSED', 'CLOSED'])
      await turns()
      expect(heard).toHaveLength(8)
      expect(unhandled).toEqual([])
    })
  }

  it('a call made after close rejects at that call, naming the session', async () => {
    const store = await openStore({ dir, worker: false })
    const s = await store.createSession({ id: 'after' })
    await store.close()
    async function appendLater(): Promise<unknown> {
      return s.append({ type: 'app/late' })
    }
    const err = await expectCode(appendLater(), 'CLOSED')
    expect(err.stack).toContain('appendLater')
    expect(err.stack).not.toContain('Store.close')
    expect(err.message).toContain('"after"')
    expect((err as { sessionId?: string }).sessionId).toBe('after')
    await turns()
    expect(unhandled).toEqual([])
  })

  it('a worker that dies: both kinds of subscriber hear WORKER_TERMINATED; calls from the callback reject there', async () => {
    const store = await openStore({ dir, workerUrl: new URL('../fixtures/dying-worker.ts', import.meta.url) })
    const s = await store.createSession({ id: 'd' })
    await s.append({ type: 'app/e' })
    const heard: Heard[] = []
    const calls: Promise<unknown>[] = []
    listen('writer', store, s, heard, calls)
    await s.append({ type: 'app/die' }).catch(() => {})
    await until(() => heard.length === 4)
    await turns()
    expect(
      heard
        .slice(2)
        .map((h) => [h.kind, h.error])
        .sort(),
    ).toEqual([
      ['writer key', 'WORKER_TERMINATED'],
      ['writer snapshot', 'WORKER_TERMINATED'],
    ])
    await refusedAtTheCall(calls, 'WORKER_TERMINATED')
    await store.close()
    await turns()
    expect(heard).toHaveLength(4)
    expect(unhandled).toEqual([])
  })
})
