// Client: sessionfold/react — useChildren over §5 listChildren, re-listed on subagentCatalog changes, in react-dom + happy-dom
// @vitest-environment happy-dom
// useChildren on a real store (memory, engine in this thread): lists, lists again when a child
// is spawned (recursive: grandchildren too), keeps one listing on its way at a time, never lets
// an older listing replace a newer one (a listing of a handle left behind, of an unmounted
// component), surfaces errors, and leaves nothing subscribed after unmount. Also renders the
// guide's example component (docs/guide/browser.md).
import { createElement as h } from 'react'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { SessionfoldError, openStore, type Session, type SessionView, type Store, type SubagentListEntry } from 'sessionfold'
import { useChildren, type ChildrenResult, type UseChildrenOptions } from 'sessionfold/react'
import { SessionPage } from '../../examples/react/session-panel'
import { catchReactWarnings, countSubscriptions, mount, probe, settle } from '../support/react-dom'

type Props = { view: SessionView | null; options?: UseChildrenOptions }
const labels = (r: ChildrenResult) =>
  r.error
    ? `error ${r.error.code}`
    : r.children === undefined
      ? 'none'
      : r.children.map((c) => `${'.'.repeat(c.depth)}${c.kind === 'child' ? c.label : c.reason}`).join(' ') || 'empty'
const childrenProbe = () => probe(({ view, options }: Props) => useChildren(view, options), labels)

/** A promise and the functions that settle it. */
function deferred<T = void>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * Holds each listChildren answer of `view` until the test releases it; counts the calls, the
 * listings on their way at once, and keeps each call's options (their signal).
 */
function holdListings(view: SessionView) {
  const list = view.listChildren.bind(view)
  const held = { calls: [] as { options: Parameters<SessionView['listChildren']>[0]; release: () => void }[], onTheirWay: 0, most: 0 }
  vi.spyOn(view, 'listChildren').mockImplementation(async (options) => {
    const gate = deferred()
    held.calls.push({ options, release: gate.resolve })
    held.most = Math.max(held.most, ++held.onTheirWay)
    try {
      const rows = await list(options) // the answer as of the call...
      await gate.promise // ...delivered when released
      return rows
    } finally {
      held.onTheirWay--
    }
  })
  return held
}

let store: Store
let root: Session
let warnings: ReturnType<typeof catchReactWarnings>
beforeEach(async () => {
  warnings = catchReactWarnings()
  store = await openStore({ storage: 'memory', worker: false })
  root = await store.createSession({ id: 'root' })
})
afterEach(async () => {
  await store.close()
  const calls = warnings.calls()
  vi.restoreAllMocks()
  expect(calls).toEqual([])
})

/** Waits (at most 5 s) for the mounted text to become `text`. */
async function waitText(ui: { text(): string }, text: string): Promise<void> {
  for (const end = Date.now() + 5000; ui.text() !== text; await settle()) if (Date.now() > end) expect(ui.text()).toBe(text)
}

describe('useChildren', () => {
  it('lists the children, loading first, and lists again when a child is spawned', async () => {
    await root.spawn({ mode: 'continuable', label: 'planner' })
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }))
    expect(seen.values[0]).toMatchObject({ children: undefined, error: undefined, loading: true })
    await settle()
    expect(ui.text()).toBe('planner')
    expect(seen.values.at(-1)).toMatchObject({ loading: false, error: undefined })
    const rows = seen.values.at(-1)!.children!
    expect(rows[0]).toMatchObject({ kind: 'child', depth: 0, mode: 'continuable', parentId: 'root', activity: 'running' })
    await settle(() => root.spawn({ mode: 'one-shot', label: 'coder' }))
    expect(ui.text()).toBe('planner coder')
    await settle(() => root.recordExternal({ childId: 'ext-1', label: 'remote' }))
    expect(ui.text()).toBe('planner coder remote')
    await ui.unmount()
  })

  it('recursive: lists grandchildren (pre-order, with depth), and lists again when the root catalog changes', async () => {
    const planner = await root.spawn({ mode: 'continuable', label: 'planner' })
    await planner.spawn({ mode: 'one-shot', label: 'coder' })
    const flat = childrenProbe()
    const deep = childrenProbe()
    const ui = await mount(h('div', null, h(flat.Probe, { view: root }), h('i', null, '|'), h(deep.Probe, { view: root, options: { recursive: true } })))
    await waitText(ui, 'planner|planner .coder')
    await settle(() => root.spawn({ mode: 'one-shot', label: 'tester' }))
    await waitText(ui, 'planner tester|planner .coder tester')
    // A grandchild is not in the root's catalog: the recursive tree is live (watchChildren), so
    // it shows without refresh(), and so does a great-grandchild.
    const reviewer = await planner.spawn({ mode: 'one-shot', label: 'reviewer' })
    await waitText(ui, 'planner tester|planner .coder .reviewer tester')
    await reviewer.spawn({ mode: 'one-shot', label: 'linter' })
    await waitText(ui, 'planner tester|planner .coder .reviewer ..linter tester')
    await settle(() => root.spawn({ mode: 'one-shot', label: 'docs' }))
    await waitText(ui, 'planner tester docs|planner .coder .reviewer ..linter tester docs')
    // A child closed for writing shows as inactive in the tree.
    const activity = () =>
      deep.seen.values
        .at(-1)!
        .children!.map((c) => (c.kind === 'child' ? c.activity[0] : '-'))
        .join('')
    expect(activity()).toBe('rrrrrr')
    await reviewer.close()
    for (const end = Date.now() + 5000; activity() !== 'rrirrr'; await settle()) if (Date.now() > end) throw new Error(`activity ${activity()}`)
    await ui.unmount()
  })

  it('in StrictMode (double mount): one catalog subscription, the right listing, nothing left after unmount', async () => {
    await root.spawn({ mode: 'continuable', label: 'planner' })
    const subs = countSubscriptions(root.projections)
    const { Probe } = childrenProbe()
    const ui = await mount(h(Probe, { view: root, options: { recursive: true } }), { strict: true })
    await waitText(ui, 'planner')
    // The first mount's watch was stopped before it subscribed (it loads on first use), or after.
    expect(subs.made).toBeGreaterThanOrEqual(1)
    expect(subs.live).toBe(1)
    await settle(() => root.spawn({ mode: 'one-shot', label: 'coder' }))
    await waitText(ui, 'planner coder')
    await ui.unmount()
    for (const end = Date.now() + 5000; subs.live !== 0; await settle()) if (Date.now() > end) expect(subs.live).toBe(0)
  })

  it("in StrictMode, the first mount's listing (aborted) never lands, before or after the second", async () => {
    await root.spawn({ mode: 'continuable', label: 'planner' })
    const held = holdListings(root)
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }), { strict: true })
    await settle()
    expect(held.calls).toHaveLength(2)
    expect(held.calls.map((c) => c.options?.signal?.aborted)).toEqual([true, false])
    await settle(async () => held.calls[0]!.release())
    expect(ui.text()).toBe('none')
    await settle(async () => held.calls[1]!.release())
    expect(ui.text()).toBe('planner')
    expect(seen.values.every((v) => v.error === undefined)).toBe(true)
    await ui.unmount()
  })

  it('keeps one listing on its way at a time: changes meanwhile fold into one more listing, answers land in order', async () => {
    const held = holdListings(root)
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }))
    await settle()
    expect(held.calls).toHaveLength(1)
    // Three spawns while the first listing (of no children) is held.
    await settle(async () => {
      await root.spawn({ mode: 'one-shot', label: 'a' })
      await root.spawn({ mode: 'one-shot', label: 'b' })
      await root.spawn({ mode: 'one-shot', label: 'c' })
    })
    expect(held.calls).toHaveLength(1)
    expect(ui.text()).toBe('none')
    await settle(async () => held.calls[0]!.release())
    expect(ui.text()).toBe('empty') // what it listed, as of its call
    expect(seen.values.at(-1)!.loading).toBe(true) // and one more is on its way
    expect(held.calls).toHaveLength(2)
    await settle(async () => held.calls[1]!.release())
    expect(ui.text()).toBe('a b c')
    expect(seen.values.at(-1)!.loading).toBe(false)
    expect(held.calls).toHaveLength(2)
    expect(held.most).toBe(1)
    await ui.unmount()
  })

  it('a listing of a handle left behind never replaces the newer one, and is aborted', async () => {
    await root.spawn({ mode: 'one-shot', label: 'old' })
    const other = await store.createSession({ id: 'other' })
    await other.spawn({ mode: 'one-shot', label: 'new' })
    const held = holdListings(root)
    const { Probe } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }))
    await settle()
    expect(held.calls).toHaveLength(1)
    await ui.rerender(h(Probe, { view: other }))
    await settle()
    expect(ui.text()).toBe('new')
    expect(held.calls[0]!.options?.signal?.aborted).toBe(true)
    await settle(async () => held.calls[0]!.release()) // the old answer lands last
    expect(ui.text()).toBe('new')
    // The same when `recursive` changes: a new listing, the old one dropped.
    const heldOther = holdListings(other)
    await ui.rerender(h(Probe, { view: other, options: { recursive: true } }))
    await settle()
    await ui.rerender(h(Probe, { view: other }))
    await settle(async () => heldOther.calls[1]!.release())
    await settle(async () => heldOther.calls[0]!.release())
    expect(heldOther.calls.map((c) => c.options?.recursive)).toEqual([true, undefined])
    expect(ui.text()).toBe('new')
    await ui.unmount()
  })

  it('after unmount: the listing on its way is aborted, nothing renders, nothing is subscribed', async () => {
    const subs = countSubscriptions(root.projections)
    const held = holdListings(root)
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }))
    await settle()
    await ui.unmount()
    expect(subs.live).toBe(0)
    expect(held.calls[0]!.options?.signal?.aborted).toBe(true)
    const renders = seen.renders
    await settle(async () => held.calls[0]!.release())
    await settle(() => root.spawn({ mode: 'one-shot', label: 'late' }))
    expect(seen.renders).toBe(renders)
    expect(held.calls).toHaveLength(1) // no listing for a spawn after unmount
  })

  it('reports a failed listing in `error`, keeps the last children, and clears it at the next listing', async () => {
    await root.spawn({ mode: 'one-shot', label: 'a' })
    const list = root.listChildren.bind(root)
    let fail = false
    vi.spyOn(root, 'listChildren').mockImplementation((options) =>
      fail ? Promise.reject(new SessionfoldError('STORAGE_UNAVAILABLE', 'the disk went away')) : list(options),
    )
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }))
    await settle()
    expect(ui.text()).toBe('a')
    fail = true
    await settle(async () => seen.values.at(-1)!.refresh())
    expect(ui.text()).toBe('error STORAGE_UNAVAILABLE')
    expect(seen.values.at(-1)!.children?.map((c) => c.id)).toHaveLength(1)
    fail = false
    await settle(() => root.spawn({ mode: 'one-shot', label: 'b' }))
    expect(ui.text()).toBe('a b')
    await ui.unmount()
  })

  it('bad options fail the listing with INVALID_ARGUMENT (unknown key, wrong type), writing nothing', async () => {
    const before = root.projections.snapshot()
    const { Probe } = childrenProbe()
    const ui = await mount(
      h(
        'div',
        null,
        h(Probe, { view: root, options: { recursiv: true } as UseChildrenOptions }),
        h(Probe, { view: root, options: { recursive: 'yes' } as unknown as UseChildrenOptions }),
      ),
    )
    await settle()
    expect(ui.text()).toBe('error INVALID_ARGUMENTerror INVALID_ARGUMENT')
    expect(root.projections.snapshot()).toBe(before)
    expect(await store.listSessions()).toHaveLength(1)
    await ui.unmount()
  })

  it('a null handle lists nothing and is not loading', async () => {
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: null }))
    await settle()
    expect(seen.values.at(-1)).toMatchObject({ children: undefined, error: undefined, loading: false })
    await ui.rerender(h(Probe, { view: root }))
    await settle()
    expect(ui.text()).toBe('empty')
    await ui.unmount()
  })

  it('keeps the same children array when a new listing has the same rows', async () => {
    await root.spawn({ mode: 'one-shot', label: 'a' })
    const { Probe, seen } = childrenProbe()
    const ui = await mount(h(Probe, { view: root }))
    await settle()
    const first = seen.values.at(-1)!.children as SubagentListEntry[]
    await settle(async () => seen.values.at(-1)!.refresh())
    expect(seen.values.at(-1)!.children).toBe(first)
    await ui.unmount()
  })
})

describe("the guide's example (examples/react/session-panel.ts)", () => {
  it('opens a session, shows its turns and tree live, and closes the handle on unmount', async () => {
    const planner = await root.spawn({ mode: 'continuable', label: 'planner' })
    const observe = store.observe.bind(store)
    const closes: ReturnType<typeof vi.fn>[] = []
    vi.spyOn(store, 'observe').mockImplementation(async (id) => {
      const view = await observe(id)
      closes.push(vi.spyOn(view, 'close') as unknown as ReturnType<typeof vi.fn>)
      return view
    })
    const ui = await mount(h(SessionPage, { store, id: 'root' }), { strict: true })
    await settle()
    expect(ui.text()).toBe('0 turnsplanner (continuable, running)')
    await settle(async () => {
      await root.append({ type: 'turn/start' })
      await planner.spawn({ mode: 'one-shot', label: 'coder' })
      await root.spawn({ mode: 'one-shot', label: 'tester' })
    })
    expect(ui.text()).toBe('1 turns, runningplanner (continuable, running)coder (one-shot, running)tester (one-shot, running)')
    expect([...ui.container.querySelectorAll('li')].map((li) => li.style.marginLeft)).toEqual(['0em', '1em', '0em'])
    expect(closes.map((c) => c.mock.calls.length)).toEqual([1, 0]) // StrictMode's first mount closed its own
    await ui.unmount()
    await settle()
    expect(closes.map((c) => c.mock.calls.length)).toEqual([1, 1])
  })

  it('shows why a session cannot be opened', async () => {
    const ui = await mount(h(SessionPage, { store, id: 'missing' }))
    await settle()
    expect(ui.container.querySelector('[role=alert]')?.textContent).toMatch(/missing/)
    await ui.unmount()
  })
})
