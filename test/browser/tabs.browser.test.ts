// Contract: §6 client API — one writer per session across tabs, freed when its worker dies; observers follow (docs/CONTRACT.md)
// Many tabs of one origin on one store, in real Chromium: each store below has its own module
// Web Worker, as each tab would (same origin, same IndexedDB or origin private file system,
// same Web Locks and channels).
import { describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { appendThatKillsTheWorker, expectCode } from '../support/helpers'

let n = 0
const db = () => `tabs-${Date.now()}-${n++}`

async function until(check: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 2))) {
    if (Date.now() > end) throw new Error('condition not reached')
  }
}

for (const storage of ['indexeddb', 'opfs'] as const) {
  describe(`many tabs (Chromium, ${storage})`, () => {
    it('one writer per session across tabs; the lock frees when the writer closes', async () => {
      const name = db()
      const [a, b] = await Promise.all([openStore({ name, storage }), openStore({ name, storage })]) // two tabs at the same moment
      const s = await a.createSession({ id: 'w' })
      await expectCode(b.openSession('w'), 'SESSION_LOCKED')
      await expectCode(b.deleteSession('w'), 'SESSION_LOCKED')
      await s.append({ type: 'app/a' })
      await a.close()
      const again = await b.openSession('w') // the first tab is gone: its lock with it
      expect((await again.append({ type: 'app/b' })).firstSeq).toBe(1) // it caught up before writing
      await b.close()
    })

    it('the lock frees when the writer’s worker dies without a word', async () => {
      const name = db()
      const a = await openStore({ name, storage, workerUrl: new URL('./dying-worker.ts', import.meta.url) })
      const b = await openStore({ name, storage })
      const s = await a.createSession({ id: 'crash' })
      await s.append({ type: 'app/before' })
      await expectCode(b.openSession('crash'), 'SESSION_LOCKED')
      await appendThatKillsTheWorker(s)
      let reopened
      for (const end = Date.now() + 5000; !reopened && Date.now() < end; ) {
        reopened = await b.openSession('crash').catch(() => undefined)
        if (!reopened) await new Promise((r) => setTimeout(r, 20))
      }
      expect(reopened).toBeDefined()
      await a.close().catch(() => {})
      await b.close()
    })

    it('an observer in another tab sees an append within 100 ms, without polling', async () => {
      const name = db()
      const a = await openStore({ name, storage })
      const b = await openStore({ name, storage })
      const writer = await a.createSession({ id: 'live' })
      const view = await b.observe('live')
      const seen: { turns: number; at: number }[] = []
      view.projections.subscribe('subagentTiming', (t) => seen.push({ turns: t?.turns ?? -1, at: performance.now() }))
      const lags: number[] = []
      for (let i = 1; i <= 10; i++) {
        const t0 = performance.now()
        await writer.append([{ type: 'turn/start' }, { type: 'turn/end' }])
        await until(() => seen.at(-1)?.turns === i, 2000)
        lags.push(seen.at(-1)!.at - t0)
      }
      lags.sort((x, y) => x - y)
      console.log(`cross-tab append-to-subscriber lag, ms: median ${lags[5]!.toFixed(1)}, max ${lags[9]!.toFixed(1)}`)
      expect(lags[5]).toBeLessThan(100)
      expect(view.projections.get('subagentTiming')).toEqual(writer.projections.get('subagentTiming'))
      await a.close()
      await b.close()
    })

    it('listChildren in one tab shows a child open in another tab as running', async () => {
      const name = db()
      const a = await openStore({ name, storage })
      const b = await openStore({ name, storage })
      const parent = await a.createSession({ id: 'p' })
      const kid = await parent.spawn({ mode: 'one-shot', label: 'k' })
      const view = await b.observe('p')
      expect((await view.listChildren())[0]).toMatchObject({ id: kid.id, activity: 'running' })
      await kid.close()
      expect((await view.listChildren())[0]).toMatchObject({ id: kid.id, activity: 'inactive' })
      await a.close()
      await b.close()
    })
  })
}

// A browser's engine does not carry the Durable Streams code (src/engine/streams-lazy.ts).
describe('Durable Streams (Chromium)', () => {
  it('serves no Durable Streams (Node serves them): follow ends in error STORAGE_UNAVAILABLE, fetching nothing; the store carries on', async () => {
    for (const worker of [true, false]) {
      const store = await openStore({ name: db(), worker })
      let fetched = 0
      const follow = store.follow('http://127.0.0.1:9/v1/stream/x', {
        fetch: async () => {
          fetched++
          return new Response(null, { status: 500 })
        },
      })
      await until(() => follow.status === 'error')
      expect(follow.state.error?.code).toBe('STORAGE_UNAVAILABLE')
      expect(fetched).toBe(0)
      await follow.close()
      const s = await store.createSession({ id: 'after' })
      expect((await s.append({ type: 'app/a' })).firstSeq).toBe(0)
      await store.close()
    }
  })
})
