// Contract: §12 encryption and compression at rest, in Chromium on real IndexedDB: the raw
// values hold nothing readable, keys are checked before anything is written, and the storage
// suite holds on the sealed adapter (CompressionStream's deflate, WebCrypto's AES-GCM).
import { describe, expect, it } from 'vitest'
import { deriveKey, openStore, type OpenStoreOptions, type Store } from 'sessionfold'
import { openSealed } from '../../src/storage/codec'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import type { StorageAdapter } from '../../src/storage/types'
import { streamCompressor } from '../../src/storage/codec/browser'
import { storageConformance } from 'sessionfold/testing'

const key = new Uint8Array(32).fill(5)
let n = 0
const dbName = (what: string) => `codec-${what}-${Date.now()}-${n++}`

/** Every value of every object store of the database, as JSON text (one string per value). */
async function rawValues(name: string): Promise<string[]> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const r = indexedDB.open(name)
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })
  try {
    const out: string[] = []
    for (const store of Array.from(db.objectStoreNames)) {
      const all = await new Promise<unknown[]>((resolve, reject) => {
        const r = db.transaction(store).objectStore(store).getAll()
        r.onsuccess = () => resolve(r.result)
        r.onerror = () => reject(r.error)
      })
      const keys = await new Promise<IDBValidKey[]>((resolve, reject) => {
        const r = db.transaction(store).objectStore(store).getAllKeys()
        r.onsuccess = () => resolve(r.result)
        r.onerror = () => reject(r.error)
      })
      for (let i = 0; i < all.length; i++) out.push(`${store} ${JSON.stringify(keys[i])} ${JSON.stringify(all[i])}`)
    }
    return out
  } finally {
    db.close()
  }
}

/** The data key generation (byte 1) of every unit in the database: frames, headers, rows; and the key record's generations. */
async function gensOf(name: string): Promise<{ units: { kind: string; gen: number }[]; keys: number[] }> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const r = indexedDB.open(name)
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })
  const all = (store: string) =>
    new Promise<unknown[]>((resolve, reject) => {
      const r = db.transaction(store).objectStore(store).getAll()
      r.onsuccess = () => resolve(r.result)
      r.onerror = () => reject(r.error)
    })
  try {
    const gen = (b64: unknown) => atob(String(b64)).charCodeAt(1)
    const units: { kind: string; gen: number }[] = []
    for (const e of (await all('events')) as { type: string; data: unknown }[])
      if (e.type === '' && typeof e.data === 'string') units.push({ kind: 'frame', gen: gen(e.data) })
    for (const m of (await all('sessions')) as { header: { sealed: string } }[]) units.push({ kind: 'header', gen: gen(m.header.sealed) })
    for (const row of (await all('checkpoints')) as { sealed: string }[]) units.push({ kind: 'row', gen: gen(row.sealed) })
    const record = (await all('meta')).find((v) => typeof v === 'string' && v.includes('aes-256-gcm')) as string
    return { units, keys: (JSON.parse(record) as { keys: { gen: number }[] }).keys.map((k) => k.gen) }
  } finally {
    db.close()
  }
}

async function fill(store: Store, marker: string): Promise<void> {
  const root = await store.createSession({ id: 'root', cwd: `/home/${marker}` })
  await root.append([
    { type: 'turn/start', data: { prompt: marker } },
    { type: 'tool/output', data: { text: `${marker} `.repeat(300) } },
  ])
  const kid = await root.spawn({ mode: 'continuable', id: 'kid', label: `label ${marker}`, events: [{ type: 'app/task', data: marker }] })
  await kid.append({ type: 'turn/end' })
  await root.append({ type: 'turn/end', data: marker })
  await kid.close()
  await root.close()
}

describe('encryption at rest in Chromium (IndexedDB)', () => {
  for (const worker of [true, false] as const) {
    it(`raw IndexedDB values hold no marker, where a control store's do; it reads back whole (worker: ${worker})`, async () => {
      const marker = 'Kp4MARKERw2'
      const secretName = dbName('secret')
      const controlName = dbName('control')
      const secret = await openStore({ name: secretName, worker, encryption: { key } })
      await fill(secret, marker)
      await secret.close()
      const control = await openStore({ name: controlName, worker, compression: 'none' })
      await fill(control, marker)
      await control.close()
      expect((await rawValues(secretName)).filter((v) => v.includes(marker))).toEqual([])
      expect((await rawValues(controlName)).filter((v) => v.includes(marker)).length).toBeGreaterThan(3)
      const again = await openStore({ name: secretName, worker, encryption: { key } })
      const view = await again.observe('root')
      const texts: string[] = []
      for await (const e of view.events()) texts.push(JSON.stringify(e.data))
      expect(texts.filter((t) => t.includes(marker)).length).toBe(4) // turn/start, tool/output, the catalog's row, turn/end
      expect((await view.listChildren()).map((c) => c.id)).toEqual(['kid'])
      await view.close()
      expect((await again.verify()).damaged).toEqual([])
      await again.close()
    })
  }

  it('KEY_REJECTED for no key, a wrong key or a key for a plain store, with nothing written', async () => {
    const secretName = dbName('secret')
    const plainName = dbName('plain')
    const a = await openStore({ name: secretName, encryption: { key } })
    await fill(a, 'm')
    await a.close()
    const b = await openStore({ name: plainName })
    await fill(b, 'm')
    await b.close()
    const before = [await rawValues(secretName), await rawValues(plainName)]
    const wrong = await deriveKey('wrong', new Uint8Array(16), { iterations: 1000 })
    const tries: [string, OpenStoreOptions][] = [
      [secretName, {}],
      [secretName, { encryption: { key: wrong } }],
      [plainName, { encryption: { key } }],
    ]
    for (const [name, options] of tries) {
      const err = await openStore({ name, ...options }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect((err as { code?: string })?.code).toBe('KEY_REJECTED')
    }
    expect([await rawValues(secretName), await rawValues(plainName)]).toEqual(before)
  })

  it("a SharedWorker's engine checks every tab's key, and a tab refused does not spoil it for the next", async () => {
    const name = dbName('shared')
    const first = await openStore({ name, worker: 'shared', encryption: { key } })
    await fill(first, 'm')
    for (const options of [{}, { encryption: { key: new Uint8Array(32).fill(1) } }] as OpenStoreOptions[]) {
      const err = await openStore({ name, worker: 'shared', ...options }).then(
        async (s) => {
          await s.close()
          return undefined
        },
        (e: unknown) => e,
      )
      expect((err as { code?: string })?.code).toBe('KEY_REJECTED')
    }
    const second = await openStore({ name, worker: 'shared', encryption: { key } })
    expect((await second.listSessions()).map((h) => h.id)).toEqual(['kid', 'root'])
    await second.close()
    await first.close()
    // A first tab with a wrong key is refused, and its failure is not kept for the next one.
    const other = dbName('shared-first')
    const made = await openStore({ name: other, worker: 'shared', encryption: { key } })
    await fill(made, 'm')
    await made.close()
    await expect(openStore({ name: other, worker: 'shared', encryption: { key: new Uint8Array(32).fill(2) } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    const right = await openStore({ name: other, worker: 'shared', encryption: { key } })
    expect((await right.verify()).damaged).toEqual([])
    await right.close()
  })

  for (const worker of [true, false, 'shared'] as const)
    it(`rotateKey re-encrypts every unit; afterwards the new key opens it and the old one does not (worker: ${worker})`, async () => {
      const name = dbName('rotate')
      const s = await openStore({ name, worker, encryption: { key } })
      await fill(s, 'm')
      const next = await deriveKey('next', new Uint8Array(16).fill(9), { iterations: 1000 })
      const before = await gensOf(name)
      expect(new Set(before.units.map((u) => u.kind))).toEqual(new Set(['frame', 'header', 'row']))
      expect([...new Set(before.units.map((u) => u.gen))]).toEqual([1])
      const view = await s.observe('root')
      const events = []
      for await (const e of view.events()) events.push(e)
      await view.close()
      const progress: number[] = []
      await s.rotateKey(next, { onProgress: (p) => progress.push(p.done) })
      expect(progress).toEqual([0, 1, 2])
      // Every frame, header and row re-encrypted under the new data key; the record lists it alone.
      const after = await gensOf(name)
      expect(after.units.map((u) => u.kind)).toEqual(before.units.map((u) => u.kind))
      expect([...new Set(after.units.map((u) => u.gen))]).toEqual([2])
      expect(after.keys).toEqual([2])
      await s.close()
      await expect(openStore({ name, encryption: { key } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
      const again = await openStore({ name, worker, encryption: { key: next } })
      expect((await again.verify()).damaged).toEqual([])
      const read = await again.observe('root')
      const eventsAfter = []
      for await (const e of read.events()) eventsAfter.push(e)
      await read.close()
      expect(eventsAfter).toEqual(events)
      await again.close()
    })

  it('replaceRecords on IndexedDB: a record of another length is refused and nothing changes; one of the same length is replaced', async () => {
    const name = dbName('replace')
    const a = createIndexedDbAdapter({ name })
    const header = { version: 1 as const, id: 'r', createdAt: 1_700_000_000_000, seedLength: 0, delegationDepth: 0, origin: 'root' as const }
    const event = (seq: number, text: string) => {
      const e = { seq, type: 'app/x', time: 1_700_000_000_000, data: text }
      return { event: e, json: JSON.stringify(e) }
    }
    await a.createSession(header)
    await a.append('r', [event(0, 'aaaa'), event(1, 'bbbb')])
    const raw = await rawValues(name)
    await expect(a.replaceRecords!('r', { records: [event(0, 'cccc'), event(1, 'bbbbb')] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', seq: 1 })
    await expect(a.replaceRecords!('r', { records: [event(2, 'cccc')] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rawValues(name)).toEqual(raw)
    await a.replaceRecords!('r', { records: [event(1, 'dddd')] })
    const out = []
    for await (const page of a.readEvents('r')) out.push(...page.map((e) => e.data))
    expect(out).toEqual(['aaaa', 'dddd'])
    await a.close()
  })
})

storageConformance(
  'indexeddb (Chromium), encrypted and compressed',
  async () => {
    const name = dbName('conformance')
    const open = () => openSealed(createIndexedDbAdapter({ name }), { key, compressor: streamCompressor() })
    let adapter: StorageAdapter = await open()
    return {
      adapter,
      reopen: async () => {
        await adapter.close()
        adapter = await open()
        return adapter
      },
      teardown: async () => {
        await adapter.close()
        await new Promise<void>((resolve) => {
          const r = indexedDB.deleteDatabase(name)
          r.onsuccess = r.onerror = r.onblocked = () => resolve()
        })
      },
    }
  },
  { without: ['replaceRecords'] },
) // a sealed store has no replaceRecords of its own (rotateKey uses the inner adapter's)
