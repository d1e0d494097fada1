// Client: bind, bindText, bindList — the DOM binding over §6 subscribe, in happy-dom
// @vitest-environment happy-dom
// The DOM binding (src/client/dom.ts) on a real store (memory, engine in this thread), in happy-dom.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bind, bindList, bindText, openStore, type Session, type Store, type TimingView } from 'sessionfold'

const settle = () => new Promise((r) => setTimeout(r, 25)) // past the mirror's 5 ms batching

let store: Store
let session: Session
beforeEach(async () => {
  store = await openStore({ storage: 'memory', worker: false })
  session = await store.createSession({ id: 'dom' })
})
afterEach(async () => {
  await store.close()
})

const timingText = (t: TimingView | null) => `${t?.turns ?? 0} turns${t?.runningSince != null ? ', running' : ''}`

describe('bind / bindText / bindList (happy-dom)', () => {
  it('runs in a DOM', () => {
    expect(typeof document.createElement).toBe('function')
  })

  it('renders the current value at once, synchronously', () => {
    const el = document.createElement('span')
    const seen: unknown[] = []
    const stopText = bindText(el, session, 'subagentTiming', timingText)
    const stop = bind(session, 'subagentCatalog', (v, meta) => seen.push([v, meta.seq]))
    expect(el.textContent).toBe('0 turns')
    expect(seen).toEqual([[[], -1]])
    stopText()
    stop()
  })

  it('re-renders when the value changes (append, spawn)', async () => {
    const el = document.createElement('span')
    const ul = document.createElement('ul')
    const stopText = bindText(el, session, 'subagentTiming', timingText)
    const stopList = bindList(ul, session, 'subagentCatalog', (c) => {
      const li = document.createElement('li')
      li.textContent = `${c.label ?? c.id} (${c.mode})`
      return li
    })
    await session.append({ type: 'turn/start' })
    await settle()
    expect(el.textContent).toBe('1 turns, running')
    await session.spawn({ mode: 'continuable', label: 'researcher' })
    await session.spawn({ mode: 'one-shot' })
    await settle()
    expect([...ul.children].map((li) => li.textContent)).toEqual(['researcher (continuable)', expect.stringMatching(/ \(one-shot\)$/)])
    await session.append({ type: 'turn/end' })
    await settle()
    expect(el.textContent).toBe('1 turns')
    stopText()
    stopList()
  })

  it('stops updating after unbind (also a notification already scheduled)', async () => {
    const el = document.createElement('span')
    let calls = 0
    const stopText = bindText(el, session, 'subagentTiming', timingText)
    const stop = bind(session, 'subagentTiming', () => void calls++)
    expect(calls).toBe(1)
    const appended = session.append({ type: 'turn/start' })
    stopText()
    stop()
    stop() // idempotent
    await appended
    await session.append({ type: 'turn/end' })
    await settle()
    expect(calls).toBe(1)
    expect(el.textContent).toBe('0 turns')
    expect(session.projections.get('subagentTiming')?.turns).toBe(1) // the store did move on
  })

  it('does not re-render when the value did not change', async () => {
    let catalogRenders = 0
    let timingRenders = 0
    const el = document.createElement('span')
    const writes: string[] = []
    new MutationObserver((records) => writes.push(...records.map((r) => r.type))).observe(el, { childList: true, characterData: true, subtree: true })
    const stops = [
      bind(session, 'subagentCatalog', () => void catalogRenders++),
      bind(session, 'subagentTiming', () => void timingRenders++),
      bindText(el, session, 'subagentTiming', (t) => (t && t.turns > 0 ? 'busy' : 'idle')),
    ]
    await settle()
    writes.length = 0
    // Events no unit folds: nothing changes.
    await session.append([{ type: 'app/note', data: { text: 'hello' } }, { type: 'app/note' }])
    await settle()
    expect([catalogRenders, timingRenders]).toEqual([1, 1])
    // The timing changes, the catalog does not.
    await session.append({ type: 'turn/start' })
    await settle()
    expect([catalogRenders, timingRenders]).toEqual([1, 2])
    expect(el.textContent).toBe('busy')
    writes.length = 0
    await session.append({ type: 'turn/end' })
    await settle()
    expect(timingRenders).toBe(3)
    expect(el.textContent).toBe('busy')
    expect(writes).toEqual([]) // same text: the DOM was not touched
    for (const stop of stops) stop()
  })

  it('renders once more with meta.error when the store closes', async () => {
    const errors: (string | undefined)[] = []
    const stop = bind(session, 'subagentTiming', (_v, meta) => errors.push(meta.error?.code))
    await store.close()
    await settle()
    expect(errors).toEqual([undefined, 'CLOSED'])
    stop()
  })
})
