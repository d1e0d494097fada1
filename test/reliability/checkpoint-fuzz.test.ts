// Reliability: 1,000 corrupted checkpoint rows — cold and live reads still equal a full refold (§4 checkpoints and cold reads)
// Rows are stored plain here (compression: 'none'): the mutations work on the row's JSON; the
// record codec's own tampering checks are test/codec/codec.test.ts.
// Corruption of checkpoints: 1,000 random mutations of stored rows (bit flips, truncation,
// wrong `ver`, another life's witness, valid JSON of the wrong shape, with and without a
// matching checksum). Whatever is stored, the values an app reads (cold through `observe`,
// and live through `openSession` every fourth run) are the full refold's, and no call throws.
import fc from 'fast-check'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { folderOf } from '../../src/backends/fs/layout'
import { openStore, type ProjectionSnapshot } from 'sessionfold'
import { hash53 } from '../../src/core/hash'

const RUNS = Number(process.env.CHECKPOINT_FUZZ_RUNS ?? 1000)
let dir: string
const reference = new Map<string, ProjectionSnapshot>()
const pristine = new Map<string, string>()
const cpPath = (id: string) => join(dir, 'sessions', folderOf(id), 'checkpoint.json')

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-cpfuzz-'))
  const store = await openStore({ storage: 'fs', dir, worker: false, compression: 'none', checkpoint: { everyEvents: 50 } })
  const p = await store.createSession({ id: 'p' })
  for (let t = 0; t < 4; t++) {
    await p.append([
      { type: 'turn/start', time: 1000 * t },
      ...Array.from({ length: 60 }, (_, k) => ({ type: 'msg', data: { t, k }, time: 1000 * t + k })),
      { type: 'turn/end', time: 1000 * t + 500 },
    ])
    const child = await p.spawn({
      mode: t % 2 ? 'continuable' : 'one-shot',
      label: `job ${t}`,
      id: `p-c${t}`,
      events: [
        { type: 'turn/start', time: 5 },
        { type: 'turn/end', time: 9 },
      ],
    })
    await child.close()
  }
  await p.close()
  await store.close()
  // The reference: each session folded from its whole log, with no checkpoint to start from.
  for (const id of ['p', 'p-c1']) {
    pristine.set(id, await readFile(cpPath(id), 'utf8'))
    await rm(cpPath(id))
  }
  const plain = await openStore({ storage: 'fs', dir, worker: false, compression: 'none', checkpoint: { everyEvents: 1e9, everyMs: 1e9 } })
  for (const id of ['p', 'p-c1']) {
    const view = await plain.observe(id)
    reference.set(id, view.projections.snapshot())
    await view.close()
  }
  await plain.close()
  for (const [id, text] of pristine) await writeFile(cpPath(id), text)
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

type Row = { sum?: unknown; witness?: Record<string, unknown>; rows?: Record<string, { ver: number; seq: number; val: unknown }> }
const resum = (row: Row) => ({ ...row, sum: hash53(JSON.stringify({ witness: row.witness, rows: row.rows })) })
const UNITS = ['subagent', 'subagentCatalog', 'subagentTiming', 'sessionMeta'] as const

/** A mutation: what it is called (for the tally and for a failing case's report) and how it turns the stored text into another. */
type Mutation = { kind: string; apply: (text: string) => string }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })).map(([at, bit]) => ({
    kind: 'bit flip',
    apply: (t: string) => {
      const b = Buffer.from(t)
      b[at % b.length] = b[at % b.length]! ^ (1 << bit)
      return b.toString('latin1')
    },
  })),
  fc.nat().map((n) => ({ kind: 'truncation', apply: (t: string) => t.slice(0, n % t.length) })),
  fc
    .tuple(
      fc.constantFrom(...UNITS),
      fc.integer({ min: -3, max: 50 }).filter((v) => v !== 1),
      fc.boolean(),
    )
    .map(([unit, ver, sum]) => ({
      kind: `wrong ver${sum ? ', summed' : ''}`,
      apply: (t: string) => {
        const row = JSON.parse(t) as Row
        row.rows![unit]!.ver = ver
        return JSON.stringify(sum ? resum(row) : row)
      },
    })),
  fc.tuple(fc.constantFrom('createdAt', 'id', 'cwd', 'origin', 'version'), fc.jsonValue(), fc.boolean()).map(([field, value, sum]) => ({
    kind: `swapped witness${sum ? ', summed' : ''}`,
    apply: (t: string) => {
      const row = JSON.parse(t) as Row
      const witness = { ...row.witness!, [field]: field === 'createdAt' ? Number(row.witness!.createdAt) + 1 : value }
      if (JSON.stringify(witness) === JSON.stringify(row.witness)) witness.createdAt = -1
      row.witness = witness
      return JSON.stringify(sum ? resum(row) : row)
    },
  })),
  fc.tuple(fc.constantFrom(...UNITS), fc.jsonValue(), fc.boolean()).map(([unit, val, sum]) => ({
    kind: `wrong-shape state${sum ? ', summed' : ''}`,
    apply: (t: string) => {
      const row = JSON.parse(t) as Row
      // A shape the unit's schema cannot accept: the JSON value wrapped in a marker object.
      row.rows![unit]!.val = { wrong: val, shape: [val] }
      return JSON.stringify(sum ? resum(row) : row)
    },
  })),
  fc.jsonValue().map((value) => ({ kind: 'other JSON', apply: () => JSON.stringify(value) ?? 'null' })),
  fc.tuple(fc.constantFrom(...UNITS), fc.integer({ min: -5, max: 5000 })).map(([unit, seq]) => ({
    kind: 'moved seq',
    apply: (t: string) => {
      const row = JSON.parse(t) as Row
      row.rows![unit]!.seq = row.rows![unit]!.seq === seq ? seq + 1 : seq
      return JSON.stringify(row)
    },
  })),
)

describe('checkpoint corruption', () => {
  it(`reads always equal a full refold, ${RUNS} mutations`, async () => {
    const tally = new Map<string, number>()
    let runs = 0
    let writerRuns = 0
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('p', 'p-c1'), mutation, async (id, m) => {
        const text = m.apply(pristine.get(id)!)
        await writeFile(cpPath(id), text)
        tally.set(m.kind, (tally.get(m.kind) ?? 0) + 1)
        const errors: unknown[] = []
        // No checkpoint writes: what is read must come from the mutated row, every run.
        const store = await openStore({ storage: 'fs', dir, worker: false, compression: 'none', checkpoint: { everyEvents: 1e9, everyMs: 1e9 } })
        try {
          const view = await store.observe(id)
          expect(view.projections.snapshot()).toEqual(reference.get(id))
          view.projections.subscribe((s) => void s) // a subscriber is served without a throw
          await view.close()
          // Every fourth run also opens it for writing: the live path restores from the same row
          // (and, closing, replaces a rejected row: that write, with its fsync, is why not every run).
          if (++runs % 4 === 0) {
            const writer = await store.openSession(id)
            expect(writer.projections.snapshot()).toEqual(reference.get(id))
            await writer.close()
            writerRuns++
          }
        } catch (err) {
          errors.push(err)
        } finally {
          await store.close()
          await writeFile(cpPath(id), pristine.get(id)!)
        }
        expect(errors).toEqual([])
      }),
      { numRuns: RUNS },
    )
    console.log(`checkpoint mutations: ${[...tally].map(([k, n]) => `${k} ${n}`).join(', ')}; ${writerRuns} also opened for writing`)
  }, 300_000)
})
