// What another process does, seen live here (DESIGN §14), for fs (test/client/delete-seen.test.ts)
// and PostgreSQL (test/postgres/delete-seen.test.ts), the other process driven through
// test/fixtures/store-client.ts:
// - a live tail: this process observes "s" and tails it from seq 1; the other holds "s" for
//   writing and appends 40 events one after another. The tail yields each one, in order, none
//   twice, and ends when its signal aborts.
// - a watched tree: this process watches the tree of "p"; the other spawns a child of "p" and a
//   grandchild of that child, and holds the child open for writing, then lets it go. Each
//   reaches the listener: the rows, and the child's activity.
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

export async function expectTreeWatchOfAnotherProcess(options: OpenStoreOptions, within = 20_000): Promise<void> {
  const store = await openStore(options)
  const other = spawnFixture('store-client.ts', [JSON.stringify(options)])
  try {
    await (await store.createSession({ id: 'p' })).close()
    const view = await store.observe('p')
    const seen: string[] = []
    const stop = view.watchChildren({ recursive: true }, (rows) => {
      seen.push(rows.map((r) => (r.kind === 'child' ? `${r.id}@${r.depth}:${r.activity}` : `${r.id}:${r.reason}`)).join())
    })
    await until(() => seen.length === 1, within)
    expect(seen[0]).toBe('')
    expect(await other.line()).toBe('ready')
    const say = async (line: string, answer: string) => {
      other.send(line)
      expect(await other.line()).toBe(answer)
    }
    await say(`open p ${Date.now()}`, 'won p')
    await say('spawn kid', 'spawned kid')
    await say('release', 'released')
    await until(() => seen.at(-1) === 'kid@0:inactive', within)
    // The grandchild comes through the child's catalog, which this watch observes.
    await say(`open kid ${Date.now()}`, 'won kid')
    await until(() => seen.at(-1) === 'kid@0:running', within)
    await say('spawn grandkid', 'spawned grandkid')
    await until(() => seen.at(-1) === 'kid@0:running,grandkid@1:inactive', within)
    await say('release', 'released')
    await until(() => seen.at(-1) === 'kid@0:inactive,grandkid@1:inactive', within)
    stop()
    await view.close()
    other.send('close')
    expect(await other.line()).toBe('closed')
  } finally {
    other.process.kill()
    await store.close()
  }
}

/**
 * A session list (§14): this process lists the store's sessions; the other creates a session,
 * titles it, appends to it, lets it go and deletes it. Each shows in the list: the new row on
 * top, running, its title and length, running no more, gone.
 */
export async function expectSessionListOfAnotherProcess(options: OpenStoreOptions, within = 20_000): Promise<void> {
  const store = await openStore(options)
  const other = spawnFixture('store-client.ts', [JSON.stringify(options)])
  try {
    await (await store.createSession({ id: 'here', title: 'made here' })).close()
    const list = store.sessions()
    await until(() => list.loaded, within)
    expect(list.items.map((s) => s.id)).toEqual(['here'])
    expect(await other.line()).toBe('ready')
    const say = async (line: string, answer: RegExp) => {
      other.send(line)
      expect(await other.line()).toMatch(answer)
    }
    const top = () => list.items[0]
    await say(`open afar ${Date.now()}`, /^won afar$/)
    await until(() => top()?.id === 'afar' && top()!.running, within)
    await say('append {"type":"session/meta","data":{"title":"made afar","tags":["remote"]}}', /^ack 0 /)
    await say('append {"type":"app/x"}', /^ack 1 /)
    await until(() => top()?.title === 'made afar' && top()!.length === 2, within)
    expect(top()).toMatchObject({ id: 'afar', origin: 'root', parent: null, tags: ['remote'], running: true })
    await say('release', /^released$/)
    await until(() => top()?.running === false, within)
    await say('delete afar', /^deleted afar$/)
    await until(() => list.items.map((s) => s.id).join() === 'here', within)
    list.close()
    other.send('close')
    expect(await other.line()).toBe('closed')
  } finally {
    other.process.kill()
    await store.close()
  }
}
