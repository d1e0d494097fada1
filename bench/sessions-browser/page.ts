// The in-page part of bench/sessions.ts (npm run bench:sessions), served by Vite from this source
// tree: the page's own openStore({ name }) (IndexedDB on disk, the engine in its default module
// Web Worker). The driver calls it one step at a time (window.sessionsBench): build a database of
// many sessions, then cold and warm first pages of store.sessions({ limit }); the timing happens
// here, the statistics in Node.
import { openStore } from 'sessionfold'
import { buildSessions, type BuildOptions, type BuildResult } from '../support/session-build'
import { keepWarnings } from '../support/page-helpers'

export interface ColdPage {
  /** ms of openStore({ name }) (a new worker, its engine and database opened). */
  open: number
  /** ms from store.sessions({ limit }) to its first listener call (loaded). */
  page: number
  /** The same for a second list on the same open store (the first one still open). */
  warm: number
  rows: number
  firstTitle: string | null
}

export interface Usage {
  /** navigator.storage.estimate().usage, bytes. */
  usage: number
  /** Its usageDetails.indexedDB (Chromium), bytes; -1 when absent. */
  indexedDB: number
}

export interface SessionsPageApi {
  info(): { userAgent: string; hardwareConcurrency: number }
  /** Builds database `name` through openStore({ name, durability }) (see bench/support/session-build.ts). */
  build(name: string, o: BuildOptions, durability: 'strict' | 'relaxed'): Promise<BuildResult>
  /** A new openStore({ name }), a first page, a second list's first page, all closed after. */
  coldPage(name: string, limit: number): Promise<ColdPage>
  usage(): Promise<Usage>
  warnings(): string[]
}

const warnings = keepWarnings()

const now = () => performance.now()
const log = (line: string) => console.log(`[bench] ${line}`)

type Store = Awaited<ReturnType<typeof openStore>>
type Items = Parameters<Parameters<ReturnType<Store['sessions']>['subscribe']>[0]>[0]

/** A new list's first call: ms from sessions() to it, the rows, and the list (open). */
async function timedList(store: Store, limit: number): Promise<{ ms: number; items: Items; close: () => void }> {
  const t0 = now()
  const list = store.sessions({ limit })
  const items = await new Promise<Items>((resolve, reject) => list.subscribe((rows, meta) => (meta.error ? reject(meta.error) : resolve(rows))))
  return { ms: now() - t0, items, close: () => list.close() }
}

const api: SessionsPageApi = {
  info: () => ({ userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency }),

  async build(name, o, durability) {
    const store = await openStore({ name, durability })
    try {
      return await buildSessions(store, o, (line) => log(`chromium ${name}: ${line}`))
    } finally {
      await store.close()
    }
  },

  async coldPage(name, limit) {
    const t0 = now()
    const store = await openStore({ name })
    const open = now() - t0
    try {
      const first = await timedList(store, limit)
      const second = await timedList(store, limit)
      first.close()
      second.close()
      return { open, page: first.ms, warm: second.ms, rows: first.items.length, firstTitle: first.items[0]?.title ?? null }
    } finally {
      await store.close()
    }
  },

  async usage() {
    const e = (await navigator.storage.estimate()) as StorageEstimate & { usageDetails?: { indexedDB?: number } }
    return { usage: e.usage ?? 0, indexedDB: e.usageDetails?.indexedDB ?? -1 }
  },

  warnings: () => [...warnings],
}

;(window as unknown as { sessionsBench?: SessionsPageApi }).sessionsBench = api
