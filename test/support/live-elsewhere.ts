// A live tail of a session written by another process (DESIGN §14, events({ follow: true })),
// for fs (test/client/delete-seen.test.ts) and PostgreSQL (test/postgres/delete-seen.test.ts):
// this process observes "s" and tails it from seq 1; another process on the same store holds
// "s" for writing and appends 40 events one after another. The tail yields each one, in order,
// none twice, and ends when its signal aborts.
import { expect } from 'vitest'
import { openStore, type OpenStoreOptions } from 'sessionfold'
import { spawnFixture } from './fixture-process'
import { until } from './helpers'

export async function expectTailOfAnotherProcess(options: OpenStoreOptions, within = 20_000): Promise<void> {
  const store = await openStore(options)
  const writer = spawnFixture('store-client.ts', [JSON.stringify(options)])
  try {
    const s = await store.createSession({ id: 's' })
    await s.append({ type: 'app/start' })
    await s.close()
    const view = await store.observe('s')
    const stop = new AbortController()
    const seen: unknown[] = []
    const tail = (async () => {
      for await (const e of view.events({ from: 1, follow: true, signal: stop.signal })) seen.push(e.type === 'app/tick' ? (e.data as { i: number }).i : e.type)
    })()
    expect(await writer.line()).toBe('ready')
    writer.send(`open s ${Date.now()}`)
    expect(await writer.line()).toBe('won s')
    writer.send('stream 40 0')
    await until(() => seen.length === 40, within)
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => i))
    stop.abort()
    await tail
    await view.close()
    writer.send('close')
    expect(await writer.line()).toMatch(/^(ack|streamed|closed)/)
  } finally {
    writer.process.kill()
    await store.close()
  }
}
