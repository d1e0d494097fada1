// Contract: §18 OPFS in browsers — the client suite on the origin's private file system in Chromium (docs/CONTRACT.md)
// The client suite on storage 'opfs' in Chromium, the engine in its module Web Worker (the only
// place with sync access handles), and openStore refusing 'opfs' where there are none.
import { describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { clientConformance } from '../contract/client'
import { expectCode } from '../support/helpers'

let n = 0
const name = () => `opfs-client-${Date.now()}-${n++}`
clientConformance('Chromium, OPFS, module Web Worker', () => ({ storage: 'opfs', name: name(), worker: true }))

describe("storage 'opfs' where there are no sync access handles", () => {
  for (const worker of [false, 'shared'] as const) {
    it(`openStore({ worker: ${JSON.stringify(worker)} }) rejects with STORAGE_UNAVAILABLE, naming why, and makes nothing`, async () => {
      const store = `opfs-refused-${Date.now()}-${n++}`
      const err = await openStore({ storage: 'opfs', name: store, worker }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
      expect(String((err as Error).message)).toMatch(/dedicated worker/)
      const top = await navigator.storage.getDirectory()
      const names: string[] = []
      for await (const key of (top as FileSystemDirectoryHandle & { keys(): AsyncIterable<string> }).keys()) names.push(key)
      expect(names).not.toContain(store)
    })
  }
})

/** The file `path` ('a/b/c') of the origin's private file system. */
async function opfsFile(path: string): Promise<FileSystemFileHandle> {
  const parts = path.split('/')
  let dir = await navigator.storage.getDirectory()
  for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p)
  return dir.getFileHandle(parts.at(-1)!)
}

describe("storage 'opfs' across crashes and tabs (Chromium)", () => {
  it('a torn tail left by a crash mid-write is cut at the next open, and the log goes on from the last whole batch', async () => {
    const store = name()
    const a = await openStore({ storage: 'opfs', name: store })
    const s = await a.createSession({ id: 'torn' })
    await s.append([{ type: 'app/a' }, { type: 'app/b' }, { type: 'app/c' }])
    await a.close()
    // What a crash mid-append leaves: part of a batch after the last whole one.
    const log = await opfsFile(`${store}/sessions/s-torn/events.log`)
    const whole = (await log.getFile()).size
    const w = await (log as FileSystemFileHandle & { createWritable(o: { keepExistingData: boolean }): Promise<FileSystemWritableFileStream> }).createWritable({
      keepExistingData: true,
    })
    await w.write({ type: 'write', position: whole, data: new Uint8Array([0x12, 0x34, 0x56, 0x78, 40, 0, 0, 0, 0, 0x7b, 0x22]) })
    await w.close()
    expect((await log.getFile()).size).toBe(whole + 11)

    const b = await openStore({ storage: 'opfs', name: store })
    const again = await b.openSession('torn')
    expect((await again.append({ type: 'app/d' })).firstSeq).toBe(3)
    const types: string[] = []
    for await (const e of again.events()) types.push(e.type)
    expect(types).toEqual(['app/a', 'app/b', 'app/c', 'app/d'])
    await b.close()
    const reopened = await openStore({ storage: 'opfs', name: store })
    expect((await reopened.observe('torn')).projections.snapshot().asOfSeq).toBe(3)
    await reopened.close()
  })

  it('a session deleted in one tab while another tab reads it: gone in both; its id made again is new in both', async () => {
    const store = name()
    const [a, b] = [await openStore({ storage: 'opfs', name: store }), await openStore({ storage: 'opfs', name: store })]
    const s = await a.createSession({ id: 'x' })
    await s.append([{ type: 'app/old' }, { type: 'app/old' }])
    await s.close()
    // The other tab reads it (its worker holds the log open for a moment after).
    const view = await b.observe('x')
    const read: string[] = []
    for await (const e of view.events()) read.push(e.type)
    expect(read).toEqual(['app/old', 'app/old'])
    await view.close()
    await a.deleteSession('x')
    await expectCode(b.observe('x'), 'SESSION_NOT_FOUND')
    const made = await a.createSession({ id: 'x' })
    await made.append({ type: 'app/new' })
    const fresh = await b.observe('x')
    const now: string[] = []
    for await (const e of fresh.events()) now.push(e.type)
    expect(now).toEqual(['app/new'])
    await made.close()
    await Promise.all([a.close(), b.close()])
  })

  it('a session written in one tab and closed there is deleted from another tab, the first tab still open', async () => {
    const store = name()
    const [a, b] = [await openStore({ storage: 'opfs', name: store }), await openStore({ storage: 'opfs', name: store })]
    const s = await b.createSession({ id: 'w' })
    await s.append([{ type: 'app/a' }, { type: 'app/b' }])
    await s.close() // the store stays open: its worker may keep the log's file open
    await a.deleteSession('w')
    await expectCode(b.observe('w'), 'SESSION_NOT_FOUND')
    expect((await a.listSessions()).map((h) => h.id)).toEqual([])
    // Made again in the first tab, and written again in the second: a new log there too.
    await (await a.createSession({ id: 'w' })).close()
    const again = await b.openSession('w')
    expect((await again.append({ type: 'app/new' })).firstSeq).toBe(0)
    const types: string[] = []
    for await (const e of (await a.observe('w')).events()) types.push(e.type)
    expect(types).toEqual(['app/new'])
    await Promise.all([a.close(), b.close()])
  })
})
