// Contract: §19 an app's own events — checked where they are appended, read back at the latest version, in real Chromium (docs/CONTRACT.md)
// The chat app of test/fixtures/chat-events.ts on IndexedDB and on OPFS in real Chromium: the
// first version writes in the page (worker: false, IndexedDB), the third reads and writes in
// its own module Web Worker (serveEngine({ events })); an append its definitions refuse is
// INVALID_ARGUMENT with nothing written; every read hands over the latest shape; an event
// newer than the code faults the unit that reads it and is not dropped.
import { describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { eventsOf, expectCode } from '../support/helpers'
import { appV1, appV2 } from '../fixtures/chat-events'

let n = 0
const db = () => `app-events-${Date.now()}-${n++}`
const ownWorker = () => new URL('./chat-v3-worker.ts', import.meta.url)

describe('an app’s events in Chromium', () => {
  it('written by the first version in the page, read and written by the third in its own worker: checked, upcast, stored bytes unchanged', async () => {
    const name = db()
    const v1 = await openStore({ name, worker: false, ...appV1 })
    const s = await v1.createSession({ id: 'chat' })
    await s.append([{ type: 'fixture/message', data: { text: 'hi' } }, { type: 'turn/start' }])
    await expectCode(() => s.append({ type: 'fixture/message', data: { text: 5 } } as never), 'INVALID_ARGUMENT')
    await s.close()
    const storedByV1 = (await v1.changesSince(null)).batch.sessions[0]!.events
    await v1.close()

    const v3 = await openStore({ name, workerUrl: ownWorker() })
    try {
      const w = await v3.openSession('chat')
      expect(w.projections.get('transcript' as never)).toEqual(['user: hi'])
      // Refused by the third version's schema, in its worker: nothing written.
      for (const data of [{ text: 'the first shape' }, { role: 'user', parts: [] }, { role: 'robot', parts: ['x'] }]) {
        await expectCode(() => w.append({ type: 'fixture/message', data } as never), 'INVALID_ARGUMENT')
      }
      expect((await eventsOf(v3, 'chat')).length).toBe(2)
      await w.append({ type: 'fixture/message', data: { role: 'assistant', parts: ['he', 'llo'] } })
      expect(w.projections.get('transcript' as never)).toEqual(['user: hi', 'assistant: hello'])
      const read = await eventsOf(v3, 'chat')
      expect(read.filter((e) => e.type === 'fixture/message').map((e) => [e.v, e.data])).toEqual([
        [3, { role: 'user', parts: ['hi'] }],
        [3, { role: 'assistant', parts: ['he', 'llo'] }],
      ])
      const kept = (await v3.changesSince(null)).batch.sessions[0]!.events
      expect(kept.slice(0, 2)).toEqual(storedByV1)
      expect(kept[2]).toMatchObject({ v: 3 })
      const past = await v3.observe('chat', { at: 1 })
      expect(past.projections.get('transcript' as never)).toEqual(['user: hi'])
      await past.close()
      await w.close()
    } finally {
      await v3.close()
    }

    // The second version meets an event of the third: its unit faults; the event is still read.
    const v2 = await openStore({ name, worker: false, ...appV2 })
    try {
      const view = await v2.observe('chat')
      expect(view.projections.snapshot().faults).toEqual({ transcript: 'corrupt' })
      const events = await eventsOf(v2, 'chat')
      expect(events[2]).toMatchObject({ v: 3, data: { role: 'assistant', parts: ['he', 'llo'] } })
      expect(events[0]).toMatchObject({ v: 2, data: { role: 'user', text: 'hi' } })
      await view.close()
    } finally {
      await v2.close()
    }
  })

  it('on OPFS, in the app’s own worker: an append its definitions refuse writes nothing', async () => {
    const store = await openStore({ name: db(), storage: 'opfs', workerUrl: ownWorker() })
    try {
      const s = await store.createSession({ id: 'chat' })
      await s.append({ type: 'fixture/message', data: { role: 'user', parts: ['hi'] } })
      await expectCode(() => s.append([{ type: 'turn/start' }, { type: 'fixture/message', data: { role: 'user' } } as never]), 'INVALID_ARGUMENT')
      expect(await eventsOf(store, 'chat')).toHaveLength(1)
      expect(s.projections.get('transcript' as never)).toEqual(['user: hi'])
      await s.close()
    } finally {
      await store.close()
    }
  })
})
