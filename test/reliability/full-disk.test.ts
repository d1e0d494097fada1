// Reliability: a full disk (ENOSPC) — STORAGE_QUOTA_EXCEEDED, nothing partial stored, recovery (§6 errors, §7 durability)
// A full disk, through the public client: ENOSPC injected into node:fs (test/fixtures/
// disk-faults.ts) in this thread (worker: false) and inside the engine's worker thread.
// The failing call rejects with STORAGE_QUOTA_EXCEEDED, nothing partial is stored (the log
// files are byte for byte what they were), earlier data and projections are intact and equal
// a refold, and the store works again once space returns.
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { openStore, type Session, type Store } from 'sessionfold'
import { sealedFs } from '../support/sealed'
import { folderOf } from '../../src/backends/fs/layout'
import type { Json } from '../../src/core/model'
import { installDiskFaults, type DiskFault } from '../fixtures/disk-faults'
import { expectCode, readAll } from '../support/helpers'
import { fullRefold } from '../support/refold'

let root: string
let dir: string
let flag: string
const setFault = (f: DiskFault) => writeFile(flag, f)

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sessionfold-full-'))
  flag = join(root, 'fault')
  // Every store of this file lives under root/stores: the faults touch nothing else.
  process.env.SESSIONFOLD_TEST_DISK_FLAG = flag
  process.env.SESSIONFOLD_TEST_DISK_DIR = join(root, 'stores')
  await installDiskFaults(flag, join(root, 'stores'))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
})
let n = 0
/**
 * What tmp/ holds once the writes on their way settled: the session index (§14) writes its rows
 * in the background, each through a temp file renamed at once; what stays is left behind.
 */
async function tmpSettled(): Promise<string[]> {
  for (const end = Date.now() + 2000; ; await new Promise((r) => setTimeout(r, 20))) {
    const names = await readdir(join(dir, 'tmp'))
    if (names.length === 0 || Date.now() > end) return names
  }
}

beforeEach(async () => {
  dir = join(root, 'stores', String(n++))
  await setFault('')
})
afterEach(() => setFault(''))

const fileOf = (id: string, name: string) => join(dir, 'sessions', folderOf(id), name)
// Rows stored as they are, not deflated by the record codec (rows of four built-in units pass its
// threshold): the checkpoint files are read here as a tool would read them.
const open = (worker: boolean) =>
  openStore({ dir, worker, workerUrl: worker ? new URL('../fixtures/full-disk-worker.ts', import.meta.url) : undefined, compression: 'none' })

/** What is stored, read by an adapter of its own: every session with its events and the log bytes. */
async function stored(): Promise<Record<string, { data: Json[]; log: string }>> {
  const a = await sealedFs({ dir })
  try {
    const out: Record<string, { data: Json[]; log: string }> = {}
    for (const h of await a.listSessions()) {
      out[h.id] = { data: (await readAll(a, h.id)).map((e) => e.data), log: (await readFile(fileOf(h.id, 'events.log'))).toString('hex') }
    }
    return out
  } finally {
    await a.close()
  }
}

/** The live values of `s` equal a full refold of what is stored, and a cold read by another store. */
async function expectRefold(store: Store, s: Session): Promise<void> {
  const a = await sealedFs({ dir })
  try {
    expect(s.projections.snapshot()).toEqual(await fullRefold(a, s.id))
  } finally {
    await a.close()
  }
  const other = await openStore({ dir, worker: false })
  try {
    const view = await other.observe(s.id)
    expect(view.projections.snapshot()).toEqual(s.projections.snapshot())
  } finally {
    await other.close()
  }
  void store
}

/** A store with a little history: a root with a turn and a child, and a second session. */
async function populated(store: Store) {
  const s = await store.createSession({ id: 's' })
  const acked: Json[] = []
  const add = async (data: Json[], type = 'app/e', to: Session = s) => {
    await to.append(data.map((d) => ({ type, data: d, time: 1 })))
    acked.push(...data)
  }
  await s.append({ type: 'turn/start', time: 10 })
  acked.push(null)
  await add(Array.from({ length: 20 }, (_, i) => ({ i })))
  await s.spawn({ mode: 'continuable', label: 'helper', id: 'kid', events: [{ type: 'app/k', data: 1 }] }).then((k) => k.close())
  acked.push(null) // the catalog fact (its data is checked through the projections)
  await s.append({ type: 'turn/end', time: 20 })
  acked.push(null)
  const o = await store.createSession({ id: 'o' })
  await o.append(Array.from({ length: 5 }, (_, i) => ({ type: 'app/o', data: i })))
  return { s, o, add, acked }
}

describe('a full disk (ENOSPC) through the public client', () => {
  for (const worker of [false, true]) {
    for (const fault of ['log-write', 'log-sync'] as const) {
      it(`${fault}: appends and spawns reject with STORAGE_QUOTA_EXCEEDED, store nothing, and work again once space returns (worker: ${worker})`, async () => {
        const store = await open(worker)
        const { s, o, add } = await populated(store)
        const before = await stored()
        const values = s.projections.snapshot()
        expect(values.values.subagentCatalog).toHaveLength(1)

        await setFault(fault)
        const err = await expectCode(
          s.append([
            { type: 'app/lost', data: 1 },
            { type: 'app/lost', data: 2 },
          ]),
          'STORAGE_QUOTA_EXCEEDED',
        )
        expect(err.message).toContain('"s"')
        // Appends in flight together all fail; none of them is half stored.
        const together = await Promise.allSettled([1, 2, 3].map((k) => s.append({ type: 'app/lost', data: k })))
        for (const r of together) expect((r as PromiseRejectedResult).reason?.code).toBe('STORAGE_QUOTA_EXCEEDED')
        // A spawn whose descriptor cannot be written leaves no child and no catalog fact.
        await expectCode(s.spawn({ mode: 'one-shot', id: 'orphan' }), 'STORAGE_QUOTA_EXCEEDED')
        await expectCode(o.append({ type: 'app/lost' }), 'STORAGE_QUOTA_EXCEEDED')

        expect(await stored()).toEqual(before) // the same sessions, events and log bytes
        expect(s.projections.snapshot()).toEqual(values)
        await expectRefold(store, s)
        expect(existsSync(join(dir, 'sessions', folderOf('orphan')))).toBe(false)

        await setFault('')
        // Numbering carries on from what is durable: no gap where the failed appends were.
        expect(await s.append({ type: 'app/e', data: 'after', time: 1 }, { expectedSeq: values.asOfSeq + 1 })).toEqual({
          firstSeq: values.asOfSeq + 1,
          lastSeq: values.asOfSeq + 1,
        })
        await add([{ again: true }])
        const kid = await s.spawn({ mode: 'one-shot', id: 'orphan' })
        await kid.close()
        expect(s.projections.get('subagentCatalog')!.map((c) => c.id)).toEqual(['kid', 'orphan'])
        await o.append({ type: 'app/o', data: 5 })
        await expectRefold(store, s)
        await store.close()

        const after = await stored()
        expect(after.s!.data.slice(0, before.s!.data.length)).toEqual(before.s!.data)
        expect(after.s!.data.slice(before.s!.data.length)).toEqual(['after', { again: true }, expect.objectContaining({ childId: 'orphan' })])
        expect(after.o!.data).toEqual([0, 1, 2, 3, 4, 5])
        const again = await open(worker)
        const reopened = await again.openSession('s')
        await expectRefold(again, reopened)
        await again.close()
      })
    }

    it(`a checkpoint that cannot be written fails no append, leaves the old row whole and no temp file (worker: ${worker})`, async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
      try {
        const store = await open(worker)
        const { s, add } = await populated(store)
        await s.close() // writes the close checkpoint
        const row = await readFile(fileOf('s', 'checkpoint.json'), 'utf8')
        const s2 = await store.openSession('s')
        await setFault('checkpoint')
        await add(
          Array.from({ length: 5 }, (_, i) => ({ late: i })),
          'app/e',
          s2,
        )
        await s2.append({ type: 'turn/end', time: 30 }) // a checkpoint point: the write fails
        await s2.close() // and so does the close checkpoint: close still resolves
        expect(await readFile(fileOf('s', 'checkpoint.json'), 'utf8')).toBe(row)
        expect(JSON.parse(row)).toMatchObject({ witness: { id: 's' } })
        expect(await tmpSettled()).toEqual([])
        if (!worker) expect(warn.mock.calls.some(([m]) => /checkpoint of session "s".*not written/.test(String(m)))).toBe(true)
        const view = await store.observe('s') // a cold read: the old row plus the suffix
        const a = await sealedFs({ dir })
        expect(view.projections.snapshot()).toEqual(await fullRefold(a, 's'))
        await a.close()
        await view.close()

        await setFault('')
        const s3 = await store.openSession('s')
        await s3.close()
        const fresh = JSON.parse(await readFile(fileOf('s', 'checkpoint.json'), 'utf8')) as { rows: Record<string, { seq: number }> }
        expect(fresh.rows.subagentTiming!.seq).toBe(s3.projections.snapshot().asOfSeq)
        await store.close()
      } finally {
        warn.mockRestore()
      }
    })

    it(`when nothing can be written, creating, opening, spawning and forking reject with STORAGE_QUOTA_EXCEEDED and leave no trace (worker: ${worker})`, async () => {
      const store = await open(worker)
      const { s, o } = await populated(store)
      await o.close()
      const before = await stored()
      const locksBefore = (await readdir(join(dir, 'locks'))).sort()
      await setFault('all')
      await expectCode(store.createSession({ id: 'new' }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(store.openSession('o'), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.append({ type: 'app/lost' }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.spawn({ mode: 'one-shot', id: 'k2' }), 'STORAGE_QUOTA_EXCEEDED')
      await expectCode(s.fork({ at: 3 }), 'STORAGE_QUOTA_EXCEEDED')
      const view = await store.observe('o') // reading needs no space
      expect(view.projections.snapshot().asOfSeq).toBe(4)
      await view.close()
      expect(await stored()).toEqual(before)
      expect((await readdir(join(dir, 'locks'))).sort()).toEqual(locksBefore)
      expect(await tmpSettled()).toEqual([])

      await setFault('')
      // No half-made lock or session is in the way: the same ids work at once.
      const made = await store.createSession({ id: 'new' })
      await made.append({ type: 'app/n' })
      const o2 = await store.openSession('o')
      await o2.append({ type: 'app/o', data: 5 })
      await s.append({ type: 'app/e', data: 'back' })
      await expectRefold(store, s)
      await store.close()
    })
  }
})
