// Client: sessionfold/react — useProjection and useSnapshot over §6 projections (get/snapshot/subscribe), in react-dom + happy-dom
// @vitest-environment happy-dom
// The hooks render a real store's values (memory, engine in this thread; one test with the
// default worker), re-render on change and only then, survive StrictMode's double mount, and
// leave no subscription behind once unmounted. React's own warnings (an unstable getSnapshot,
// an update outside act) fail the tests.
import { createElement as h } from 'react'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { openStore, type Session, type SessionView, type Store, type TimingView } from 'sessionfold'
import { useChildren, useProjection, useSnapshot } from 'sessionfold/react'
import { catchReactWarnings, countSubscriptions, mount, probe, settle, until } from '../support/react-dom'

type Handle = { view: SessionView | null }
const turns = (t: TimingView | null) => (t ? `${t.turns} turns${t.runningSince !== null ? ', running' : ''}` : 'none')
const timingProbe = () => probe(({ view }: Handle) => useProjection(view, 'subagentTiming'), turns)

let store: Store
let session: Session
let warnings: ReturnType<typeof catchReactWarnings>
beforeEach(async () => {
  warnings = catchReactWarnings()
  store = await openStore({ storage: 'memory', worker: false })
  session = await store.createSession({ id: 'react' })
})
afterEach(async () => {
  await store.close()
  const calls = warnings.calls()
  vi.restoreAllMocks()
  expect(calls).toEqual([])
})

describe('useProjection', () => {
  it('renders the current value at the first render, and each change after', async () => {
    const { Probe, seen } = timingProbe()
    const ui = await mount(h(Probe, { view: session }))
    expect(ui.text()).toBe('0 turns')
    expect(seen.renders).toBe(1)
    await settle(() => session.append({ type: 'turn/start' }))
    expect(ui.text()).toBe('1 turns, running')
    await settle(() => session.append({ type: 'turn/end' }))
    expect(ui.text()).toBe('1 turns')
    expect(seen.renders).toBe(3)
    // An observer (another handle) follows the same session's appends.
    const observer = await store.observe('react')
    const other = timingProbe()
    const ui2 = await mount(h(other.Probe, { view: observer }))
    await settle(() => session.append([{ type: 'turn/start' }, { type: 'turn/end' }]))
    expect(ui2.text()).toBe('2 turns')
    await ui.unmount()
    await ui2.unmount()
  })

  it('does not render when an append leaves the watched value as it was', async () => {
    const { Probe, seen } = timingProbe()
    const whole = probe(
      ({ view }: Handle) => useSnapshot(view),
      (s) => `seq ${s?.asOfSeq}`,
    )
    const ui = await mount(h('div', null, h(Probe, { view: session }), h(whole.Probe, { view: session })))
    expect(seen.renders).toBe(1)
    // Events no built-in unit folds: the timing keeps its identity.
    await settle(() => session.append({ type: 'app/note', data: { text: 'a' } }))
    await settle(() => session.append([{ type: 'app/note' }, { type: 'app/note' }]))
    await settle(() => session.spawn({ mode: 'one-shot' })) // the catalog changes, the timing does not
    expect(seen.renders).toBe(1)
    // The appends did reach the view: the snapshot hook rendered for each of them.
    expect(whole.seen.renders).toBe(4)
    expect(ui.text()).toBe('0 turnsseq 3')
    await settle(() => session.append({ type: 'turn/start' }))
    expect(seen.renders).toBe(2)
    await ui.unmount()
  })

  it('in StrictMode (double mount): one live subscription, the right value, none after unmount', async () => {
    const subs = countSubscriptions(session.projections)
    const { Probe } = timingProbe()
    const ui = await mount(h(Probe, { view: session }), { strict: true })
    expect(subs.made).toBeGreaterThan(1) // StrictMode did subscribe, unsubscribe, subscribe again
    expect(subs.live).toBe(1)
    expect(ui.text()).toBe('0 turns')
    await settle(() => session.append({ type: 'turn/start' }))
    expect(ui.text()).toBe('1 turns, running')
    expect(subs.live).toBe(1)
    await ui.unmount()
    expect(subs.live).toBe(0)
  })

  it('unmount unsubscribes: no subscription remains and nothing renders after it', async () => {
    const subs = countSubscriptions(session.projections)
    const { Probe, seen } = timingProbe()
    const ui = await mount(h(Probe, { view: session }))
    expect(subs.live).toBe(1)
    const appended = session.append({ type: 'turn/start' }) // its notification may be in flight
    await ui.unmount()
    expect(subs.live).toBe(0)
    const renders = seen.renders
    await settle(() => appended)
    await settle(() => session.append([{ type: 'turn/end' }, { type: 'turn/start' }]))
    expect(seen.renders).toBe(renders)
    expect(session.projections.get('subagentTiming')?.turns).toBe(2) // the session did move on
  })

  it('follows the handle it is given: null renders null, a new handle moves the subscription', async () => {
    const subs = countSubscriptions(session.projections)
    await session.append([{ type: 'turn/start' }, { type: 'turn/end' }])
    const other = await store.createSession({ id: 'other' })
    const otherSubs = countSubscriptions(other.projections)
    const { Probe } = timingProbe()
    const ui = await mount(h(Probe, { view: null }))
    expect(ui.text()).toBe('none')
    await ui.rerender(h(Probe, { view: session }))
    expect([ui.text(), subs.live]).toEqual(['1 turns', 1])
    await ui.rerender(h(Probe, { view: other }))
    expect([ui.text(), subs.live, otherSubs.live]).toEqual(['0 turns', 0, 1])
    await settle(() => session.append({ type: 'turn/start' })) // the old handle: nothing to see
    expect(ui.text()).toBe('0 turns')
    await settle(() => other.append({ type: 'turn/start' }))
    expect(ui.text()).toBe('1 turns, running')
    await ui.unmount()
    expect(otherSubs.live).toBe(0)
  })
})

describe('useSnapshot', () => {
  it('renders the whole snapshot, the same object until asOfSeq moves; unsubscribes on unmount', async () => {
    const subs = countSubscriptions(session.projections)
    const { Probe, seen } = probe(
      ({ view }: Handle) => useSnapshot(view),
      (s) => `${s?.asOfSeq}:${s?.values.subagentCatalog?.length}`,
    )
    const ui = await mount(h(Probe, { view: session }), { strict: true })
    expect(ui.text()).toBe('-1:0') // an empty log
    await settle(() => session.spawn({ mode: 'continuable', label: 'planner' }))
    expect(ui.text()).toBe('0:1') // the catalog fact, event 0
    const last = seen.values.at(-1)
    expect(last).toBe(session.projections.snapshot())
    expect(Object.isFrozen(last)).toBe(true)
    expect(subs.live).toBe(1)
    await ui.unmount()
    expect(subs.live).toBe(0)
  })
})

describe('with the default worker (worker_threads)', () => {
  it('renders values pushed across the worker, and children listed there', async () => {
    const remote = await openStore({ storage: 'memory' })
    try {
      const s = await remote.createSession()
      const subs = countSubscriptions(s.projections)
      const { Probe, seen } = timingProbe()
      const kids = probe(
        ({ view }: Handle) => useChildren(view, { recursive: true }),
        (r) => (r.children ?? []).map((c) => c.id).join(','),
      )
      const ui = await mount(h('div', null, h(Probe, { view: s }), h('i', null, '|'), h(kids.Probe, { view: s })), { strict: true })
      expect(ui.text()).toBe('0 turns|')
      await until(
        () => ui.text() === '1 turns, running|',
        () => s.append({ type: 'turn/start' }),
      )
      expect(ui.text()).toBe('1 turns, running|')
      let kid!: Session
      await until(
        () => ui.text().endsWith('|kid'),
        async () => (kid = await s.spawn({ mode: 'one-shot', id: 'kid' })),
      )
      await until(
        () => ui.text().endsWith('|kid,grandkid'),
        () => kid.spawn({ mode: 'one-shot', id: 'grandkid' }).then(() => kids.seen.values.at(-1)!.refresh()),
      )
      expect(ui.text()).toBe('1 turns, running|kid,grandkid')
      const renders = seen.renders
      await settle(() => s.append({ type: 'app/note' }), 50)
      expect(seen.renders).toBe(renders)
      await ui.unmount()
      expect(subs.live).toBe(0)
      await kid.close()
    } finally {
      await remote.close()
    }
  })
})
