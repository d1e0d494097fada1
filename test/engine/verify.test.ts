// Contract: §8 verify — damaged logs and checkpoints reported, nothing changed; a torn tail (§7 durability) is no damage (docs/CONTRACT.md)
// store.verify(): reads every log and checkpoint, reports each damaged session, changes nothing.
import 'fake-indexeddb/auto'
import { createHash } from 'node:crypto'
import { appendFile, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { openSealed } from '../../src/storage/codec'
import { createFsAdapter } from '../../src/backends/fs'
import { folderOf } from '../../src/backends/fs/layout'
import { openStore, type Store } from 'sessionfold'
import { BUILTIN_PROJECTIONS } from '../../src/core/units'
import { checkpointRowOf, foldEvent, initSlots, restoreSlots } from '../../src/engine/units'
import { expectCode } from '../support/helpers'

const compressor = { deflate: (b: Uint8Array) => deflateRawSync(b), inflate: (b: Uint8Array) => inflateRawSync(b) }

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-verify-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const sessionDir = (id: string) => join(dir, 'sessions', folderOf(id))

/** Every file under the store with a hash of its bytes: verify must leave this unchanged. */
async function filesOf(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  async function walk(d: string): Promise<void> {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      const p = join(d, entry.name)
      if (entry.isDirectory()) await walk(p)
      else
        out[p.slice(root.length)] = createHash('sha1')
          .update(await readFile(p))
          .digest('hex')
    }
  }
  await walk(root)
  return out
}

/** Three root sessions (one with two children, one forked), some events each; the store stays open. */
async function seed(store: Store): Promise<{ ids: string[] }> {
  const ids: string[] = []
  for (const name of ['alpha', 'beta', 'gamma']) {
    const s = await store.createSession({ id: name })
    for (let i = 0; i < 4; i++) await s.append(Array.from({ length: 25 }, (_, k) => ({ type: 'msg', data: { name, i, k, text: 'x'.repeat(40) } })))
    ids.push(name)
    if (name === 'beta') {
      for (const label of ['one', 'two']) {
        const child = await s.spawn({ mode: label === 'one' ? 'one-shot' : 'continuable', label })
        await child.append({ type: 'msg', data: { label } })
        ids.push(child.id)
        await child.close()
      }
      const fork = await s.fork({ at: 50 })
      ids.push(fork.id)
      await fork.close()
    }
    await s.close()
  }
  return { ids }
}

for (const worker of [false, true]) {
  describe(`verify (fs, worker: ${worker})`, () => {
    it('a sound store: every session and event counted, no damage, progress up to the total, nothing changed', async () => {
      const store = await openStore({ storage: 'fs', dir, worker })
      const { ids } = await seed(store)
      await store.close()
      const reopened = await openStore({ storage: 'fs', dir, worker })
      const before = await filesOf(dir)
      const progress: { done: number; total: number }[] = []
      const report = await reopened.verify({ onProgress: (p) => progress.push(p) })
      const headers = await reopened.listSessions({ limit: 1000 })
      let stored = 0
      for (const h of headers) {
        const view = await reopened.observe(h.id)
        stored += view.projections.snapshot().asOfSeq + 1
        await view.close()
      }
      expect(report).toEqual({ sessions: ids.length, events: stored, damaged: [] })
      expect(progress[0]).toEqual({ done: 0, total: stored })
      expect(progress.at(-1)).toEqual({ done: stored, total: stored })
      await reopened.close()
      expect(await filesOf(dir)).toEqual(before)
    })

    it('a flipped byte mid-log: CORRUPT_LOG for that session only, naming it and the offset; the others stay readable and writable', async () => {
      const store = await openStore({ storage: 'fs', dir, worker })
      await seed(store)
      await store.close()
      const log = join(sessionDir('beta'), 'events.log')
      const bytes = await readFile(log)
      const at = Math.floor(bytes.length / 2)
      bytes[at] = bytes[at]! ^ 0x5a
      await writeFile(log, bytes)
      const before = await filesOf(dir)

      const reopened = await openStore({ storage: 'fs', dir, worker })
      const report = await reopened.verify()
      expect(report.damaged).toHaveLength(1)
      expect(report.damaged[0]).toMatchObject({ id: 'beta', code: 'CORRUPT_LOG' })
      expect(report.damaged[0]!.detail).toMatch(/beta/)
      expect(report.damaged[0]!.detail).toMatch(/byte \d+/)
      expect(await filesOf(dir)).toEqual(before)

      // Opening reads only the tail past the last index entry; reading through the damage fails.
      const beta = await reopened.observe('beta')
      await expectCode(
        (async () => {
          for await (const _ of beta.events()) void _
        })(),
        'CORRUPT_LOG',
      )
      await beta.close()
      const alpha = await reopened.openSession('alpha')
      await alpha.append({ type: 'after', data: {} })
      expect(alpha.projections.snapshot().asOfSeq).toBe(100)
      await alpha.close()
      const gamma = await reopened.observe('gamma')
      let n = 0
      for await (const _ of gamma.events()) n++
      expect(n).toBe(100)
      await gamma.close()
      await reopened.close()
    })

    it('a damaged header: CORRUPT_LOG for that session; listing skips it, verify does not', async () => {
      const store = await openStore({ storage: 'fs', dir, worker })
      await seed(store)
      await store.close()
      await writeFile(join(sessionDir('gamma'), 'header.json'), '{"version":1,"id":"gam')
      const reopened = await openStore({ storage: 'fs', dir, worker })
      const report = await reopened.verify()
      expect(report.damaged.map((d) => [d.id, d.code])).toEqual([['gamma', 'CORRUPT_LOG']])
      const listed = (await reopened.listSessions({ limit: 1000 })).map((h) => h.id)
      expect(listed).toContain('alpha')
      expect(listed).not.toContain('gamma')
      await reopened.close()
    })
  })
}

describe('verify: checkpoints (fs, in thread)', () => {
  /** A store with one session `s` of 300 events (a checkpoint at close), then closed. */
  async function withCheckpoint(): Promise<void> {
    const store = await openStore({ storage: 'fs', dir, worker: false, checkpoint: { everyEvents: 100 } })
    const s = await store.createSession({ id: 's' })
    for (let i = 0; i < 3; i++) await s.append(turn(i))
    await s.close()
    await store.close()
  }
  /** One turn of 100 events: start, 98 messages, end. */
  const turn = (i: number) =>
    Array.from({ length: 100 }, (_, k) => ({
      type: k === 0 ? 'turn/start' : k === 99 ? 'turn/end' : 'msg',
      data: { i, k },
      time: 1000 * i + k,
    }))
  const cpPath = () => join(sessionDir('s'), 'checkpoint.json')

  async function verifyDamage(): Promise<{ code: string; detail: string }[]> {
    const before = await filesOf(dir)
    const store = await openStore({ storage: 'fs', dir, worker: false })
    const report = await store.verify()
    await store.close()
    expect(await filesOf(dir)).toEqual(before) // not repaired, not rewritten
    expect(report.events).toBe(300)
    return report.damaged.map(({ code, detail }) => ({ code, detail }))
  }

  it('a sound checkpoint is no damage', async () => {
    await withCheckpoint()
    await stat(cpPath())
    expect(await verifyDamage()).toEqual([])
  })

  it('a checkpoint that is not JSON, or fails its checksum, or runs ahead of its log is reported', async () => {
    await withCheckpoint()
    const good = await readFile(cpPath(), 'utf8')
    await writeFile(cpPath(), good.slice(0, good.length / 2))
    expect(await verifyDamage()).toEqual([{ code: 'CORRUPT_CHECKPOINT', detail: expect.stringMatching(/checkpoint/) }])

    const flipped = good.replace(/"seq":299/, '"seq":298')
    expect(flipped).not.toBe(good)
    await writeFile(cpPath(), flipped)
    expect(await verifyDamage()).toEqual([{ code: 'CORRUPT_CHECKPOINT', detail: expect.stringMatching(/checksum/) }])

    // A whole, well-summed row that claims more than the log holds.
    const adapter = createFsAdapter({ dir })
    const info = (await adapter.getSession('s'))!
    const restored = restoreSlots(BUILTIN_PROJECTIONS, info.header, JSON.parse(good), info.length)
    expect(restored.kept).toBe(BUILTIN_PROJECTIONS.length)
    for (const slot of restored.slots) slot.seq = 400
    await adapter.putCheckpoint('s', checkpointRowOf(info.header, restored.slots).row)
    await adapter.close()
    expect(await verifyDamage()).toEqual([{ code: 'CORRUPT_CHECKPOINT', detail: expect.stringMatching(/beyond the log/) }])
  })

  it('a well-formed checkpoint whose value disagrees with a full refold is reported', async () => {
    // The states of seq 99, claimed for seq 299: sum, witness and schemas all pass.
    const store = await openStore({ storage: 'fs', dir, worker: false, checkpoint: { everyEvents: 100 } })
    const s = await store.createSession({ id: 's' })
    await s.append(turn(0))
    await s.close()
    const early = JSON.parse(await readFile(cpPath(), 'utf8')) as unknown
    const again = await store.openSession('s')
    await again.append(turn(1))
    await again.append(turn(2))
    await again.close()
    await store.close()
    const adapter = createFsAdapter({ dir })
    const info = (await adapter.getSession('s'))!
    const restored = restoreSlots(BUILTIN_PROJECTIONS, info.header, early, info.length)
    expect(restored.kept).toBe(BUILTIN_PROJECTIONS.length)
    for (const slot of restored.slots) slot.seq = 299
    await adapter.putCheckpoint('s', checkpointRowOf(info.header, restored.slots).row)
    await adapter.close()
    expect(await verifyDamage()).toEqual([
      { code: 'CORRUPT_CHECKPOINT', detail: 'checkpoint of session "s" gives "subagentTiming" a value that a full refold does not' },
    ])
  })

  it('history rows: sound ones are no damage; one that is not JSON, lies beyond the log or disagrees with a refold is reported', async () => {
    await withCheckpoint()
    // Through the record codec, as the store reads it (appends may be stored as frames).
    const adapter = await openSealed(createFsAdapter({ dir }), { compressor })
    const info = (await adapter.getSession('s'))!
    /** The row a refold of the first `at` events gives. */
    const rowAt = async (at: number) => {
      const slots = initSlots(BUILTIN_PROJECTIONS, info.header)
      for await (const page of adapter.readEvents('s', { to: at })) for (const e of page) foldEvent(slots, e)
      return checkpointRowOf(info.header, slots).row
    }
    const at100 = await rowAt(100)
    await adapter.history!.put('s', 100, at100)
    await adapter.history!.put('s', 200, await rowAt(200))
    await adapter.close()
    expect(await verifyDamage()).toEqual([])
    const rowFile = (at: number) => join(sessionDir('s'), 'history', `${at}.json`)
    const good = await readFile(rowFile(200), 'utf8')
    await writeFile(rowFile(200), good.slice(0, 40))
    expect(await verifyDamage()).toEqual([{ code: 'CORRUPT_CHECKPOINT', detail: expect.stringMatching(/history row 200 of session "s"/) }])
    await writeFile(rowFile(200), good)
    await writeFile(rowFile(400), good)
    expect(await verifyDamage()).toEqual([{ code: 'CORRUPT_CHECKPOINT', detail: 'history row 400 of session "s" lies beyond the log\'s 300 events' }])
    await rm(rowFile(400))
    // The states after 100 events, claimed for 200: sum, witness and schemas all pass.
    const early = await openSealed(createFsAdapter({ dir }), { compressor })
    const restored = restoreSlots(BUILTIN_PROJECTIONS, info.header, at100, 100)
    for (const slot of restored.slots) slot.seq = 199
    await early.history!.put('s', 200, checkpointRowOf(info.header, restored.slots).row)
    await early.close()
    expect(await verifyDamage()).toEqual([
      { code: 'CORRUPT_CHECKPOINT', detail: 'history row 200 of session "s" gives "subagentTiming" a value that a full refold does not' },
    ])
  })
})

describe('verify: other stores and arguments', () => {
  for (const storage of ['memory', 'indexeddb'] as const) {
    it(`counts every session and event on ${storage}`, async () => {
      const store = await openStore({ storage, worker: false, name: `verify-${Date.now()}` })
      const { ids } = await seed(store)
      const report = await store.verify()
      expect(report.sessions).toBe(ids.length)
      expect(report.damaged).toEqual([])
      expect(report.events).toBeGreaterThan(300)
      await store.close()
    })
  }

  it('bad options are INVALID_ARGUMENT; an aborted signal is CANCELLED', async () => {
    const store = await openStore({ storage: 'memory', worker: false })
    await seed(store)
    await expectCode(store.verify(null as never), 'INVALID_ARGUMENT')
    await expectCode(store.verify({ signal: {} as never }), 'INVALID_ARGUMENT')
    await expectCode(store.verify({ onProgress: 3 as never }), 'INVALID_ARGUMENT')
    await expectCode(store.verify({ onProgres: () => {} } as never), 'INVALID_ARGUMENT')
    const controller = new AbortController()
    controller.abort()
    await expectCode(store.verify({ signal: controller.signal }), 'CANCELLED')
    const late = new AbortController()
    await expectCode(store.verify({ signal: late.signal, onProgress: () => late.abort() }), 'CANCELLED')
    await store.close()
  })
})

describe('a torn tail through the client (fs, in thread)', () => {
  it('is no damage to verify, is cut by the next append and reported on the console', async () => {
    const store = await openStore({ storage: 'fs', dir, worker: false })
    const s = await store.createSession({ id: 't' })
    await s.append([{ type: 'a' }, { type: 'b' }])
    await s.close()
    await store.close()
    await appendFile(join(sessionDir('t'), 'events.log'), Buffer.from([1, 2, 3, 4, 5, 6, 7]))
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      const again = await openStore({ storage: 'fs', dir, worker: false })
      expect(await again.verify()).toEqual({ sessions: 1, events: 2, damaged: [] })
      const t = await again.openSession('t')
      expect(await t.append({ type: 'c' })).toEqual({ firstSeq: 2, lastSeq: 2 })
      await t.close()
      await again.close()
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/cut 7 bytes of a torn tail from .*events\.log \(session "t"\)/))
    } finally {
      warn.mockRestore()
    }
  })
})
