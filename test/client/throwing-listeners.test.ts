// Contract: §6 client API — a listener that throws is its own failure: the others hear every change, and nothing escapes as an uncaught error or an unhandled rejection (docs/CONTRACT.md)
// projections.subscribe (by key and whole), sessions().subscribe and watchChildren listeners
// that throw: before, the error escaped from a microtask as an uncaught exception (a Node
// process ends on one) or as an unhandled rejection, and the other listeners missed the change.
// Both worker modes. (Found by an audit.)
import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { until } from '../contract/client'

const uncaught: unknown[] = []
const onUncaught = (err: unknown) => {
  uncaught.push(err)
}
let store: Store | undefined
afterEach(async () => {
  await store?.close()
  store = undefined
  process.off('uncaughtException', onUncaught)
})

describe.each(['worker', 'inThread'] as const)('%s', (mode) => {
  const open = () => openStore({ storage: 'memory', worker: mode === 'worker' })

  it('projections.subscribe(key) listener that throws', async () => {
    // vitest's own handler is still there; ours records what escaped
    process.on('uncaughtException', onUncaught)
    uncaught.length = 0
    store = await open()
    const s = await store.createSession({ id: 's' })
    let sibling = 0
    s.projections.subscribe('subagentTiming', (_v, m) => {
      if (m.seq >= 0) throw new Error('key listener threw')
    })
    s.projections.subscribe('subagentTiming', () => {
      sibling++
    })
    s.projections.subscribe((_s, m) => {
      if (m.seq >= 0) throw new Error('map listener threw')
    })
    await s.append({ type: 'turn/start', data: {} })
    await s.append({ type: 'turn/end', data: {} })
    await new Promise((r) => setTimeout(r, 100))
    console.log(mode, 'key/map listener: sibling calls', sibling, 'escaped:', uncaught.map(String))
    expect(uncaught).toEqual([])
    expect(sibling).toBe(3)
  })

  it('sessions().subscribe listener that throws', async () => {
    process.on('uncaughtException', onUncaught)
    uncaught.length = 0
    store = await open()
    const list = store.sessions()
    let sibling = 0
    list.subscribe(() => {
      throw new Error('list listener threw')
    })
    list.subscribe(() => {
      sibling++
    })
    await store.createSession({ id: 'a' })
    await until(() => list.items.length === 1)
    await new Promise((r) => setTimeout(r, 200))
    console.log(mode, 'sessions listener: sibling calls', sibling, 'escaped:', uncaught.map(String))
    expect(uncaught).toEqual([])
    expect(sibling).toBeGreaterThan(0)
    list.close()
  })

  it('watchChildren listener that throws', async () => {
    process.on('uncaughtException', onUncaught)
    uncaught.length = 0
    store = await open()
    const p = await store.createSession({ id: 'p' })
    let sibling = 0
    const stop1 = p.watchChildren({}, () => {
      throw new Error('children listener threw')
    })
    const stop2 = p.watchChildren({}, () => {
      sibling++
    })
    await p.spawn({ mode: 'one-shot', id: 'c' })
    await new Promise((r) => setTimeout(r, 300))
    console.log(mode, 'children listener: sibling calls', sibling, 'escaped:', uncaught.map(String))
    expect(uncaught).toEqual([])
    stop1()
    stop2()
  })
})
