// Client: sessionfold/react — useSessions over §14 store.sessions, in react-dom + happy-dom
// @vitest-environment happy-dom
// useSessions on a real store (memory, engine in this thread): the rows live as sessions are
// made, written, retitled and deleted; one list in StrictMode and none after unmount; no render
// for a change that leaves the rows as they were; a new list when the query's content changes
// (not its identity); bad queries in `error`; null store.
import { createElement as h } from 'react'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { openStore, type SessionQuery, type Store } from 'sessionfold'
import { useSessions, type SessionsResult } from 'sessionfold/react'
import { catchReactWarnings, mount, probe, settle, until } from '../support/react-dom'

type Props = { store: Store | null; query?: SessionQuery }
const show = (r: SessionsResult) => (r.error ? `error ${r.error.code}` : r.loading ? 'loading' : r.items.map((s) => s.title ?? s.id).join(' ') || 'empty')
const sessionsProbe = () => probe(({ store, query }: Props) => useSessions(store, query), show)

/** Counts the lists `store.sessions` made and those still open. */
function countLists(store: Store) {
  const made = store.sessions.bind(store)
  const counts = { made: 0, open: 0 }
  vi.spyOn(store, 'sessions').mockImplementation((query) => {
    const list = made(query)
    counts.made++
    counts.open++
    const close = list.close.bind(list)
    list.close = () => {
      counts.open--
      close()
    }
    return list
  })
  return counts
}

let store: Store
let warnings: ReturnType<typeof catchReactWarnings>
beforeEach(async () => {
  warnings = catchReactWarnings()
  store = await openStore({ storage: 'memory', worker: false })
})
afterEach(async () => {
  await store.close()
  const calls = warnings.calls()
  vi.restoreAllMocks()
  expect(calls).toEqual([])
})

describe('useSessions', () => {
  it('shows the list live: a session made, written, retitled, deleted', async () => {
    const a = await store.createSession({ id: 'a', title: 'Alpha' })
    const { Probe, seen } = sessionsProbe()
    const ui = await mount(h(Probe, { store }))
    expect(seen.values[0]).toMatchObject({ items: [], loading: true, error: undefined })
    await until(() => ui.text() === 'Alpha')
    const b = await store.createSession({ id: 'b', title: 'Beta' })
    await until(() => ui.text() === 'Beta Alpha')
    await a.append({ type: 'app/x' })
    await until(() => ui.text() === 'Alpha Beta')
    await b.setMeta({ title: 'Bravo' })
    await until(() => ui.text() === 'Bravo Alpha')
    await b.close()
    await store.deleteSession('b')
    await until(() => ui.text() === 'Alpha')
    await a.close()
    await ui.unmount()
  })

  it('in StrictMode: one list open, the right rows, none left after unmount', async () => {
    await store.createSession({ id: 'a', title: 'Alpha' })
    const lists = countLists(store)
    const { Probe } = sessionsProbe()
    const ui = await mount(h(Probe, { store, query: { limit: 10 } }), { strict: true })
    await until(() => ui.text() === 'Alpha')
    expect(lists.made).toBeGreaterThanOrEqual(1)
    expect(lists.open).toBe(1)
    await ui.unmount()
    expect(lists.open).toBe(0)
  })

  it('does not render for a change that leaves the rows as they were; a query of the same content keeps its list', async () => {
    const a = await store.createSession({ id: 'a', title: 'Alpha' })
    const lists = countLists(store)
    const { Probe, seen } = sessionsProbe()
    const ui = await mount(h(Probe, { store, query: { tag: 'none-has-it' } }))
    await until(() => ui.text() === 'empty')
    const renders = seen.renders
    // Sessions the query leaves out change: the rows stay [], nothing renders.
    await a.append({ type: 'app/x' })
    const child = await a.spawn({ mode: 'one-shot', id: 'kid' })
    await child.append({ type: 'app/y' })
    await settle(undefined, 300)
    expect(seen.renders).toBe(renders)
    // A new query object of the same content: the same list, no new one.
    await ui.rerender(h(Probe, { store, query: { tag: 'none-has-it' } }))
    expect(lists.made).toBe(1)
    // Another query: a new list, the old one closed.
    await ui.rerender(h(Probe, { store, query: { search: 'alp' } }))
    await until(() => ui.text() === 'Alpha')
    expect(lists.made).toBe(2)
    expect(lists.open).toBe(1)
    await child.close()
    await a.close()
    await ui.unmount()
  })

  it('pages with more(), reports a bad query in error, and lists nothing for a null store', async () => {
    for (let i = 0; i < 5; i++) await (await store.createSession({ id: `s${i}`, title: `S${i}` })).close()
    const { Probe, seen } = sessionsProbe()
    const ui = await mount(h(Probe, { store, query: { limit: 2 } }))
    await until(() => ui.text() === 'S4 S3')
    expect(seen.values.at(-1)!.hasMore).toBe(true)
    await settle(() => seen.values.at(-1)!.more())
    await until(() => ui.text() === 'S4 S3 S2 S1')
    await ui.rerender(h(Probe, { store, query: { limit: 0 } }))
    await until(() => ui.text() === 'error INVALID_ARGUMENT')
    await ui.rerender(h(Probe, { store: null }))
    expect(ui.text()).toBe('empty')
    expect(seen.values.at(-1)!.loading).toBe(false)
    await ui.unmount()
  })
})
