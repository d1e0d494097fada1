// Contract: §6 client API — a unit that misbehaves faults alone: the append that folded it resolves once, its siblings move, nothing leaks (docs/CONTRACT.md)
// App units that misbehave: an async apply or view (a rejected promise), a throw of what String()
// cannot show, views that are not plain JSON (undefined fields from an ordinary optional schema,
// Date, NaN, BigInt, cycles, a WeakRef, a throwing toJSON) or that a port cannot carry. Before,
// these rejected the append untyped or with PROJECTIONS_UNAVAILABLE after its events were
// written (a retry writes them twice), broke every later call on the session or the store, or
// ended the worker on an unhandled rejection. In both worker modes alike. (Found by an audit.)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { until } from '../contract/client'
import { events, units } from '../fixtures/hostile-units'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-probe-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const MODES = {
  worker: () => openStore({ storage: 'fs', dir, workerUrl: new URL('../fixtures/hostile-worker.ts', import.meta.url) }),
  inThread: () => openStore({ storage: 'fs', dir, worker: false, projections: units, events }),
} as const

const CASES: [key: string, type: string][] = [
  ['asyncApply', 'x/async-apply'],
  ['nullProto', 'x/null-proto'],
  ['proxyView', 'x/proxy'],
  ['weakRefView', 'x/weakref'],
  ['asyncView', 'x/async-view'],
  ['undefView', 'x/undef-field'],
  ['dateView', 'x/date'],
  ['bigView', 'x/bigint'],
  ['nanView', 'x/nan'],
  ['cycleView', 'x/cycle'],
  ['toJsonView', 'x/tojson'],
]

describe.each(Object.keys(MODES) as (keyof typeof MODES)[])('%s', (mode) => {
  it.each(CASES)('%s (%s) is contained', async (key, type) => {
    const store = await MODES[mode]()
    try {
      const session = await store.createSession({ id: 's' })
      const view = await store.observe('s')
      const seen: unknown[] = []
      const stop = view.projections.subscribe((snap, meta) => seen.push(meta.error ?? snap.asOfSeq))
      await session.append([{ type: 'app/a' }])
      let outcome: unknown
      try {
        outcome = await session.append([{ type }, { type: 'turn/start', data: { turnId: 't1' } }])
      } catch (err) {
        outcome = err
      }
      const snapOf = (h: typeof view) => h.projections.snapshot()
      const report = {
        outcome: outcome instanceof Error ? `${outcome.constructor.name}(${(outcome as { code?: string }).code}): ${outcome.message}` : outcome,
        writerFault: snapOf(session).faults[key as never],
        writerTiming: session.projections.get('subagentTiming') !== null,
      }
      await until(() => snapOf(view).asOfSeq === 2 || seen.some((s) => s instanceof Error)).catch(() => {})
      const viewReport = {
        asOfSeq: snapOf(view).asOfSeq,
        fault: snapOf(view).faults[key as never],
        errors: seen.filter((s) => s instanceof Error).map((e) => `${(e as { code?: string }).code}: ${(e as Error).message}`),
      }
      console.log(mode, key, JSON.stringify({ report, viewReport }))
      const types: string[] = []
      for await (const e of view.events()) types.push(e.type)
      expect(report.outcome).toEqual({ firstSeq: 1, lastSeq: 2 })
      expect(viewReport.errors).toEqual([])
      if (key === 'proxyView') {
        // A Proxy of plain data is plain data read through it: it crosses as its JSON copy.
        expect(report.writerFault).toBeUndefined()
        expect(viewReport.fault).toBeUndefined()
        expect(view.projections.get(key as never)).toEqual({ a: 1 })
      } else {
        expect(report.writerFault).toBe('corrupt')
        expect(viewReport.fault).toBe('corrupt')
      }
      expect(types).toEqual(['app/a', type, 'turn/start'])
      expect(await session.append([{ type: 'app/b' }])).toEqual({ firstSeq: 3, lastSeq: 3 })
      stop()
      await session.close()
    } finally {
      await store.close()
    }
  })
})
