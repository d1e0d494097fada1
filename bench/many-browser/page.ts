// The in-page part of bench/many.ts (npm run bench:many), served by Vite from this source tree:
// the page's own openStore({ name }) (IndexedDB on disk, the engine in its default module Web
// Worker). The driver calls it one step at a time (window.manyBench): build a source database,
// a changesSince pass from null over it (a store opened afresh; its batches kept here, in the
// page), and the import of the last pass's batches into a new database, deleted after. The steps
// are bench/support/many-work.ts, the same as in Node; the timing happens there.
import type { ChangeBatch, EventInput } from 'sessionfold'
import { openStore } from 'sessionfold'
import { buildShape, importBatches, passOver, type ShapeSize } from '../support/many-work'
import { keepWarnings, deleteDatabase } from '../support/page-helpers'

export interface ManyPageApi {
  info(): { userAgent: string; hardwareConcurrency: number }
  /** Builds database `name`: `want` sessions through openStore({ name, durability: 'relaxed' }); ms. */
  build(name: string, want: ShapeSize, inputJson: string, concurrency: number): Promise<number>
  /** A new openStore({ name }) (untimed), the pass (timed), the store closed; the batches kept for importLast. */
  pass(name: string, want: ShapeSize): Promise<{ ms: number; batches: number; events: number; entries: number; sessions: number }>
  /** The last pass's batches applied into a new database `name` (open and delete untimed): the import's ms, and the close after it apart. */
  importLast(name: string, want: ShapeSize): Promise<{ ms: number; closeMs: number }>
  /** Databases whose name starts with `prefix`. */
  leftovers(prefix: string): Promise<string[]>
  warnings(): string[]
}

const warnings = keepWarnings()

let lastBatches: ChangeBatch[] = []

const api: ManyPageApi = {
  info: () => ({ userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency }),

  async build(name, want, inputJson, concurrency) {
    const t0 = performance.now()
    const store = await openStore({ name, durability: 'relaxed' })
    try {
      await buildShape(store, want, JSON.parse(inputJson) as EventInput, concurrency, (made) =>
        console.log(`[bench] building ${name}: ${made} of ${want.sessions} sessions`),
      )
    } finally {
      await store.close()
    }
    return performance.now() - t0
  },

  async pass(name, want) {
    lastBatches = []
    const store = await openStore({ name })
    try {
      const p = await passOver(store, want)
      lastBatches = p.batches
      return { ms: p.ms, batches: p.batches.length, events: p.events, entries: p.entries, sessions: p.sessions }
    } finally {
      await store.close()
    }
  },

  async importLast(name, want) {
    const store = await openStore({ name })
    let closed = false
    try {
      const ms = await importBatches(store, lastBatches, want)
      const t0 = performance.now()
      await store.close()
      closed = true
      return { ms, closeMs: performance.now() - t0 }
    } finally {
      if (!closed) await store.close()
      lastBatches = []
      await deleteDatabase(name)
    }
  },

  async leftovers(prefix) {
    return (await indexedDB.databases()).flatMap((d) => (d.name?.startsWith(prefix) ? [d.name] : []))
  },

  warnings: () => [...warnings],
}

;(window as unknown as { manyBench?: ManyPageApi }).manyBench = api
