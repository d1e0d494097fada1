// Contract: §19 app events — an append whose definition's schema throws is INVALID_ARGUMENT; an event whose up fails or gives what is not plain JSON is read as stored (docs/CONTRACT.md)
// App event definitions that misbehave: a schema whose refine throws or is async (the append was
// refused with an untyped Error), and upcasters (`up`) that return a function, a promise or an
// undefined field (a session's events() failed whole, untyped in a worker). Both worker modes.
// (Found by an audit.)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
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
const show = (x: unknown) => (x instanceof Error ? `${x.constructor.name}(${(x as { code?: string }).code}): ${x.message}` : JSON.stringify(x))
const settle = async (p: Promise<unknown>) => {
  try {
    return show(await p)
  } catch (e) {
    return show(e)
  }
}

describe.each(['worker', 'inThread'] as const)('%s', (mode) => {
  it.each(['x/refine-throws', 'x/async-schema'])('an append of %s whose schema check throws is INVALID_ARGUMENT', async (type) => {
    const store = await MODES[mode]()
    try {
      const session = await store.createSession({ id: 's' })
      const outcome = await settle(session.append([{ type, data: { a: 1 } }]))
      console.log(mode, type, outcome)
      const after = await settle(session.append([{ type: 'app/b' }]))
      console.log(mode, type, 'next append', after)
      expect(outcome).toMatch(/^SessionfoldError\(INVALID_ARGUMENT\)/)
      expect(after).toBe('{"firstSeq":0,"lastSeq":0}')
      await session.close()
    } finally {
      await store.close()
    }
  })

  it.each(['x/up-fn', 'x/up-undef', 'x/up-promise'])('an old %s event whose up returns non-JSON is read without breaking the store', async (type) => {
    // Written as version 1 by a store that has no definition of it.
    const plain = await openStore({ storage: 'fs', dir, worker: false })
    const w = await plain.createSession({ id: 's' })
    await w.append([
      { type, data: { a: 1 } },
      { type: 'turn/start', data: {} },
    ])
    await w.close()
    await plain.close()
    const store = await MODES[mode]()
    try {
      let read: unknown
      try {
        const view = await store.observe('s')
        const got: unknown[] = []
        for await (const e of view.events()) got.push(e)
        read = { got, faults: view.projections.snapshot().faults }
      } catch (err) {
        read = err
      }
      console.log(mode, type, 'events():', show(read))
      const other = await settle(store.createSession({ id: 'other' }).then((s) => s.append([{ type: 'app/x' }])))
      console.log(mode, type, 'another session afterwards:', other)
      expect(read).not.toBeInstanceOf(Error)
      expect(other).toBe('{"firstSeq":0,"lastSeq":0}')
    } finally {
      await store.close()
    }
  })
})
