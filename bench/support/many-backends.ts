// The stores bench/many.ts (issue 34) measures, each behind one small interface: fs and
// PostgreSQL through Node's openStore() with its defaults (the engine in a worker_threads
// worker), IndexedDB through the page's own openStore({ name }) in headless Chromium (its module
// Web Worker), the page served by Vite on 127.0.0.1 (bench/many-browser/). Each keeps the
// batches of its last pass for the import that follows it; sources and imports live in the
// run's temp folder, the throwaway cluster, or the browser profile, and go with them.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { serveBenchPage } from './vite-page'
import { type ChangeBatch, type EventInput, openStore, type OpenStoreOptions } from '../../src/index-node'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../test/support/chromium'
import { startCluster } from '../../test/support/postgres'
import type { ManyPageApi } from '../many-browser/page'
import { settlesWithin } from '../stats'
import { buildShape, importBatches, passOver, type ShapeSize } from './many-work'

export type BackendKey = 'fs' | 'postgres' | 'chromium'
export const BACKEND_KEYS: readonly BackendKey[] = ['fs', 'postgres', 'chromium']
export type Shape = 'small' | 'big'

export interface PassFigures {
  ms: number
  batches: number
  events: number
}

export interface ManyBackend {
  key: BackendKey
  /** Where it runs, for the report (the server's or the browser's version). */
  version: string
  /** Builds the source store of `shape` (untimed); seconds. */
  build(shape: Shape, want: ShapeSize): Promise<number>
  /** A store opened afresh on the source of `shape` (untimed), its pass from null (timed), closed. */
  pass(shape: Shape, want: ShapeSize): Promise<PassFigures>
  /**
   * The last pass's batches applied into a new empty store (open and removal untimed): the
   * import's ms, and apart the store's close after it (the session list's rows of the sessions it made).
   */
  importLast(want: ShapeSize): Promise<ImportFigures>
  close(): Promise<void>
}

export interface BackendOptions {
  root: string
  input: EventInput
  buildConcurrency: number
  stallMs: number
  log: (msg: string) => void
}

export interface ImportFigures {
  ms: number
  closeMs: number
}

/** Where a Node store of the run keeps a source or an import, and how an import goes after. */
interface NodeStores {
  key: 'fs' | 'postgres'
  version: string
  /** The options of the source store of `shape` (made on first use). */
  source(shape: Shape): Promise<OpenStoreOptions>
  /** The options of a new empty store, and its removal. */
  target(): Promise<{ options: OpenStoreOptions; drop(): Promise<void> }>
  close(): Promise<void>
}

/** A store through Node's openStore() with its defaults: sources built relaxed, passes and imports measured strict. */
function nodeBackend(o: BackendOptions, stores: NodeStores): ManyBackend {
  let last: ChangeBatch[] = []
  return {
    key: stores.key,
    version: stores.version,
    async build(shape, want) {
      const t0 = performance.now()
      const store = await openStore({ ...(await stores.source(shape)), durability: 'relaxed' })
      try {
        await buildShape(store, want, o.input, o.buildConcurrency, (n) => o.log(`building ${stores.key} ${shape}: ${n} of ${want.sessions} sessions`))
      } finally {
        await store.close()
      }
      return (performance.now() - t0) / 1000
    },
    async pass(shape, want) {
      const store = await openStore(await stores.source(shape))
      try {
        const p = await settlesWithin(passOver(store, want), 'a changesSince pass', o.stallMs)
        last = p.batches
        return { ms: p.ms, batches: p.batches.length, events: p.events }
      } finally {
        await store.close()
      }
    },
    async importLast(want) {
      const { options, drop } = await stores.target()
      const store = await openStore(options)
      let closed = false
      try {
        const ms = await settlesWithin(importBatches(store, last, want), 'an import', o.stallMs)
        const t0 = performance.now()
        await settlesWithin(store.close(), 'the close after an import', o.stallMs)
        closed = true
        return { ms, closeMs: performance.now() - t0 }
      } finally {
        last = []
        if (!closed) await store.close()
        await drop()
      }
    },
    close: () => stores.close(),
  }
}

/** fs: a folder per source, a new folder per import (removed after). */
export function fsBackend(o: BackendOptions): ManyBackend {
  let imports = 0
  return nodeBackend(o, {
    key: 'fs',
    version: '',
    source: async (shape) => ({ storage: 'fs', dir: join(o.root, shape) }),
    async target() {
      const dir = join(o.root, `import-${imports++}`)
      return { options: { storage: 'fs', dir }, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) }
    },
    close: async () => {},
  })
}

/** PostgreSQL: a throwaway cluster (fsync on), a database per source, a new database per import (dropped after). */
export async function postgresBackend(o: BackendOptions): Promise<ManyBackend> {
  const cluster = await startCluster()
  const sources: Partial<Record<Shape, string>> = {}
  let imports = 0
  return nodeBackend(o, {
    key: 'postgres',
    version: `PostgreSQL ${(await cluster.psql('SHOW server_version')).trim()}`,
    source: async (shape) => ({ storage: 'postgres', url: (sources[shape] ??= await cluster.createDatabase(`many_${shape}`)) }),
    async target() {
      const name = `import_${imports++}`
      const url = await cluster.createDatabase(name)
      return { options: { storage: 'postgres', url }, drop: () => cluster.psql(`DROP DATABASE ${name} WITH (FORCE)`).then(() => {}) }
    },
    close: () => cluster.stop(),
  })
}

/** IndexedDB in headless Chromium: a database per source, a new database per import (deleted after). */
export async function chromiumBackend(o: BackendOptions): Promise<ManyBackend> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`)
  let server: ViteDevServer | undefined
  let context: BrowserContext | undefined
  const shutdown = async () => {
    await context?.close().catch((err) => o.log(`closing Chromium: ${err}`))
    await server?.close().catch((err) => o.log(`closing vite: ${err}`))
  }
  let page: Page
  let version: string
  try {
    const served = await serveBenchPage('many-browser', join(o.root, 'vite'))
    server = served.server
    context = await chromium.launchPersistentContext(join(o.root, 'profile'), { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS })
    version = `Chromium ${context.browser()?.version() ?? ''}`
    page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (m) => {
      const text = m.text()
      if (text.startsWith('[bench] ')) o.log(text.slice(8))
      else if ((m.type() === 'error' || m.type() === 'warning') && !m.location().url.endsWith('/favicon.ico')) o.log(`page ${m.type()}: ${text}`)
    })
    page.on('pageerror', (err) => o.log(`page error: ${err.message}`))
    await page.goto(served.url)
    await page.waitForFunction(() => typeof (window as unknown as { manyBench?: unknown }).manyBench === 'object', null, { timeout: o.stallMs })
    o.log(`${version}, profile (IndexedDB on disk) in ${join(o.root, 'profile')}`)
  } catch (err) {
    await shutdown()
    throw err
  }
  /** Calls window.manyBench[name](...args) in the page; the timing happens there. */
  const call = async <K extends keyof ManyPageApi>(name: K, ...args: Parameters<ManyPageApi[K]>): Promise<Awaited<ReturnType<ManyPageApi[K]>>> => {
    // An inline function only: tsx's __name helper is not in the page.
    const result = page.evaluate(
      ({ name, args }) => {
        const api = (window as unknown as { manyBench: Record<string, (...a: unknown[]) => unknown> }).manyBench
        return api[name]!(...args)
      },
      { name: name as string, args: args as unknown[] },
    )
    return (await settlesWithin(result, `the page's ${String(name)}()`, o.stallMs)) as Awaited<ReturnType<ManyPageApi[K]>>
  }
  const stamp = Date.now().toString(36)
  let imports = 0
  return {
    key: 'chromium',
    version,
    build: async (shape, want) => (await call('build', `many-${stamp}-${shape}`, want, JSON.stringify(o.input), o.buildConcurrency)) / 1000,
    async pass(shape, want) {
      const p = await call('pass', `many-${stamp}-${shape}`, want)
      return { ms: p.ms, batches: p.batches, events: p.events }
    },
    importLast: (want) => call('importLast', `many-${stamp}-import-${imports++}`, want),
    async close() {
      const left = await call('leftovers', `many-${stamp}-import-`).catch(() => [])
      if (left.length > 0) o.log(`left behind in the profile: ${left.join(', ')}`)
      for (const w of (await call('warnings').catch(() => [] as string[])).slice(0, 10)) o.log(`page: ${w}`)
      await shutdown()
    },
  }
}
