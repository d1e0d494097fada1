// A delete seen by every client of a store (DESIGN §13), for fs (test/client/delete-seen.test.ts)
// and PostgreSQL (test/postgres/delete-seen.test.ts): a child of "parent" is observed in this
// process, and deleted by another process on the same store. The observer's subscribers hear
// it once more, with meta.error SESSION_NOT_FOUND; calls on the view then reject with that code;
// observe of the id rejects; the parent's listChildren shows the row as unavailable.
import { expect } from 'vitest'
import { openStore, type OpenStoreOptions, type SessionfoldError } from 'sessionfold'
import { spawnFixture } from './fixture-process'
import { expectCode, until } from './helpers'

export async function expectDeleteSeenFromAnotherProcess(options: OpenStoreOptions, within = 20_000): Promise<void> {
  const store = await openStore(options)
  const child = spawnFixture('store-client.ts', [JSON.stringify(options)])
  try {
    const parent = await store.createSession({ id: 'parent' })
    const kid = await parent.spawn({ mode: 'one-shot', id: 'kid', events: [{ type: 'msg', data: { text: 'hello' } }] })
    await kid.close()
    const view = await store.observe('kid')
    const heard: (SessionfoldError | undefined)[] = []
    const perKey: (SessionfoldError | undefined)[] = []
    view.projections.subscribe((_snapshot, meta) => heard.push(meta?.error))
    view.projections.subscribe('subagent', (_value, meta) => perKey.push(meta.error))
    expect(heard).toEqual([undefined])
    expect(await child.line()).toBe('ready')
    child.send('delete kid')
    expect(await child.line()).toBe('deleted kid')
    await until(() => heard.length > 1, within)
    expect(heard.slice(1).map((e) => e?.code)).toEqual(['SESSION_NOT_FOUND'])
    expect(perKey.at(-1)?.code).toBe('SESSION_NOT_FOUND')
    expect(heard[1]!.message).toContain('"kid"')
    // Every later call on the view rejects with the code, where it is made.
    await expectCode(async () => {
      for await (const _ of view.events()) void _
    }, 'SESSION_NOT_FOUND')
    await expectCode(view.listChildren(), 'SESSION_NOT_FOUND')
    await expectCode(store.observe('kid'), 'SESSION_NOT_FOUND')
    expect(await parent.listChildren()).toEqual([expect.objectContaining({ kind: 'diagnostic', id: 'kid', reason: 'unavailable' })])
    await view.close()
    // A new session of the id is a session of its own: observed afresh, followed as any.
    const again = await store.createSession({ id: 'kid' })
    await again.append({ type: 'msg', data: { text: 'again' } })
    const fresh = await store.observe('kid')
    expect(fresh.projections.snapshot().asOfSeq).toBe(0)
    await fresh.close()
    await again.close()
    await parent.close()
    child.send('close')
    expect(await child.line()).toBe('closed')
  } finally {
    child.process.kill()
    await store.close()
  }
}
