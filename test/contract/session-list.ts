// Contract: §14 the session list (store.sessions) — run by the client suite in every worker mode
// and on every backend (test/contract/client.ts calls it).
import { expect, it } from 'vitest'
import type { OpenStoreOptions, SessionSummary, Store } from 'sessionfold'
import { openStore } from 'sessionfold'

/** Waits (at most 5 s) for a condition that a push will make true. */
async function until(check: () => boolean, what = 'condition'): Promise<void> {
  for (const end = Date.now() + 5000; !check(); await new Promise((r) => setTimeout(r, 2))) {
    if (Date.now() > end) throw new Error(`${what} not reached in 5 s`)
  }
}

const ids = (items: readonly SessionSummary[]) => items.map((s) => s.id)

export function sessionListCases(withStore: (fn: (store: Store) => Promise<void>) => () => Promise<void>, options: () => OpenStoreOptions): void {
  it(
    'lists sessions live (§14, store.sessions): sorted by activity or creation, filtered, paged, with titles and running',
    withStore(async (store) => {
      const a = await store.createSession({ id: 'a', title: 'Alpha plan', tags: ['work'] })
      await new Promise((r) => setTimeout(r, 5))
      const b = await store.createSession({ id: 'b', title: 'Beta', tags: ['home'] })
      await new Promise((r) => setTimeout(r, 5))
      const c = await store.createSession({ id: 'c' })
      const child = await a.spawn({ mode: 'one-shot', id: 'a-child', title: 'helper' })
      const list = store.sessions()
      const heard: SessionSummary[][] = []
      list.subscribe((items) => heard.push(items))
      await until(() => list.loaded)
      // Roots only by default, most recent activity first (a's spawn is its latest event).
      expect(ids(list.items)).toEqual(['a', 'c', 'b'])
      expect(list.items[0]).toMatchObject({ id: 'a', origin: 'root', parent: null, title: 'Alpha plan', tags: ['work'], running: true })
      expect(list.items[0]!.length).toBe(2) // its meta event and its spawn
      expect(list.items[2]).toMatchObject({ id: 'b', title: 'Beta', length: 1 })
      expect(heard.length).toBeGreaterThanOrEqual(1)
      // An append moves its session to the top, a metadata change shows.
      await b.append({ type: 'app/x' })
      await until(() => ids(list.items).join() === 'b,a,c', 'b on top')
      await c.setMeta({ title: 'Gamma', tags: ['work'] })
      await until(() => list.items[0]?.id === 'c' && list.items[0]?.title === 'Gamma', 'c retitled')
      // Closing a writer shows running: false.
      await c.close()
      await until(() => list.items.find((s) => s.id === 'c')?.running === false, 'c not running')

      // Queries: all sessions, by creation, by tag, by title text, paged.
      const all = store.sessions({ roots: false, order: 'created' })
      await until(() => all.loaded)
      expect(ids(all.items)).toEqual(['a-child', 'c', 'b', 'a'])
      expect(all.items[0]).toMatchObject({ origin: 'subagent', parent: 'a', title: 'helper' })
      const work = store.sessions({ tag: 'work' })
      const search = store.sessions({ search: 'ALPHA' })
      await until(() => work.loaded && search.loaded)
      expect(ids(work.items)).toEqual(['c', 'a'])
      expect(ids(search.items)).toEqual(['a'])
      const paged = store.sessions({ limit: 2 })
      await until(() => paged.loaded)
      expect(ids(paged.items)).toEqual(['c', 'b'])
      expect(paged.hasMore).toBe(true)
      await paged.more()
      expect(ids(paged.items)).toEqual(['c', 'b', 'a'])
      expect(paged.hasMore).toBe(false)

      // A delete leaves every list.
      await b.close()
      await store.deleteSession('b')
      await until(() => !ids(list.items).includes('b') && !ids(all.items).includes('b'), 'b gone')
      // A new session appears.
      const d = await store.createSession({ id: 'd', title: 'Delta' })
      await until(() => list.items[0]?.id === 'd', 'd on top')

      // Closed: no more calls to its listeners.
      const count = heard.length
      list.close()
      await d.append({ type: 'app/y' })
      await new Promise((r) => setTimeout(r, 150))
      expect(heard.length).toBe(count)
      for (const l of [all, work, search, paged]) l.close()
      for (const s of [a, child, d]) await s.close()

      // Bad queries: INVALID_ARGUMENT at once.
      for (const bad of [{ limit: 0 }, { limit: 1001 }, { order: 'name' }, { roots: 'yes' }, { tag: '' }, { extra: 1 }, 'x'])
        expect(() => store.sessions(bad as never)).toThrowError(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }),
  )

  it('a session list sees another store on the same storage, and ends with the store (CLOSED)', async () => {
    const opts = options()
    const one = await openStore(opts)
    try {
      const list = one.sessions({ roots: false })
      const ends: (string | undefined)[] = []
      list.subscribe((_items, meta) => ends.push(meta.error?.code))
      await until(() => list.loaded)
      expect(list.items).toEqual([])
      // A second store on the same storage (fake-indexeddb in a Node worker is that worker's own).
      const shared = opts.storage !== 'memory' && !(opts.storage === 'indexeddb' && opts.worker === true)
      const two = shared ? await openStore(opts) : undefined
      if (two) {
        const s = await two.createSession({ id: 'elsewhere', title: 'from the other store' })
        await until(() => list.items[0]?.id === 'elsewhere', "the other store's session")
        await s.append({ type: 'app/z' })
        await until(() => list.items[0]?.length === 2, 'its append')
        await s.close()
        await two.close()
      }
      await one.close()
      expect(ends.at(-1)).toBe('CLOSED')
    } finally {
      await one.close()
    }
  })
}
