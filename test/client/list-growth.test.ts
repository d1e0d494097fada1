// Contract: §6 client API — change pushes proportional to the change: a list view that only grew crosses as its new items (docs/CONTRACT.md)
// The catalog, and an app's own list-shaped view, cross from the engine host to the client as
// the items added; the client rebuilds the value without checking what it already holds, the
// value changes identity exactly when it changes, and every handle ends with the values a cold
// read gives.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions, type SessionView } from 'sessionfold'
import type { Frame } from '../../src/core/protocol'
import { encodeEventBody } from '../../src/core/validate'
import { EngineHost, ownEngine } from '../../src/host/host'
import { nodePlatform } from '../../src/backends/node'
import { tick, until } from '../contract/client'
import { fewNotes, notes } from '../fixtures/notes-units'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-growth-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** An engine host on fs with the app units above, and every frame it pushes. */
async function hostWithFrames(): Promise<{ host: EngineHost; frames: Frame[] }> {
  const frames: Frame[] = []
  class Recording extends EngineHost {
    protected override takeFrames(): Frame[] {
      const taken = super.takeFrames()
      frames.push(...taken)
      return taken
    }
  }
  const host = new Recording({ projections: [notes, fewNotes] }, ownEngine(nodePlatform), () => {})
  await host.init({ store: { storage: 'fs', dir, durability: 'relaxed' } })
  return { host, frames }
}

const body = (type: string, data: unknown = null) => encodeEventBody({ type, data: data as never }, 's')

describe('change pushes: lists that only grew', () => {
  it('a catalog fact crosses as the one entry added, whatever the catalog length', async () => {
    const { host, frames } = await hostWithFrames()
    const { handle } = await host.createSession({ id: 's' })
    for (let i = 0; i < 150; i++) await host.recordExternal(handle, { childId: `x${i}` })
    await tick()
    const catalogFrames = frames.filter((f) => f.grown?.subagentCatalog || f.values.subagentCatalog !== undefined)
    expect(catalogFrames.length).toBeGreaterThan(0)
    let held: unknown[] = []
    for (const f of catalogFrames) {
      expect(f.values.subagentCatalog).toBeUndefined() // never the whole list
      const { from, items } = f.grown!.subagentCatalog!
      expect(from).toBe(held.length)
      held = [...held, ...items]
    }
    expect(held.map((e) => (e as { id: string }).id)).toEqual(Array.from({ length: 150 }, (_, i) => `x${i}`))
    // Appends folded before a push go out together, from where the frame started.
    const before = frames.length
    await Promise.all([host.recordExternal(handle, { childId: 'y1' }), host.recordExternal(handle, { childId: 'y2' })])
    await tick()
    const merged = frames.slice(before).flatMap((f) => (f.grown?.subagentCatalog ? [f.grown.subagentCatalog] : []))
    expect(merged[0]!.from).toBe(150)
    expect(merged.reduce((n, g) => n + g.items.length, 0)).toBe(2)
    await host.close()
  })

  it("an app's list view grows by items; a list that changed otherwise is sent whole; a rule on the whole list still sees the whole list", async () => {
    const { host, frames } = await hostWithFrames()
    const { handle } = await host.createSession({ id: 's' })
    await host.append(handle, [body('app/note', { n: 1 }), body('app/note', { n: 2 })])
    await tick()
    expect(frames.at(-1)!.grown?.notes).toEqual({ from: 0, items: [{ n: 1 }, { n: 2 }] })
    expect(frames.at(-1)!.grown?.fewNotes).toEqual({ from: 0, items: [{ n: 1 }, { n: 2 }] })
    await host.append(handle, [body('app/flip')])
    await tick()
    expect(frames.at(-1)!.values.notes).toEqual([{ n: 2 }, { n: 1 }])
    expect(frames.at(-1)!.grown).toBeUndefined()
    // A new item failing the item shape faults the unit, as a whole-list check would.
    await host.append(handle, [body('app/note', { n: 1.5 })])
    await tick()
    expect(frames.at(-1)!.faults.notes).toBe('corrupt')
    expect(frames.at(-1)!.values.notes).toBeNull()
    // The list-level rule still holds: a fourth item faults fewNotes.
    await host.append(handle, [body('app/note', { n: 4 })])
    await tick()
    expect(frames.at(-1)!.faults.fewNotes).toBe('corrupt')
    await host.close()
  })

  const modes: [string, () => OpenStoreOptions][] = [
    ['in this thread', () => ({ dir, worker: false, projections: [notes] })],
    ['in a worker', () => ({ dir, workerUrl: new URL('../fixtures/notes-worker.ts', import.meta.url) })],
  ]
  for (const [mode, options] of modes) {
    it(`handles opened while the list grows end with the values of a cold read; the value changes identity exactly when it changes (${mode})`, async () => {
      const store = await openStore(options())
      const s = await store.createSession({ id: 'p' })
      const seen: unknown[] = []
      s.projections.subscribe('subagentCatalog', (v) => seen.push(v))
      const observers: SessionView[] = []
      const writes: Promise<unknown>[] = []
      for (let i = 0; i < 300; i++) {
        writes.push(s.recordExternal({ childId: `c${i}` }), s.append({ type: 'app/note', data: { n: i } }))
        if (i % 50 === 7) observers.push(await store.observe('p'))
      }
      await Promise.all(writes)
      const final = s.projections.get('subagentCatalog')!
      expect(final.map((e) => e.id)).toEqual(Array.from({ length: 300 }, (_, i) => `c${i}`))
      for (const o of observers) {
        await until(() => o.projections.asOfSeq === s.projections.asOfSeq)
        expect(o.projections.error).toBeUndefined()
        expect(o.projections.get('subagentCatalog')).toEqual(final)
        expect(o.projections.get('notes' as never) as unknown as unknown[]).toHaveLength(300)
      }
      // Each value a subscriber heard is a new array, one entry or more longer than the last.
      for (let i = 1; i < seen.length; i++) {
        expect(seen[i]).not.toBe(seen[i - 1])
        expect((seen[i] as unknown[]).length).toBeGreaterThan((seen[i - 1] as unknown[]).length)
      }
      // Another change (a turn) leaves the list's identity alone.
      const snap = s.projections.snapshot()
      await s.append({ type: 'turn/start' })
      expect(s.projections.snapshot()).not.toBe(snap)
      expect(s.projections.get('subagentCatalog')).toBe(final)
      await store.close()
      const cold = await openStore(options())
      const view = await cold.observe('p')
      expect(view.projections.get('subagentCatalog')).toEqual(final)
      expect(view.projections.get('notes' as never)).toEqual(observers[0]!.projections.get('notes' as never))
      await cold.close()
    })
  }

  it('the client takes new items that overlap what a fresh handle holds, and refuses items that do not continue its list', async () => {
    const store = await openStore({ dir, worker: false })
    const s = await store.createSession({ id: 'f' })
    const push = (frames: unknown[]) => (store as unknown as { _push: (p: unknown) => void })._push({ kind: 'frames', frames })
    const entry = (id: string, seq: number) => ({ id, createdAt: 1, mode: 'external', seq })
    push([{ n: 1, sessionId: 'f', seq: 10, values: {}, grown: { subagentCatalog: { from: 0, items: [entry('a', 10)] } }, faults: {} }])
    const one = s.projections.get('subagentCatalog')
    expect(one).toEqual([entry('a', 10)])
    // A handle that opened mid-way holds `a` already: a frame from 0 adds only what it lacks.
    push([{ n: 2, sessionId: 'f', seq: 11, values: {}, grown: { subagentCatalog: { from: 0, items: [entry('a', 10), entry('b', 11)] } }, faults: {} }])
    expect(s.projections.get('subagentCatalog')).toEqual([entry('a', 10), entry('b', 11)])
    expect(s.projections.get('subagentCatalog')![0]).toBe(one![0]) // held entries are kept, not rebuilt
    push([{ n: 3, sessionId: 'f', seq: 12, values: {}, grown: { subagentCatalog: { from: 5, items: [entry('c', 12)] } }, faults: {} }])
    expect(s.projections.error?.code).toBe('PROJECTIONS_UNAVAILABLE')
    expect(s.projections.get('subagentCatalog')).toHaveLength(2)
    await store.close()
  })

  it("frames are applied in the host's order (Frame.n), as they come on its one channel; a frame out of order, repeated or without its place stops every handle", async () => {
    const entry = (id: string, seq: number) => ({ id, createdAt: 1, mode: 'external', seq })
    const frame = (n: number | undefined, seq: number, from: number, id: string) => ({
      ...(n === undefined ? {} : { n }),
      sessionId: 'o',
      seq,
      values: {},
      grown: { subagentCatalog: { from, items: [entry(id, seq)] } },
      faults: {},
    })
    for (const [what, wrong] of [
      ['ahead of its turn', frame(4, 12, 2, 'c')],
      ['again', frame(2, 11, 1, 'b')],
      ['without its place', frame(undefined, 12, 2, 'c')],
    ] as const) {
      const store = await openStore({ dir, worker: false })
      const s = await store.createSession({ id: 'o' })
      const push = (frames: unknown[]) => (store as unknown as { _push: (p: unknown) => void })._push({ kind: 'frames', frames })
      push([frame(1, 10, 0, 'a'), frame(2, 11, 1, 'b')])
      expect(
        s.projections.get('subagentCatalog')!.map((e) => e.id),
        what,
      ).toEqual(['a', 'b'])
      expect(s.projections.error, what).toBeUndefined()
      push([wrong])
      expect(s.projections.error?.code, what).toBe('PROJECTIONS_UNAVAILABLE')
      expect(s.projections.get('subagentCatalog'), what).toHaveLength(2)
      const later = await store.observe('o')
      expect(later.projections.error?.code, what).toBe('PROJECTIONS_UNAVAILABLE')
      await store.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
