// Contract: §8 sync — sync() and changesSince/applyChanges: copies, conflicts, bounded batches, cancel, resume (docs/CONTRACT.md)
// Sync between stores: sync(), and the transport-neutral pair
// changesSince/applyChanges, on memory, fs and IndexedDB, in this thread and in a worker.
import 'fake-indexeddb/auto'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, sync, type ChangeBatch, type OpenStoreOptions, type SessionEvent, type SessionHeader, type Store } from 'sessionfold'
import { folderOf } from '../../src/backends/fs/layout'
import { applyResultProblem, changesProblem } from '../../src/client/answer-checks'
import { until } from '../contract/client'
import { dumpStore, expectCode } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-sync-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const fixture = (name: string) => new URL(`../fixtures/${name}`, import.meta.url)

const dump = dumpStore

/** A parent with a one-shot and a continuable subagent (one with a child of its own), and a fork. */
async function populate(store: Store, prefix: string): Promise<void> {
  const root = await store.createSession({ id: `${prefix}root`, cwd: '/work' })
  await root.append([{ type: 'turn/start' }, { type: 'app/msg', data: { text: 'hello', n: [1, 2] } }, { type: 'turn/end' }])
  const a = await root.spawn({ mode: 'one-shot', id: `${prefix}a`, events: [{ type: 'app/task', data: 'a' }] })
  const b = await root.spawn({ mode: 'continuable', label: 'helper', id: `${prefix}b` })
  await b.spawn({ mode: 'one-shot', label: 'grandchild', id: `${prefix}c` })
  await root.recordExternal({ childId: 'remote1', label: 'outside' })
  const f = await root.fork({ at: 3, id: `${prefix}f` })
  await f.append({ type: 'app/forked' })
  for (const s of [root, a, b, f]) await s.close()
}

const stores: [string, (name: string) => OpenStoreOptions][] = [
  ['memory', () => ({ storage: 'memory', worker: false })],
  ['fs, in this thread', (name) => ({ storage: 'fs', dir: join(dir, name), worker: false })],
  ['fs, worker_threads', (name) => ({ storage: 'fs', dir: join(dir, name), worker: true })],
  ['indexeddb, in this thread', (name) => ({ storage: 'indexeddb', name: `sync-${name}-${Math.random()}`, worker: false })],
]

describe('sync', () => {
  for (const [mode, options] of stores) {
    it(`copies sessions with identical headers, events, projections and trees, and a rerun changes nothing (${mode})`, async () => {
      const source = await openStore(options('a'))
      const target = await openStore(options('b'))
      await populate(source, 'x')
      const progress: { done: number; total: number }[] = []
      const result = await sync(source, target, { onProgress: (p) => progress.push(p) })
      const want = await dump(source)
      expect(result).toMatchObject({ copiedSessions: 5, conflicts: [], skipped: [], failed: [] })
      expect(result.copiedEvents).toBe(Object.values(want).reduce((n, s) => n + s.events.length, 0))
      expect(await dump(target)).toEqual(want)
      expect(progress.at(-1)).toEqual({ done: result.copiedEvents, total: result.copiedEvents })
      const root = await target.observe('xroot')
      const tree = await root.listChildren({ recursive: true })
      expect(tree.map((r) => [r.kind, r.id, r.depth, r.kind === 'child' && r.mode])).toEqual([
        ['child', 'xa', 0, 'one-shot'],
        ['child', 'xb', 0, 'continuable'],
        ['child', 'xc', 1, 'one-shot'],
        ['child', 'remote1', 0, 'external'],
      ])
      await root.close()
      expect(await sync(source, target)).toEqual({ copiedSessions: 0, copiedEvents: 0, deletedSessions: 0, conflicts: [], skipped: [], failed: [] })
      expect(await dump(target)).toEqual(want)
      await source.close()
      await target.close()
    })
  }

  it('pushes only the missing suffix, and a live handle on the target receives it', async () => {
    const source = await openStore({ storage: 'memory', worker: false })
    const target = await openStore({ storage: 'fs', dir, worker: true })
    const s = await source.createSession({ id: 's' })
    await s.append([{ type: 'turn/start' }, { type: 'turn/end' }])
    await sync(source, target)
    const view = await target.observe('s')
    const seen: number[] = []
    view.projections.subscribe((snap) => seen.push(snap.asOfSeq))
    await s.append([{ type: 'turn/start' }, { type: 'turn/end' }, { type: 'turn/start' }])
    const kid = await s.spawn({ mode: 'one-shot', id: 'kid' })
    expect(await sync(source, target)).toMatchObject({ copiedSessions: 1, copiedEvents: 3 + 1 + 1 })
    await until(() => view.projections.snapshot().asOfSeq === 5)
    expect(view.projections.snapshot().values).toEqual(s.projections.snapshot().values)
    expect(view.projections.get('subagentTiming')?.runningSince).toEqual(expect.any(Number))
    expect(view.projections.get('subagentCatalog')!.map((c) => c.id)).toEqual(['kid'])
    expect(seen.at(-1)).toBe(5)
    expect((await view.listChildren()).map((r) => r.id)).toEqual(['kid'])
    await kid.close()
    await view.close()
    await source.close()
    await target.close()
  })

  it('converges while the source is being written to (interleaved writes)', async () => {
    const source = await openStore({ storage: 'fs', dir: join(dir, 'a'), worker: false })
    const target = await openStore({ storage: 'memory', worker: false })
    const writers = await Promise.all(['w1', 'w2', 'w3'].map((id) => source.createSession({ id })))
    let writing = true
    const load = Promise.all(
      writers.map(async (w, k) => {
        for (let i = 0; writing; i++) {
          await w.append({ type: 'app/tick', data: { k, i } })
          if (i % 10 === 9) await w.spawn({ mode: 'one-shot', id: `${w.id}k${i}` }).then((c) => c.close())
        }
      }),
    )
    let rounds = 0
    for (; rounds < 5; rounds++) await sync(source, target, { maxEvents: 7 })
    writing = false
    await load
    const last = await sync(source, target, { maxEvents: 7 })
    expect(last.conflicts).toEqual([])
    expect(await dump(target)).toEqual(await dump(source))
    expect(Object.keys(await dump(target)).length).toBeGreaterThan(3)
    await source.close()
    await target.close()
  })

  it("'both' copies each side's sessions to the other, and both end equal", async () => {
    const a = await openStore({ storage: 'fs', dir: join(dir, 'a'), worker: false })
    const b = await openStore({ storage: 'indexeddb', name: `both-${Math.random()}`, worker: false })
    await populate(a, 'a')
    await populate(b, 'b')
    await sync(a, b)
    // Both grow one shared session, one past the other: the longer copy wins, nothing conflicts.
    const onB = await b.openSession('aroot')
    await onB.append([{ type: 'app/on-b' }, { type: 'app/on-b2' }])
    await onB.close()
    const [beforeA, beforeB] = [await dump(a), await dump(b)]
    const count = (d: typeof beforeA, than: typeof beforeA = {}) =>
      Object.entries(d).reduce((n, [id, s]) => n + Math.max(0, s.events.length - (than[id]?.events.length ?? 0)), 0)
    let progress = { done: 0, total: 0 }
    const result = await sync(a, b, { direction: 'both', onProgress: (p) => (progress = p) })
    expect(result).toMatchObject({ copiedSessions: 5, copiedEvents: count(beforeB, beforeA), conflicts: [], skipped: [] })
    // There: all of a, compared or copied. Back: only what b holds beyond a, nothing a already has.
    expect(progress).toEqual({ done: count(beforeA) + count(beforeB, beforeA), total: count(beforeA) + count(beforeB, beforeA) })
    const da = await dump(a)
    expect(await dump(b)).toEqual(da)
    expect(Object.keys(da).sort()).toEqual(['aa', 'ab', 'ac', 'af', 'aroot', 'ba', 'bb', 'bc', 'bf', 'broot'])
    expect(da.aroot!.events.at(-1)!.type).toBe('app/on-b2')
    await a.close()
    await b.close()
  })

  it('a conflict is reported with the first differing seq and both witnesses; neither side changes, the rest goes on', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const b = await openStore({ storage: 'fs', dir, worker: false })
    const first = await a.createSession({ id: 'same' })
    await first.append([
      { type: 'app/e', data: 0 },
      { type: 'app/e', data: 1 },
      { type: 'app/e', data: 2 },
    ])
    await first.close()
    await sync(a, b)
    // Both stores now write seq 3 of the same session, differently.
    for (const [store, word] of [
      [a, 'left'],
      [b, 'right'],
    ] as const) {
      const s = await store.openSession('same')
      await s.append([
        { type: 'app/e', data: word, time: 5 },
        { type: 'app/e', data: 4, time: 5 },
      ])
      if (store === b) await s.append({ type: 'app/e', data: 5 }) // b is longer: still not copied back
      await s.close()
    }
    await populate(a, 'p')
    const other = await b.createSession({ id: 'other' })
    await other.append({ type: 'app/e' })
    await other.close()
    const beforeA = await dump(a)
    const beforeB = await dump(b)
    const result = await sync(a, b, { direction: 'both' })
    expect(result.conflicts).toEqual([
      {
        id: 'same',
        seq: 3,
        reason: 'event',
        source: expect.objectContaining({ id: 'same' }),
        target: expect.objectContaining({ id: 'same' }),
        chain: { at: expect.any(Number), source: expect.stringMatching(/^[0-9a-f]{32}$/), target: expect.stringMatching(/^[0-9a-f]{32}$/) },
      },
    ])
    expect(result.conflicts[0]!.chain!.source).not.toBe(result.conflicts[0]!.chain!.target)
    expect(result.conflicts[0]!.source.createdAt).toBe(beforeA.same!.header.createdAt)
    expect(result.conflicts[0]!.target.createdAt).toBe(beforeB.same!.header.createdAt)
    const afterA = await dump(a)
    const afterB = await dump(b)
    expect(afterA.same).toEqual(beforeA.same)
    expect(afterB.same).toEqual(beforeB.same)
    // Everything else went both ways.
    expect(afterB.proot).toEqual(beforeA.proot)
    expect(afterA.other).toEqual(beforeB.other)
    await a.close()
    await b.close()
  })

  it('another life of the same id (a different header) is a conflict at seq 0', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const b = await openStore({ storage: 'memory', worker: false })
    await (await a.createSession({ id: 'dup', cwd: '/a' })).append({ type: 'app/e' })
    await (await b.createSession({ id: 'dup', cwd: '/b' })).append({ type: 'app/e' })
    const result = await sync(a, b)
    expect(result.conflicts).toEqual([
      { id: 'dup', seq: 0, reason: 'header', source: expect.objectContaining({ cwd: '/a' }), target: expect.objectContaining({ cwd: '/b' }) },
    ])
    expect(result.copiedEvents).toBe(0)
    await a.close()
    await b.close()
  })

  it('a session a writer holds open on the target is skipped as locked, then copied once released', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const b = await openStore({ storage: 'memory', worker: false })
    const s = await a.createSession({ id: 's' })
    await s.append({ type: 'app/e' })
    await sync(a, b)
    await s.append({ type: 'app/e2' })
    const held = await b.openSession('s')
    const result = await sync(a, b)
    expect(result.skipped).toEqual([{ id: 's', reason: 'locked', detail: expect.stringContaining('"s"') }])
    await held.close()
    expect(await sync(a, b)).toMatchObject({ copiedEvents: 1, skipped: [] })
    await a.close()
    await b.close()
  })

  it('a damaged session on either side is reported and the rest is copied', async () => {
    const a = await openStore({ storage: 'fs', dir: join(dir, 'a'), worker: false })
    const b = await openStore({ storage: 'fs', dir: join(dir, 'b'), worker: false })
    for (const [store, id] of [
      [a, 'bad-here'],
      [a, 'good'],
      [a, 'bad-there'],
      [b, 'bad-there'],
    ] as const) {
      const s = await store.createSession({ id })
      if (store === a && id === 'bad-there') {
        await s.close()
        continue
      }
      await s.append([{ type: 'app/e', data: 'x'.repeat(40) }, { type: 'app/e' }, { type: 'app/e' }])
      await s.close()
    }
    await a.close()
    await b.close()
    // A flipped byte in the first record, whole records after it: CORRUPT_LOG.
    for (const [d, id] of [
      ['a', 'bad-here'],
      ['b', 'bad-there'],
    ]) {
      const log = join(dir, d!, 'sessions', folderOf(id!), 'events.log')
      const bytes = await readFile(log)
      bytes[20] = bytes[20]! ^ 0xff
      await writeFile(log, bytes)
    }
    const [a2, b2] = [
      await openStore({ storage: 'fs', dir: join(dir, 'a'), worker: false }),
      await openStore({ storage: 'fs', dir: join(dir, 'b'), worker: false }),
    ]
    const result = await sync(a2, b2)
    expect(result.failed).toEqual([{ id: 'bad-here', code: 'CORRUPT_LOG', detail: expect.stringContaining('damaged') }])
    expect(result.skipped).toEqual([{ id: 'bad-there', reason: 'damaged', detail: expect.stringContaining('damaged') }])
    expect(result).toMatchObject({ copiedSessions: 1, copiedEvents: 3, conflicts: [] })
    const good = await b2.observe('good')
    expect(good.projections.snapshot().asOfSeq).toBe(2)
    await good.close()
    await a2.close()
    await b2.close()
  })

  it('bad options are INVALID_ARGUMENT; an aborted signal stops it with CANCELLED, and a rerun finishes', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const b = await openStore({ storage: 'memory', worker: false })
    for (let k = 0; k < 5; k++) await (await a.createSession({ id: `s${k}` })).append(Array.from({ length: 20 }, () => ({ type: 'app/e' })))
    await expectCode(sync(a, b, { direction: 'pull' as never }), 'INVALID_ARGUMENT')
    await expectCode(sync(a, b, { sessions: ['../x'] }), 'INVALID_ARGUMENT')
    await expectCode(sync(a, b, { bogus: 1 } as never), 'INVALID_ARGUMENT')
    await expectCode(sync(a, a), 'INVALID_ARGUMENT')
    await expectCode(sync(a, b, { maxEvents: 0 }), 'INVALID_ARGUMENT')
    expect(await b.listSessions()).toEqual([])
    const controller = new AbortController()
    await expectCode(sync(a, b, { maxEvents: 10, signal: controller.signal, onProgress: ({ done }) => done >= 30 && controller.abort() }), 'CANCELLED')
    const partial = Object.values(await dump(b)).reduce((n, s) => n + s.events.length, 0)
    expect(partial).toBeGreaterThan(0)
    expect(partial).toBeLessThan(100)
    expect((await sync(a, b, { maxEvents: 10 })).copiedEvents).toBe(100 - partial)
    expect(await dump(b)).toEqual(await dump(a))
    await a.close()
    await b.close()
  })

  it('10,000-event sessions move in bounded batches (memory printed, the bound asserted)', async () => {
    const source = await openStore({ storage: 'fs', dir: join(dir, 'a'), worker: false, durability: 'relaxed' })
    const target = await openStore({ storage: 'fs', dir: join(dir, 'b'), worker: false, durability: 'relaxed' })
    const payload = 'x'.repeat(200)
    for (const id of ['big1', 'big2']) {
      const s = await source.createSession({ id })
      for (let i = 0; i < 10_000; i += 1000) await s.append(Array.from({ length: 1000 }, (_, j) => ({ type: 'app/e', data: { i: i + j, payload } })))
      await s.close()
    }
    // The pair by hand, to look at every batch: big1 bounded by events, big2 by bytes.
    const move = async (id: string, maxEvents: number, maxBytes: number) => {
      let cursor = null
      let batches = 0
      let largest = 0
      for (;;) {
        const changes = await source.changesSince(cursor, { sessions: [id], maxEvents, maxBytes })
        const items = changes.batch.sessions.reduce((n, e) => n + 1 + e.events.length, 0)
        const bytes = JSON.stringify(changes.batch).length
        expect(items).toBeLessThanOrEqual(maxEvents)
        expect(bytes).toBeLessThan(maxBytes + 2048) // past the bound by one event at most
        largest = Math.max(largest, bytes)
        await target.applyChanges(changes.batch)
        batches++
        cursor = changes.cursor
        if (changes.done) return { batches, largest }
      }
    }
    const before = process.memoryUsage()
    const byEvents = await move('big1', 500, 4 * 1024 * 1024)
    const byBytes = await move('big2', 10_000, 64 * 1024)
    const after = process.memoryUsage()
    const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`
    console.log(
      `sync of 2 x 10,000 events: ${byEvents.batches} batches of <= 500 events (largest ${(byEvents.largest / 1024).toFixed(0)} KiB), ` +
        `${byBytes.batches} batches of <= 64 KiB (largest ${(byBytes.largest / 1024).toFixed(0)} KiB); heap ${mb(before.heapUsed)} -> ${mb(after.heapUsed)}, rss ${mb(before.rss)} -> ${mb(after.rss)}`,
    )
    expect(byEvents.batches).toBeGreaterThanOrEqual(10_000 / 499)
    expect(byBytes.batches).toBeGreaterThanOrEqual((10_000 * 230) / (64 * 1024))
    const t = await target.observe('big2')
    expect(t.projections.snapshot().asOfSeq).toBe(9999)
    let n = 0
    for await (const e of t.events({ from: 9990 })) expect((e.data as { i: number }).i).toBe(9990 + n++)
    await t.close()
    expect(await dump(target)).toEqual(await dump(source))
    expect(await sync(source, target, { maxEvents: 500 })).toMatchObject({ copiedEvents: 0, conflicts: [] })
    await source.close()
    await target.close()
  })

  it('a sync killed halfway (SIGKILL) and run again converges', async () => {
    const a = join(dir, 'a')
    const b = join(dir, 'b')
    const source = await openStore({ storage: 'fs', dir: a, worker: false, durability: 'relaxed' })
    for (let k = 0; k < 6; k++) {
      const s = await source.createSession({ id: `s${k}` })
      await s.append(Array.from({ length: 400 }, (_, i) => ({ type: 'app/e', data: { k, i } })))
      await s.close()
    }
    await source.close()
    const child = spawn(process.execPath, ['--import', 'tsx', fileOf(fixture('sync-runner.ts')), a, b], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        // A few batches in: the copy is partial.
        if ((out.match(/progress/g) ?? []).length >= 3) resolve()
      })
      child.once('exit', () => reject(new Error(`the sync finished before it could be killed:\n${out}`)))
    })
    child.kill('SIGKILL')
    await new Promise((r) => child.once('exit', r))
    const src = await openStore({ storage: 'fs', dir: a, worker: false })
    const dst = await openStore({ storage: 'fs', dir: b, worker: false })
    const partial = await dump(dst)
    const copied = Object.values(partial).reduce((n, s) => n + s.events.length, 0)
    expect(copied).toBeGreaterThan(0)
    expect(copied).toBeLessThan(2400)
    const result = await sync(src, dst, { maxEvents: 100 })
    expect(result.copiedEvents).toBe(2400 - copied)
    expect(await dump(dst)).toEqual(await dump(src))
    await src.close()
    await dst.close()
  })
})

describe('changesSince / applyChanges', () => {
  it('batches are plain JSON that survive JSON and structured clone, and apply the same', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    await populate(a, 'j')
    const { batch, done } = await a.changesSince(null)
    expect(done).toBe(true)
    expect(JSON.parse(JSON.stringify(batch))).toEqual(batch)
    const b = await openStore({ storage: 'memory', worker: false })
    await b.applyChanges(JSON.parse(JSON.stringify(batch)) as ChangeBatch)
    const c = await openStore({ storage: 'fs', dir, worker: true })
    await c.applyChanges(structuredClone(batch))
    const want = await dump(a)
    expect(await dump(b)).toEqual(want)
    expect(await dump(c)).toEqual(want)
    // Applying again changes nothing; the cursor says there is nothing new.
    expect(await c.applyChanges(batch)).toEqual({ copiedSessions: 0, copiedEvents: 0, deletedSessions: 0, conflicts: [], skipped: [] })
    const again = await a.changesSince((await a.changesSince(null)).cursor)
    expect(again).toMatchObject({ batch: { v: 1, sessions: [] }, pending: 0, done: true })
    for (const s of [a, b, c]) await s.close()
  })

  for (const workerMode of [false, true]) {
    it(`a bad batch is INVALID_ARGUMENT and writes nothing (worker: ${workerMode})`, async () => {
      const source = await openStore({ storage: 'memory', worker: false })
      await populate(source, 'g')
      const { batch } = await source.changesSince(null)
      const target = await openStore({ storage: 'fs', dir, worker: workerMode })
      const existing = await target.createSession({ id: 'keep' })
      await existing.append({ type: 'app/e' })
      await existing.close()
      const before = await dump(target)
      const edit = (fn: (b: ChangeBatch & { sessions: Record<string, unknown>[] }) => void): ChangeBatch => {
        const copy = structuredClone(batch) as ChangeBatch & { sessions: Record<string, unknown>[] }
        fn(copy)
        return copy
      }
      const bad: [string, unknown][] = [
        ['not an object', 'batch'],
        ['a wrong version', edit((b) => void ((b as { v: number }).v = 2))],
        ['a gap in seqs (the last entry)', edit((b) => void (b.sessions.at(-1)!.events as SessionEvent[]).splice(1, 1))],
        ['a header that is not one', edit((b) => void ((b.sessions.at(-1)!.header as SessionHeader).origin = 'subagent'))],
        ['an event with an extra field', edit((b) => void ((b.sessions.at(-1)!.events as unknown as Record<string, unknown>[])[0]!.extra = 1))],
        ['an event with a negative time', edit((b) => void ((b.sessions.at(-1)!.events as SessionEvent[])[0]!.time = -1))],
        ['non-JSON data', edit((b) => void ((b.sessions.at(-1)!.events as SessionEvent[])[0]!.data = { n: Number.NaN }))],
        [
          'a fork without its seed',
          edit((b) => {
            const fork = b.sessions.find((e) => (e.header as SessionHeader).origin === 'fork')!
            fork.events = (fork.events as SessionEvent[]).slice(0, 1)
          }),
        ],
        ['the same session twice', edit((b) => void b.sessions.push(structuredClone(b.sessions[0]!)))],
        ['an unknown field', edit((b) => void ((b as unknown as Record<string, unknown>).extra = true))],
        ['an oversized event', edit((b) => void ((b.sessions.at(-1)!.events as SessionEvent[])[0]!.data = 'x'.repeat(2 * 1024 * 1024)))],
      ]
      for (const [why, b] of bad) {
        const err = await expectCode(target.applyChanges(b as ChangeBatch), 'INVALID_ARGUMENT')
        expect(err.message, why).toMatch(/batch|data|JSON/)
      }
      expect(await dump(target)).toEqual(before)
      await expectCode(target.changesSince({ v: 1, sessions: { x: 'no' } } as never), 'INVALID_ARGUMENT')
      await expectCode(target.changesSince(null, { maxEvents: 0 }), 'INVALID_ARGUMENT')
      await source.close()
      await target.close()
    })
  }

  it("a fork's seed travels whole even past the batch bound; the rest of it is bounded again", async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const s = await a.createSession({ id: 'src' })
    await s.append(Array.from({ length: 50 }, (_, i) => ({ type: 'app/e', data: i })))
    const f = await s.fork({ id: 'fork' })
    await f.append(Array.from({ length: 30 }, (_, i) => ({ type: 'app/after', data: i })))
    const first = await a.changesSince(null, { sessions: ['fork'], maxEvents: 10 })
    expect(first.batch.sessions.map((e) => [e.header.id, e.from, e.events.length])).toEqual([['fork', 0, 50]])
    const second = await a.changesSince(first.cursor, { sessions: ['fork'], maxEvents: 10 })
    expect(second.batch.sessions.map((e) => [e.header.id, e.from, e.events.length])).toEqual([['fork', 50, 9]])
    const b = await openStore({ storage: 'memory', worker: false })
    expect(await sync(a, b, { maxEvents: 10 })).toMatchObject({ copiedSessions: 2, copiedEvents: 50 + 80 })
    expect(await dump(b)).toEqual(await dump(a))
    await a.close()
    await b.close()
  })

  it("the client checks the worker's answers: good ones pass, damaged ones are named", async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    await populate(a, 'w')
    const changes = await a.changesSince(null, { head: true })
    expect(changesProblem(changes)).toBeUndefined()
    const b = await openStore({ storage: 'memory', worker: false })
    await (await b.createSession({ id: 'wroot' })).close() // another life of an id: a conflict in the result
    const applied = await b.applyChanges(changes.batch)
    expect(applied.conflicts).toHaveLength(1)
    expect(applyResultProblem(applied)).toBeUndefined()
    // biome-ignore lint/suspicious/noExplicitAny: the edits reach into the batch's nested fields freely
    const bad = (fn: (c: Record<string, any>) => void) => {
      // biome-ignore lint/suspicious/noExplicitAny: as above
      const copy = structuredClone(changes) as unknown as Record<string, any>
      fn(copy)
      return changesProblem(copy)
    }
    expect(bad((c) => (c.batch.v = 2))).toBe('bad batch')
    expect(bad((c) => (c.batch.sessions[0].events[1].seq = 7))).toMatch(/bad event in the batch at seq 1/)
    expect(bad((c) => (c.batch.sessions[0].events[0].data = { d: new Date() }))).toMatch(/bad event data/)
    expect(bad((c) => (c.batch.sessions[0].header.origin = 'x'))).toMatch(/bad header in the batch/)
    expect(bad((c) => (c.cursor.sessions['../x'] = [1, 1]))).toMatch(/bad cursor entry/)
    expect(bad((c) => (c.pending = -1))).toBe('bad changes')
    expect(applyResultProblem({ ...applied, copiedEvents: '3' })).toBe('bad apply result')
    expect(applyResultProblem({ ...applied, conflicts: [{ id: 'x', seq: 0, reason: 'other' }] })).toBe('bad conflict')
    await a.close()
    await b.close()
  })

  it('a batch from a cursor past what the receiver has is a gap, skipped and not written', async () => {
    const a = await openStore({ storage: 'memory', worker: false })
    const s = await a.createSession({ id: 'g' })
    await s.append([{ type: 'app/e' }, { type: 'app/e' }])
    const first = await a.changesSince(null)
    await s.append({ type: 'app/e' })
    const next = await a.changesSince(first.cursor)
    expect(next.batch.sessions[0]).toMatchObject({ from: 2, events: [{ seq: 2 }] })
    const b = await openStore({ storage: 'memory', worker: false })
    expect((await b.applyChanges(next.batch)).skipped).toEqual([{ id: 'g', reason: 'gap', detail: expect.any(String) }])
    expect(await b.listSessions()).toEqual([])
    await a.close()
    await b.close()
  })
})

function fileOf(url: URL): string {
  return decodeURIComponent(url.pathname)
}
