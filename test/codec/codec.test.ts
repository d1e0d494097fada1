// Contract: §10 encryption and compression at rest — the record codec (src/storage/codec), on
// every adapter through openStore, and below it on the memory adapter with hostile storage.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runCli } from '../support/run-cli'
import { deriveKey, openStore, sync, type OpenStoreOptions, type Store } from 'sessionfold'
import { openSealed } from '../../src/storage/codec'
import { nodeCipher } from '../../src/storage/codec/node'
import { LOG_FILE, sessionDir } from '../../src/backends/fs/layout'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { StorageAdapter } from '../../src/storage/types'
import type { SessionEvent } from '../../src/core/model'
import { encodeEventInput } from '../../src/core/validate'
import { dumpStore, eventsOf } from '../support/helpers'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createSyncHandler, toNodeListener } from '../../src/sync/server/index'

const compressor = { deflate: (b: Uint8Array) => deflateRawSync(b), inflate: (b: Uint8Array) => inflateRawSync(b) }
const key = new Uint8Array(32).fill(7)
const otherKey = new Uint8Array(32).fill(8)
/** The i-th key of the rotation run (as in test/fixtures/key-rotator.ts). */
const keyOf = (i: number) => new Uint8Array(32).fill(i)

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-codec-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function filesOf(root: string): Promise<string[]> {
  const out: string[] = []
  for (const name of await readdir(root)) {
    const p = join(root, name)
    if ((await stat(p)).isDirectory()) out.push(...(await filesOf(p)))
    else out.push(p)
  }
  return out.sort()
}

/** Every file of the folder and a hash of its bytes: equal before and after means nothing was written. */
async function snapshotOf(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const f of await filesOf(root))
    out[f] = createHash('sha256')
      .update(await readFile(f))
      .digest('hex')
  return out
}

/** The same sessions, events and data (all but times, which differ from store to store). */
const shape = async (st: Store) =>
  JSON.stringify(Object.entries(await dumpStore(st)).map(([id, d]) => [id, d.header.cwd, d.events.map((e) => [e.seq, e.type, e.data])])).replace(
    /"childCreatedAt":\d+/g,
    '',
  )

/** A session with a child, a fork, data, labels and a cwd all holding `marker`. */
async function fill(store: Store, marker: string): Promise<void> {
  const root = await store.createSession({ id: 'root', cwd: `/home/${marker}/work` })
  await root.append({ type: 'turn/start', data: { prompt: `my key is ${marker}` } })
  await root.append([
    { type: 'tool/output', data: { text: `${marker} `.repeat(400) } },
    { type: 'app/small', data: marker },
  ])
  const kid = await root.spawn({ mode: 'continuable', id: 'kid', label: `helper ${marker}`, events: [{ type: 'app/task', data: marker }] })
  await kid.append({ type: 'turn/end' })
  await root.append({ type: 'turn/end' })
  const fork = await root.fork({ at: 2, id: 'fork' })
  await fork.append({ type: 'app/forked', data: marker })
  for (const s of [root, kid, fork]) await s.close()
}

describe('encryption at rest through openStore (fs)', () => {
  for (const worker of [false, true]) {
    it(`stores nothing of data, labels or cwd readable, where a control store does (worker: ${worker})`, async () => {
      const marker = 'Zq7MARKERx9'
      const secret = await openStore({ storage: 'fs', dir: join(dir, 'secret'), worker, encryption: { key } })
      await fill(secret, marker)
      const control = await openStore({ storage: 'fs', dir: join(dir, 'control'), worker, compression: 'none' })
      await fill(control, marker)
      expect(await shape(secret)).toEqual(await shape(control))
      await secret.close()
      await control.close()
      const hits = async (root: string) => {
        const found = []
        for (const f of await filesOf(root)) if ((await readFile(f)).includes(marker)) found.push(f)
        return found
      }
      expect(await hits(join(dir, 'secret'))).toEqual([])
      expect((await hits(join(dir, 'control'))).length).toBeGreaterThan(3)
      // And it reads back whole, with the key, in a new process's worth of state.
      const again = await openStore({ storage: 'fs', dir: join(dir, 'secret'), worker, encryption: { key } })
      expect((await eventsOf(again, 'root')).some((e) => JSON.stringify(e.data).includes(marker))).toBe(true)
      expect((await again.verify()).damaged).toEqual([])
      await again.close()
    })
  }

  it('KEY_REJECTED for no key, a wrong key, or a key given to a plain store; nothing is written', async () => {
    const secret = join(dir, 'secret')
    const plain = join(dir, 'plain')
    const a = await openStore({ storage: 'fs', dir: secret, encryption: { key } })
    await fill(a, 'm')
    await a.close()
    const b = await openStore({ storage: 'fs', dir: plain })
    await fill(b, 'm')
    await b.close()
    const before = { secret: await snapshotOf(secret), plain: await snapshotOf(plain) }
    const tries: [string, OpenStoreOptions][] = [
      [secret, {}],
      [secret, { encryption: { key: otherKey } }],
      [secret, { encryption: { key: await deriveKey('not it', new Uint8Array(16), { iterations: 1000 }) } }],
      [plain, { encryption: { key } }],
    ]
    for (const [where, options] of tries) {
      for (const worker of [false, true]) {
        const err = await openStore({ storage: 'fs', dir: where, worker, ...options }).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect((err as { code?: string })?.code, JSON.stringify({ where, worker })).toBe('KEY_REJECTED')
      }
    }
    expect({ secret: await snapshotOf(secret), plain: await snapshotOf(plain) }).toEqual(before)
  })

  it('bad encryption and compression options are INVALID_ARGUMENT, and make no store', async () => {
    const where = join(dir, 'none')
    const bad: unknown[] = [
      { encryption: { key: new Uint8Array(16) } },
      { encryption: { key: 'secret' } },
      { encryption: { key, extra: 1 } },
      { encryption: key },
      { compression: 'gzip' },
    ]
    for (const options of bad) {
      const err = await openStore({ storage: 'fs', dir: where, ...(options as OpenStoreOptions) }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect((err as { code?: string })?.code, JSON.stringify(options)).toBe('INVALID_ARGUMENT')
    }
    await expect(stat(where)).rejects.toThrow()
  })

  it('deriveKey: one passphrase and salt give one key; another salt gives another', async () => {
    const salt = new Uint8Array(16).fill(1)
    const s = await openStore({ storage: 'fs', dir: join(dir, 'p'), encryption: { key: await deriveKey('horse battery', salt, { iterations: 2000 }) } })
    await fill(s, 'm')
    await s.close()
    const again = await openStore({ storage: 'fs', dir: join(dir, 'p'), encryption: { key: await deriveKey('horse battery', salt, { iterations: 2000 }) } })
    expect(await eventsOf(again, 'kid')).toHaveLength(3)
    await again.close()
    const other = await openStore({
      storage: 'fs',
      dir: join(dir, 'p'),
      encryption: { key: await deriveKey('horse battery', new Uint8Array(16).fill(2), { iterations: 2000 }) },
    }).catch((e: { code: string }) => e.code)
    expect(other).toBe('KEY_REJECTED')
    await expect(deriveKey('', salt)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(deriveKey('x', new Uint8Array(2))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })

  it('sync and changesSince/applyChanges move plain events between an encrypted store and a plain one', async () => {
    const secret = await openStore({ storage: 'fs', dir: join(dir, 'secret'), encryption: { key } })
    const plain = await openStore({ storage: 'memory' })
    const other = await openStore({ storage: 'fs', dir: join(dir, 'other'), encryption: { key: otherKey } })
    await fill(secret, 'm')
    await sync(secret, plain)
    await sync(plain, other)
    expect(await dumpStore(plain)).toEqual(await dumpStore(secret))
    expect(await dumpStore(other)).toEqual(await dumpStore(secret))
    for (const s of [secret, plain, other]) await s.close()
  })

  it('HTTP sync: a server on an encrypted store, devices with their own key or none, end equal', async () => {
    const server = await openStore({ storage: 'fs', dir: join(dir, 'server'), encryption: { key } })
    const http = createServer(toNodeListener(createSyncHandler({ store: server, authorize: () => true, pollMs: 50 })))
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
    const a = await openStore({ storage: 'fs', dir: join(dir, 'a'), encryption: { key: otherKey } })
    const b = await openStore({ storage: 'memory' })
    try {
      await fill(a, 'over-http')
      const ra = a.connect(url, { pollMs: 50 })
      await ra.whenSynced()
      const rb = b.connect(url, { pollMs: 50 })
      await rb.whenSynced()
      expect(await shape(b)).toEqual(await shape(a))
      expect(await shape(server)).toEqual(await shape(a))
      expect(await dumpStore(b)).toEqual(await dumpStore(a))
      await Promise.all([ra.close(), rb.close()])
    } finally {
      for (const s of [a, b, server]) await s.close()
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
    }
    const hits = []
    for (const f of await filesOf(join(dir, 'server'))) if ((await readFile(f)).includes('over-http')) hits.push(f)
    expect(hits).toEqual([])
  })

  it('rotateKey: the old key opens nothing afterwards, the new one opens everything; bad keys are INVALID_ARGUMENT', async () => {
    const s = await openStore({ storage: 'fs', dir: join(dir, 'r'), encryption: { key } })
    await fill(s, 'm')
    const before = await dumpStore(s)
    await expect(s.rotateKey(new Uint8Array(3))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await s.rotateKey(otherKey)
    // Written after the rotation: under the new data key.
    const late = await s.openSession('root')
    await late.append({ type: 'app/after' })
    await late.close()
    const after = await dumpStore(s)
    await s.close()
    await expect(openStore({ storage: 'fs', dir: join(dir, 'r'), encryption: { key } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    const again = await openStore({ storage: 'fs', dir: join(dir, 'r'), encryption: { key: otherKey } })
    expect(await dumpStore(again)).toEqual(after)
    expect(after).not.toEqual(before)
    expect((await again.verify()).damaged).toEqual([])
    await again.close()
    const plain = await openStore({ storage: 'fs', dir: join(dir, 'plain') })
    await expect(plain.rotateKey(key)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await plain.close()
  })

  it('two first opens at once with a key agree on one key record; both stores read what each wrote', async () => {
    const where = join(dir, 'race')
    for (let round = 0; round < 3; round++) {
      const at = join(where, String(round))
      const [a, b] = await Promise.all([0, 1].map(() => openStore({ storage: 'fs', dir: at, worker: false, encryption: { key } })))
      await (await a!.createSession({ id: 'from-a' })).append({ type: 'app/a', data: 'a'.repeat(600) })
      await (await b!.createSession({ id: 'from-b' })).append({ type: 'app/b', data: 'b'.repeat(600) })
      await a!.close()
      await b!.close()
      const again = await openStore({ storage: 'fs', dir: at, worker: false, encryption: { key } })
      expect((await again.verify()).damaged).toEqual([])
      expect((await eventsOf(again, 'from-a'))[0]!.data).toBe('a'.repeat(600))
      expect((await eventsOf(again, 'from-b'))[0]!.data).toBe('b'.repeat(600))
      await again.close()
    }
  })

  it('rotations run one at a time; a store whose key another process rotated says KEY_REJECTED, not CORRUPT_LOG', async () => {
    const where = join(dir, 'serial')
    const s = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key } })
    await fill(s, 'm')
    const k2 = new Uint8Array(32).fill(21)
    const k3 = new Uint8Array(32).fill(22)
    const w = await s.openSession('root')
    // 'root' is open for writing here all along: both rotations re-encrypt the rest, leave it
    // under the old data keys and say so; a rotation once it is closed completes.
    const [r2, , r3] = await Promise.allSettled([s.rotateKey(k2), w.append({ type: 'app/between', data: 'x'.repeat(600) }), s.rotateKey(k3)])
    expect(r2).toMatchObject({ status: 'rejected', reason: { code: 'SESSION_LOCKED', sessionId: 'root' } })
    expect(r3).toMatchObject({ status: 'rejected', reason: { code: 'SESSION_LOCKED', sessionId: 'root' } })
    await w.close()
    await s.rotateKey(k3)
    const written = await shape(s)
    await s.close()
    const again = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: k3 } })
    expect(await shape(again)).toEqual(written)
    expect((await again.verify()).damaged).toEqual([])
    // Another process (here: another store on the folder) rotates and writes; this one reads.
    const other = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: k3 } })
    await other.rotateKey(k2)
    await (await other.createSession({ id: 'later' })).append({ type: 'app/late', data: 'y'.repeat(600) })
    await expect(eventsOf(again, 'later')).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    await expect(again.rotateKey(key)).rejects.toMatchObject({ code: 'KEY_REJECTED' })
    await other.close()
    await again.close()
  })

  it('a key record edited at rest (which key is current, which keys it lists) is KEY_REJECTED', async () => {
    const where = join(dir, 'edited')
    const s = await openStore({ storage: 'fs', dir: where, encryption: { key } })
    await fill(s, 'm')
    await s.rotateKey(otherKey)
    await s.close()
    const file = join(where, 'meta', 'sessionfold-codec')
    const text = await readFile(file, 'utf8')
    const record = JSON.parse(text) as { current: number; keys: { gen: number }[] }
    for (const edit of [
      { ...record, current: 1 },
      { ...record, keys: record.keys.slice(0, 1), current: 1 },
    ]) {
      await writeFile(file, JSON.stringify(edit))
      await expect(openStore({ storage: 'fs', dir: where, encryption: { key: otherKey } })).rejects.toMatchObject({
        code: expect.stringMatching(/KEY_REJECTED|CORRUPT_LOG/),
      })
    }
    await writeFile(file, text)
    const again = await openStore({ storage: 'fs', dir: where, encryption: { key: otherKey } })
    await again.close()
  })

  it('rotateKey killed at random points leaves a store that opens, whole, with the last key or the next; rotateKey again completes it', async () => {
    const where = join(dir, 'kill')
    const s = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(1) } })
    await fill(s, 'm')
    // More sessions, so that a kill lands in the middle of re-encrypting them as often as not.
    for (let i = 0; i < 6; i++) {
      const more = await s.createSession({ id: `more-${i}` })
      for (let b = 0; b < 4; b++) await more.append(Array.from({ length: 50 }, (_, k) => ({ type: 'app/n', data: { i, b, k, pad: 'q'.repeat(30) } })))
      await more.close()
    }
    const whole = await dumpStore(s)
    await s.close()
    let last = 1
    let stoppedMidway = 0
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../fixtures/key-rotator.ts'), where, String(last)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      let seen = last
      let midway = 0 // the last rotation seen to have re-encrypted two sessions
      child.stdout.on('data', (b: Buffer) => {
        for (const m of b.toString().matchAll(/rotated (\d+)/g)) seen = Math.max(seen, Number(m[1]))
        for (const m of b.toString().matchAll(/progress (\d+) (\d+)/g)) if (Number(m[2]) >= 2) midway = Math.max(midway, Number(m[1]))
      })
      // Let it rotate a few times, then kill it wherever it is (odd rounds: mid-rotation).
      await new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (round % 2 === 1 && seen >= last + 1 && midway === seen + 1) {
            clearInterval(check)
            resolve()
          } else if (round % 2 === 0 && seen >= last + 1 + (round % 3)) {
            clearInterval(check)
            setTimeout(() => resolve(), Math.floor(Math.random() * 15))
          }
        }, 2)
      })
      child.kill('SIGKILL')
      await new Promise((resolve) => child.once('exit', resolve))
      let opened: Store | undefined
      for (const k of [seen, seen + 1]) {
        opened = await openStore({ storage: 'fs', dir: where, worker: false, encryption: { key: keyOf(k) } }).catch(() => undefined)
        if (opened) {
          last = k
          break
        }
      }
      expect(opened, `round ${round}: opens with key ${seen} or ${seen + 1}`).toBeDefined()
      expect(await dumpStore(opened!)).toEqual(whole)
      if (round % 2 === 1) {
        // Killed mid-rotation (the old data keys still listed); run again with the key it opens
        // with, it completes the rotation: one data key left, the data the same.
        const keys = async () =>
          (JSON.parse(await readFile(join(where, 'meta', 'sessionfold-codec'), 'utf8')) as { keys: { gen: number }[] }).keys.map((k) => k.gen)
        if ((await keys()).length > 1) stoppedMidway++
        await opened!.rotateKey(keyOf(last))
        expect((await keys()).length).toBe(1)
        expect(await dumpStore(opened!)).toEqual(whole)
      }
      await opened!.close()
    }
    expect(stoppedMidway).toBeGreaterThan(0)
  }, 180_000)
})

describe('compression through openStore', () => {
  it("'deflate' (the default) stores large appends in far less than their JSON, and 'none' reads them", async () => {
    // Real prose of 20,000 characters, as a tool would return a doc (the README is too short for it now).
    const text = (await readFile(join(import.meta.dirname, '../../docs/operations.md'), 'utf8')).slice(0, 20_000)
    const sizes: Record<string, number> = {}
    for (const compression of ['deflate', 'none'] as const) {
      const s = await openStore({ storage: 'fs', dir: join(dir, compression), compression })
      const a = await s.createSession({ id: 'big' })
      for (let i = 0; i < 20; i++)
        await a.append([
          { type: 'tool/output', data: { i, text } },
          { type: 'tool/output', data: { i, text: text.slice(i * 100) } },
        ])
      await s.close()
      sizes[compression] = (await stat(join(sessionDir(join(dir, compression), 'big'), LOG_FILE))).size
    }
    expect(sizes.deflate!).toBeLessThan(sizes.none! * 0.35)
    // A store written compressed, opened with compression 'none': it reads the same.
    const a = await openStore({ storage: 'fs', dir: join(dir, 'deflate'), compression: 'none' })
    const b = await openStore({ storage: 'fs', dir: join(dir, 'none') })
    expect(await shape(a)).toEqual(await shape(b))
    expect((await a.verify()).damaged).toEqual([])
    for (const s of [a, b]) await s.close()
  })
})

/** A memory adapter whose stored records a test can change under the codec. */
function hostile(inner: StorageAdapter, change: (id: string, page: SessionEvent[]) => SessionEvent[]): StorageAdapter {
  const readEvents: StorageAdapter['readEvents'] = async function* (id, range) {
    for await (const page of inner.readEvents(id, range))
      yield change(
        id,
        page.map((e) => ({ ...e })),
      )
  }
  return {
    ...inner,
    kind: inner.kind,
    readEvents,
    // As the fs adapter gives them: the records' texts, so that the codec's readTexts reads them so.
    readTexts: async function* (id, range) {
      for await (const page of readEvents(id, range)) yield page.map((e) => JSON.stringify({ seq: e.seq, type: e.type, time: e.time, data: e.data }))
    },
  }
}

// Units sealed with one AES-GCM implementation open with the other (Node's platform uses
// node:crypto's, browsers WebCrypto's); a changed unit fails with either.
for (const [ciphers, writeCipher, readCipher] of [
  ['WebCrypto', undefined, undefined],
  ['node:crypto, read with WebCrypto', nodeCipher, undefined],
  ['WebCrypto, read with node:crypto', undefined, nodeCipher],
] as const)
  describe(`the codec below the engine (memory adapter, hostile storage; ${ciphers})`, () => {
    const events = (from: number, n: number, id: string) =>
      Array.from({ length: n }, (_, i) => encodeEventInput({ type: 'app/e', data: { tag: id, i, pad: 'p'.repeat(100) } }, from + i, id))
    const header = (id: string) => ({ version: 1 as const, id, createdAt: 1000, seedLength: 0, delegationDepth: 0, origin: 'root' as const })

    async function sealedPair(change: (id: string, page: SessionEvent[]) => SessionEvent[]) {
      const memory = createMemoryAdapter()
      const writer = await openSealed(memory, { key, compressor, cipher: writeCipher })
      for (const id of ['a', 'b']) {
        await writer.createSession(header(id))
        await writer.append(id, events(0, 3, id))
        await writer.append(id, events(3, 3, id))
      }
      const reader = await openSealed(hostile(memory, change), { key, compressor, cipher: readCipher })
      const read = async (id: string, from = 0) => {
        const out: SessionEvent[] = []
        for await (const page of reader.readEvents(id, { from })) out.push(...page)
        return out
      }
      /** The same through readTexts (a Durable Streams read's): the events' texts, unparsed. */
      const texts = async (id: string, from = 0, to?: number) => {
        const out: string[] = []
        for await (const page of reader.readTexts!(id, { from, to })) out.push(...page)
        return out
      }
      return { read, texts }
    }

    it('reads back what it wrote, from any seq', async () => {
      const { read, texts } = await sealedPair((_, p) => p)
      expect((await read('a')).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5])
      expect((await read('a', 4)).map((e) => [e.seq, (e.data as { tag: string }).tag])).toEqual([
        [4, 'a'],
        [5, 'a'],
      ])
      // As texts, from and to anywhere (inside a frame, across two): exactly the JSON each event was appended as.
      const written = (await read('a')).map((e) => JSON.stringify({ seq: e.seq, type: e.type, time: e.time, data: e.data }))
      for (let from = 0; from <= 6; from++) for (let to = from; to <= 6; to++) expect(await texts('a', from, to)).toEqual(written.slice(from, to))
    })

    it("skips the pointers it reads as texts when the adapter can; '' where no block covers is CORRUPT_LOG", async () => {
      const memory = createMemoryAdapter()
      const writer = await openSealed(memory, { key, compressor, cipher: writeCipher })
      await writer.createSession(header('s'))
      await writer.append('s', events(0, 3, 's'))
      await writer.append('s', events(3, 3, 's'))
      await writer.append('s', events(6, 1, 's'))
      const told: number[] = []
      /** The memory adapter with texts as fs gives them, '' for what the codec says it skips (and `extra` more). */
      const skipping = (extra: number): StorageAdapter => ({
        ...memory,
        kind: memory.kind,
        readTexts: async function* (id, range, skip) {
          let skipped = 0
          for await (const page of memory.readEvents(id, range))
            yield page.map((e) => {
              if (skipped > 0) {
                skipped--
                return ''
              }
              const text = JSON.stringify({ seq: e.seq, type: e.type, time: e.time, data: e.data })
              skipped = skip ? skip(text, e.seq) : 0
              if (skipped > 0) {
                told.push(e.seq, skipped)
                skipped += extra
              }
              return text
            })
        },
      })
      const texts = async (adapter: StorageAdapter, from = 0) => {
        const reader = await openSealed(adapter, { key, compressor, cipher: readCipher })
        const out: string[] = []
        for await (const page of reader.readTexts!('s', { from })) out.push(...page)
        return out
      }
      const written: string[] = []
      for await (const page of writer.readEvents('s'))
        written.push(...page.map((e) => JSON.stringify({ seq: e.seq, type: e.type, time: e.time, data: e.data })))
      expect(await texts(skipping(0))).toEqual(written)
      expect(told, 'the two blocks’ pointers: two after seq 0, two after seq 3').toEqual([0, 2, 3, 2])
      expect(await texts(skipping(0), 1)).toEqual(written.slice(1))
      await expect(texts(skipping(1))).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
    })

    it('reads back text of every width: accents, CJK, emoji, and escaped lone surrogates, in frames and checkpoint rows', async () => {
      const memory = createMemoryAdapter()
      const sealed = await openSealed(memory, { key, compressor, cipher: writeCipher })
      const texts = ['héllo wörld', '日本語のテキスト', '🙂 emoji 👩‍💻', 'lone \ud800 and \udfff', 'x'.repeat(300)]
      const batch = texts.map((text, i) => encodeEventInput({ type: 'app/e', data: { text, again: text.repeat(20) } }, i, 'w'))
      await sealed.createSession(header('w'))
      await sealed.append('w', batch)
      const out: SessionEvent[] = []
      for await (const page of sealed.readEvents('w')) out.push(...page)
      expect(out).toEqual(batch.map((e) => e.event))
      const row = { witness: header('w'), rows: { note: texts.join(' ').repeat(10) } }
      await sealed.putCheckpoint('w', row as never)
      expect(await sealed.getCheckpoint('w')).toEqual(row)
    })

    it('a flipped byte is CORRUPT_LOG, never data', async () => {
      const { read } = await sealedPair((_, page) =>
        page.map((e) => {
          if (typeof e.data !== 'string') return e
          const s = e.data
          const at = Math.floor(s.length / 2)
          return { ...e, data: s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1) }
        }),
      )
      await expect(read('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
      const { texts } = await sealedPair((_, page) =>
        page.map((e) => (typeof e.data === 'string' ? { ...e, data: e.data.slice(0, 20) + (e.data[20] === 'A' ? 'B' : 'A') + e.data.slice(21) } : e)),
      )
      await expect(texts('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
    })

    it('a frame moved to another session, or to another position, does not open', async () => {
      const framesOf: Record<string, SessionEvent[]> = {}
      const { read: readSwapped } = await sealedPair((id, page) => {
        framesOf[id] = page
        return page
      })
      await readSwapped('a')
      await readSwapped('b')
      const other = framesOf.b!
      const bySession = await sealedPair((id, page) => (id === 'a' ? other.map((e) => ({ ...e })) : page))
      await expect(bySession.read('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
      // Frames [0,3) and [3,6) swapped within one session (each relabelled to the other's seqs).
      const byPosition = await sealedPair((_, page) =>
        page.map((e) => {
          const swap = page.find((x) => x.seq === (e.seq + 3) % 6)!
          return typeof e.data === 'string' ? { ...e, data: swap.data } : e
        }),
      )
      await expect(byPosition.read('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
    })

    it('a damaged pointer record inside a frame is CORRUPT_LOG on a full read too (so verify sees it)', async () => {
      const { read, texts } = await sealedPair((_, page) => page.map((e) => (e.seq === 1 ? { ...e, data: 'garbage' } : e)))
      await expect(read('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
      await expect(texts('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
      // A pointer to another block's first seq, as text too.
      const moved = await sealedPair((_, page) => page.map((e) => (e.seq === 4 ? { ...e, data: 0 } : e)))
      await expect(moved.texts('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
      await expect(moved.read('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
    })

    it('a plain event slipped into an encrypted store is CORRUPT_LOG, never accepted', async () => {
      const { read, texts } = await sealedPair((_, page) => page.map((e) => (e.seq === 1 ? { seq: 1, type: 'app/forged', time: 1, data: 'x' } : e)))
      await expect(texts('a')).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
      await expect(read('a', 1)).rejects.toMatchObject({ code: 'CORRUPT_LOG' })
    })
  })

describe('the command line on an encrypted store', () => {
  const run = (args: string[], env: { SESSIONFOLD_KEY?: string } = {}) => runCli(args, { key: env.SESSIONFOLD_KEY })

  it('takes the key from SESSIONFOLD_KEY or --key-file, never from an argument; no key or a wrong one is KEY_REJECTED', async () => {
    const where = join(dir, 'store')
    const s = await openStore({ storage: 'fs', dir: where, encryption: { key } })
    await fill(s, 'cli-marker')
    await s.close()
    const hex = Buffer.from(key).toString('hex')
    const listed = await run(['ls', '--dir', where], { SESSIONFOLD_KEY: hex })
    expect(listed.code, listed.err).toBe(0)
    expect(listed.out).toContain('root')
    const file = join(dir, 'key.txt')
    await writeFile(file, `${Buffer.from(key).toString('base64')}\n`)
    const shown = await run(['events', 'root', '--dir', where, '--key-file', file, '--json'])
    expect(shown.code, shown.err).toBe(0)
    expect(shown.out).toContain('cli-marker')
    await writeFile(file, key)
    expect((await run(['show', 'kid', '--dir', where, '--key-file', file])).code).toBe(0)
    const none = await run(['ls', '--dir', where, '--json'])
    expect(none.code).toBe(1)
    expect(none.err).toContain('KEY_REJECTED')
    const wrong = await run(['ls', '--dir', where, '--json'], { SESSIONFOLD_KEY: Buffer.from(otherKey).toString('hex') })
    expect(wrong.err).toContain('KEY_REJECTED')
    const arg = await run(['ls', '--dir', where, '--key', hex])
    expect(arg.code).toBe(2)
    expect(arg.err).toContain('never given as an argument')
    const malformed = await run(['ls', '--dir', where, '--json'], { SESSIONFOLD_KEY: 'abc' })
    expect(malformed.err).toContain('INVALID_ARGUMENT')
  })
})
