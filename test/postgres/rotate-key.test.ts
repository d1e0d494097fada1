// Contract: §12 rotateKey on PostgreSQL — after a rotation every stored unit (frames, headers,
// checkpoint and history rows) is under the new data key only and the key record lists that
// one key, read from the tables through the plain adapter (no codec); the data reads back the
// same; a rotation stopped midway opens with the new key and a second one completes it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from 'sessionfold'
import { createPostgresAdapter } from '../../src/backends/postgres'
import { dumpStore } from '../support/helpers'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
let url: string
let schema: string
let n = 0
const keyOf = (i: number) => new Uint8Array(32).fill(i)

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('rotate')
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})
beforeEach(() => {
  schema = `r${process.pid}_${n++}`
})

/** Every unit's data key generation (its byte 1), by kind, and the key record's generations, as stored. */
async function stored(): Promise<{ units: { kind: string; id: string; gen: number }[]; keys: number[] }> {
  const a = createPostgresAdapter({ url, schema })
  const units: { kind: string; id: string; gen: number }[] = []
  const add = (kind: string, id: string, b64: unknown) => units.push({ kind, id, gen: Buffer.from(String(b64), 'base64')[1]! })
  try {
    for (const id of await a.listIds({ limit: 10_000 })) {
      add('header', id, ((await a.getSession(id))!.header as unknown as { sealed: string }).sealed)
      for await (const page of a.readEvents(id)) for (const e of page) if (e.type === '' && typeof e.data === 'string') add('frame', id, e.data)
      const row = (await a.getCheckpoint(id)) as { sealed?: string } | undefined
      if (row) add('checkpoint', id, row.sealed)
      for (const at of await a.history!.list(id)) add('history', id, ((await a.history!.get(id, at))!.row as { sealed: string }).sealed)
    }
    const record = JSON.parse((await a.getMeta!('sessionfold-codec'))!) as { keys: { gen: number }[] }
    return { units, keys: record.keys.map((k) => k.gen) }
  } finally {
    await a.close()
  }
}

const gens = (units: { gen: number }[]) => [...new Set(units.map((u) => u.gen))].sort()

async function fill(store: Store): Promise<void> {
  const root = await store.createSession({ id: 'root', cwd: '/home/pg' })
  await root.append([
    { type: 'turn/start', data: { prompt: 'p' } },
    { type: 'tool/output', data: { text: 'o '.repeat(500) } },
  ])
  const kid = await root.spawn({ mode: 'continuable', id: 'kid', label: 'helper', events: [{ type: 'app/task', data: 'k' }] })
  await kid.append({ type: 'turn/end' })
  const long = await store.createSession({ id: 'long' })
  for (let b = 0; b < 22; b++) await long.append(Array.from({ length: 100 }, (_, i) => ({ type: 'app/n', data: { n: b * 100 + i, pad: 'p'.repeat(40) } })))
  for (const s of [root, kid, long]) await s.close()
}

describe('rotateKey re-encrypts every unit (PostgreSQL)', () => {
  for (const worker of [false, true]) {
    it(`leaves every frame, header and row under the new data key only and the key record with one key; the data the same (worker: ${worker})`, async () => {
      const s = await openStore({ storage: 'postgres', url, schema, worker, encryption: { key: keyOf(1) } })
      await fill(s)
      const data = await dumpStore(s)
      const before = await stored()
      expect(new Set(before.units.map((u) => u.kind))).toEqual(new Set(['header', 'frame', 'checkpoint', 'history']))
      expect(gens(before.units)).toEqual([1])
      const progress: number[] = []
      await s.rotateKey(keyOf(2), { onProgress: (p) => progress.push(p.done) })
      expect(progress).toEqual([0, 1, 2, 3])
      const after = await stored()
      expect(after.units.map((u) => [u.kind, u.id])).toEqual(before.units.map((u) => [u.kind, u.id]))
      expect(gens(after.units)).toEqual([2])
      expect(after.keys).toEqual([2])
      await s.close()
      await expect(openStore({ storage: 'postgres', url, schema, worker, encryption: { key: keyOf(1) } })).rejects.toMatchObject({ code: 'KEY_REJECTED' })
      const again = await openStore({ storage: 'postgres', url, schema, worker, encryption: { key: keyOf(2) } })
      expect(await dumpStore(again)).toEqual(data)
      expect((await again.verify()).damaged).toEqual([])
      await again.close()
    }, 60_000)
  }

  it('a rotation stopped midway opens whole with the new key; rotateKey again completes it', async () => {
    const s = await openStore({ storage: 'postgres', url, schema, worker: false, encryption: { key: keyOf(1) } })
    await fill(s)
    const data = await dumpStore(s)
    await expect(
      s.rotateKey(keyOf(2), {
        onProgress: (p) => {
          if (p.done === 1) throw new Error('stop')
        },
      }),
    ).rejects.toThrow('stop')
    await s.close()
    const midway = await stored()
    expect(gens(midway.units)).toEqual([1, 2])
    expect(midway.keys).toEqual([1, 2])
    const again = await openStore({ storage: 'postgres', url, schema, worker: false, encryption: { key: keyOf(2) } })
    expect(await dumpStore(again)).toEqual(data)
    await again.rotateKey(keyOf(2))
    const done = await stored()
    expect(gens(done.units)).toEqual([2])
    expect(done.keys).toEqual([2])
    expect(await dumpStore(again)).toEqual(data)
    await again.close()
  }, 60_000)
})
