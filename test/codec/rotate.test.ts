// Contract: §12 rotateKey re-encrypts — after a rotation every stored unit (frames, headers,
// checkpoint and history rows) is under the new data key only and the key record lists that
// one key, read from the files themselves; the data reads back the same; progress; a session
// open for writing, or a rotation stopped midway, leaves a store that opens with the new key
// and a second rotateKey completes it; replaceRecords on fs as other processes see it.
import { readdir, readFile, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { createFsAdapter } from '../../src/backends/fs'
import { LOG_FILE, sessionDir } from '../../src/backends/fs/layout'
import { dumpStore, ev, evs, readAll, rootHeader } from '../support/helpers'

const keyOf = (i: number) => new Uint8Array(32).fill(i)

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-rotate-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Every unit stored in an fs store, by kind, with its data key generation (its byte 1), read from its files. */
async function unitsOnDisk(root: string): Promise<{ kind: string; id: string; gen: number }[]> {
  const out: { kind: string; id: string; gen: number }[] = []
  const add = (kind: string, id: string, b64: unknown) => out.push({ kind, id, gen: Buffer.from(String(b64), 'base64')[1]! })
  const plain = createFsAdapter({ dir: root, readOnly: true })
  try {
    for (const id of await plain.listIds({ limit: 10_000 })) {
      const folder = sessionDir(root, id)
      add('header', id, (JSON.parse(await readFile(join(folder, 'header.json'), 'utf8')) as { sealed: string }).sealed)
      for await (const page of plain.readEvents(id)) for (const e of page) if (e.type === '' && typeof e.data === 'string') add('frame', id, e.data)
      const row = await readFile(join(folder, 'checkpoint.json'), 'utf8').catch(() => undefined)
      if (row) add('checkpoint', id, (JSON.parse(row) as { sealed: string }).sealed)
      for (const f of await readdir(join(folder, 'history')).catch(() => [] as string[])) {
        add('history', id, (JSON.parse(await readFile(join(folder, 'history', f), 'utf8')) as { sealed: string }).sealed)
      }
    }
  } finally {
    await plain.close()
  }
  return out
}

const keyRecordOf = async (root: string) =>
  JSON.parse(await readFile(join(root, 'meta', 'sessionfold-codec'), 'utf8')) as { current: number; keys: { gen: number }[] }

const gensOf = (units: { gen: number }[]) => [...new Set(units.map((u) => u.gen))].sort()

/** Several sessions: a parent with a child and a fork, a long one (history rows), a few small ones. */
async function fillMany(store: Store): Promise<void> {
  const root = await store.createSession({ id: 'root', cwd: '/home/m/work' })
  await root.append({ type: 'turn/start', data: { prompt: 'hello' } })
  await root.append([
    { type: 'tool/output', data: { text: 'out '.repeat(400) } },
    { type: 'app/small', data: 'm' },
  ])
  const kid = await root.spawn({ mode: 'continuable', id: 'kid', label: 'helper', events: [{ type: 'app/task', data: 'm' }] })
  await kid.append({ type: 'turn/end' })
  const fork = await root.fork({ at: 2, id: 'fork' })
  await fork.append({ type: 'app/forked', data: 'm' })
  const long = await store.createSession({ id: 'long' })
  for (let b = 0; b < 22; b++) await long.append(Array.from({ length: 100 }, (_, i) => ({ type: 'app/n', data: { n: b * 100 + i, pad: 'p'.repeat(40) } })))
  for (let i = 0; i < 4; i++) {
    const s = await store.createSession({ id: `small-${i}` })
    await s.append([
      { type: 'app/a', data: i },
      { type: 'app/b', data: 'x'.repeat(700) },
    ])
    await s.close()
  }
  for (const s of [root, kid, fork, long]) await s.close()
}

async function logSizes(root: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  const plain = createFsAdapter({ dir: root, readOnly: true })
  for (const id of await plain.listIds({ limit: 10_000 })) out[id] = (await stat(join(sessionDir(root, id), LOG_FILE))).size
  await plain.close()
  return out
}

describe('rotateKey re-encrypts every unit (fs)', () => {
  for (const worker of [false, true]) {
    it(`leaves every frame, header and row under the new data key only, the key record with one key, the data the same; progress per session (worker: ${worker})`, async () => {
      const where = join(dir, 's')
      const s = await openStore({ storage: 'fs', dir: where, worker, encryption: { key: keyOf(1) } })
      await fillMany(s)
      const before = await dumpStore(s)
      const unitsBefore = await unitsOnDisk(where)
      expect(new Set(unitsBefore.map((u) => u.kind))).toEqual(new Set(['header', 'frame', 'checkpoint', 'history']))
      expect(gensOf(unitsBefore)).toEqual([1])
      const sizes = await logSizes(where)
      const progress: { sessions: number; done: number; events: number }[] = []
      await s.rotateKey(keyOf(2), { onProgress: (p) => progress.push(p) })
      const unitsAfter = await unitsOnDisk(where)
      expect(gensOf(unitsAfter)).toEqual([2])
      expect(unitsAfter.map((u) => [u.kind, u.id])).toEqual(unitsBefore.map((u) => [u.kind, u.id]))
      expect(await keyRecordOf(where)).toMatchObject({ current: 2, keys: [{ gen: 2 }] })
      expect(await logSizes(where)).toEqual(sizes) // each record kept its length
      // Progress: at the start, then after each session, ending at the total.
      const ids = Object.keys(before)
      const events = Object.values(before).reduce((n, d) => n + d.events.length, 0)
      expect(progress[0]).toEqual({ sessions: ids.length, done: 0, events: 0 })
      expect(progress.map((p) => p.done)).toEqual(Array.from({ length: ids.length + 1 }, (_, i) => i))
      for (let i = 1; i < progress.length; i++) expect(progress[i]!.events).toBeGreaterThanOrEqual(progress[i - 1]!.events)
      expect(progress.at(-1)).toEqual({ sessions: ids.length, done: ids.length, events })
      expect(await dumpStore(s)).toEqual(before)
      await s.close()
      await expect(openStore({ storage: 'fs', dir: where, worker, encryption: { key: keyOf(1) } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
      const again = await openStore({ storage: 'fs', dir: where, worker, encryption: { key: keyOf(2) } })
      expect(await dumpStore(again)).toEqual(before)
      expect((await again.verify()).damaged).toEqual([])
      // Written after: under the current key, and a second rotation moves everything again.
      const w = await again.openSession('root')
      await w.append({ type: 'app/later', data: 'l'.repeat(600) })
      await w.close()
      await again.rotateKey(keyOf(3))
      expect(gensOf(await unitsOnDisk(where))).toEqual([3])
      expect(await keyRecordOf(where)).toMatchObject({ current: 3, keys: [{ gen: 3 }] })
      await again.close()
    }, 60_000)
  }

  it('bad options are INVALID_ARGUMENT and write nothing', async () => {
    const where = join(dir, 'opts')
    const s = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })
    await (await s.createSession({ id: 'a' })).append({ type: 'app/a', data: 'x'.repeat(600) })
    const record = await readFile(join(where, 'meta', 'sessionfold-codec'), 'utf8')
    const units = await unitsOnDisk(where)
    for (const options of [{ onProgres: () => {} }, { onProgress: 5 }, 'fast', null]) {
      await expect(s.rotateKey(keyOf(2), options as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }
    expect(await readFile(join(where, 'meta', 'sessionfold-codec'), 'utf8')).toBe(record)
    expect(await unitsOnDisk(where)).toEqual(units)
    await s.close()
  })

  it('a session open for writing is left under the old key: SESSION_LOCKED, the store opens with the new key, and rotateKey again completes it', async () => {
    const where = join(dir, 'locked')
    const s = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })
    await fillMany(s)
    const before = await dumpStore(s)
    const w = await s.openSession('kid')
    const started = Date.now()
    await expect(s.rotateKey(keyOf(2))).rejects.toMatchObject({ code: 'SESSION_LOCKED', sessionId: 'kid' })
    expect(Date.now() - started).toBeGreaterThan(1500) // waited for it a while
    const units = await unitsOnDisk(where)
    expect(gensOf(units.filter((u) => u.id === 'kid'))).toEqual([1])
    expect(gensOf(units.filter((u) => u.id !== 'kid'))).toEqual([2])
    expect((await keyRecordOf(where)).keys.map((k) => k.gen)).toEqual([1, 2])
    // Written meanwhile by the writer: under the new data key (the store's key changed here).
    await w.append({ type: 'app/meanwhile' })
    await w.close()
    const expected = await dumpStore(s)
    expect(Object.keys(expected)).toEqual(Object.keys(before))
    await expect(openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    const progress: number[] = []
    await s.rotateKey(keyOf(2), { onProgress: (p) => progress.push(p.done) }) // the same key: completes the rotation
    expect(progress.at(-1)).toBe(Object.keys(before).length)
    expect(gensOf(await unitsOnDisk(where))).toEqual([2])
    expect(await keyRecordOf(where)).toMatchObject({ current: 2, keys: [{ gen: 2 }] })
    expect(await dumpStore(s)).toEqual(expected)
    await s.close()
  }, 60_000)

  it('a rotation stopped midway (onProgress threw) opens whole with the new key; rotateKey again completes it without a new data key', async () => {
    const where = join(dir, 'stopped')
    const s = await openStore({ storage: 'fs', dir: where, worker: true, encryption: { key: keyOf(1) } })
    await fillMany(s)
    const before = await dumpStore(s)
    await expect(
      s.rotateKey(keyOf(2), {
        onProgress: (p) => {
          if (p.done === 3) throw new Error('stop here')
        },
      }),
    ).rejects.toThrow('stop here')
    await s.close()
    expect(gensOf(await unitsOnDisk(where))).toEqual([1, 2])
    expect((await keyRecordOf(where)).keys.map((k) => k.gen)).toEqual([1, 2])
    await expect(openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    const again = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(2) } })
    expect(await dumpStore(again)).toEqual(before)
    await again.rotateKey(keyOf(2))
    expect(gensOf(await unitsOnDisk(where))).toEqual([2])
    expect(await keyRecordOf(where)).toMatchObject({ current: 2, keys: [{ gen: 2 }] })
    expect(await dumpStore(again)).toEqual(before)
    await again.close()
  }, 60_000)

  it('a store open elsewhere with the old key writes nothing after the rotation: taking a writer is KEY_REJECTED', async () => {
    const where = join(dir, 'elsewhere')
    const a = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })
    await fillMany(a)
    const b = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })
    await a.rotateKey(keyOf(2))
    await expect(b.openSession('root')).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    await expect(b.createSession({ id: 'new' })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    // Nor an import of new sessions, which takes no writer lock (createSessions): KEY_REJECTED,
    // not sessions sealed under a data key the store no longer lists.
    const source = await openStore({ storage: 'memory', worker: false })
    const imported = await source.createSession({ id: 'imported' })
    await imported.append([{ type: 'app/a', data: { secret: 1 } }])
    await expect(b.applyChanges((await source.changesSince(null)).batch)).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    await source.close()
    await b.close()
    expect(await a.listSessions({ limit: 1000 })).not.toContainEqual(expect.objectContaining({ id: 'imported' }))
    expect(gensOf(await unitsOnDisk(where))).toEqual([2])
    expect((await a.verify()).damaged).toEqual([])
    await a.close()
  }, 60_000)
})

describe('replaceRecords on fs, as other processes see it', () => {
  it("another adapter on the folder (another process) that cached the log reads the new records and appends after them; this one's writer handle follows the new file", async () => {
    const a = createFsAdapter({ dir })
    const b = createFsAdapter({ dir })
    const data = (seq: number, c: string) => ({ text: `v${seq}-${c.repeat(6)}` })
    await a.createSession(rootHeader('s'))
    await a.append(
      's',
      evs('s', 0, 3, (seq) => data(seq, 'a')),
    ) // a's writer handle is open
    expect((await readAll(b, 's')).length).toBe(3) // b caches the log
    await b.append('s', [ev('s', 3, data(3, 'a'))]) // and holds a writer handle on it
    expect((await a.getSession('s'))?.length).toBe(4)
    await a.replaceRecords!('s', { records: [ev('s', 1, data(1, 'b')), ev('s', 3, data(3, 'b'))], header: rootHeader('s', { cwd: '/new' }) })
    const expected = [data(0, 'a'), data(1, 'b'), data(2, 'a'), data(3, 'b')]
    expect((await readAll(b, 's')).map((e) => e.data)).toEqual(expected)
    expect((await b.getSession('s'))?.header.cwd).toBe('/new') // what an engine reads on taking the lock
    await b.append('s', [ev('s', 4, data(4, 'a'))])
    expect((await a.getSession('s'))?.length).toBe(5)
    await a.append('s', [ev('s', 5, data(5, 'a'))])
    const all = [...expected, data(4, 'a'), data(5, 'a')]
    expect((await readAll(a, 's')).map((e) => e.data)).toEqual(all)
    expect((await readAll(b, 's')).map((e) => e.data)).toEqual(all)
    await a.close()
    await b.close()
    const c = createFsAdapter({ dir })
    expect((await readAll(c, 's')).map((e) => e.data)).toEqual(all)
    expect(await readdir(join(dir, 'tmp'))).toEqual([])
    await c.close()
  })
})
