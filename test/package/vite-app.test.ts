// Package: a Vite app bundles the built package, runs its worker in Chromium under a strict CSP, ships the worker minified, and emits no JS the page cannot load (§6 entry points)
// A web app that bundles sessionfold with Vite gets a working worker without copying files:
// build examples/vite-app against the built package, serve it on 127.0.0.1, run it in Chromium.
// What the app ships is measured on Vite's own output: Vite copies the worker as an asset, as
// it is (it finds it by `new URL(..., import.meta.url)`, and does not minify assets), so the
// package's worker must be small already. Every JS file Vite emits is fetched by the page: at
// start (the entry, its imports, the worker connection, the worker), or, for the engine that
// runs in the page's own thread (worker: false, or no Worker constructor), when the page has no
// Worker: that engine, with zod, is the only code the page with a worker never loads.
// A page that types an app's own projection as the guide advises (examples/custom-projection/
// main.ts's import of the unit's module) keeps that so: neither the unit nor zod in the page.
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { build } from 'vite'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { root } from '../support/ensure-built'
import { buildExample, watchPage, type BuiltExample, type Emitted } from '../support/vite'

const config = join(root, 'examples/vite-app/vite.config.ts')
// Minified, the worker was 31.0 kB gzip when its schemas moved to zod/mini, of which a bundler
// keeps only what they use (with classic zod, whose schemas pin every method and the JSON
// Schema converters, it was 47.9 kB then); it is 45.5 kB with HTTP sync, time travel and the
// record codec (about 2 kB), 47.4 kB with rotateKey's re-encryption (replacing records in
// place, about 1.8 kB), 53.1 kB with the chain that keeps sync from splicing histories (its
// hash, marks and checks), key-value records, the replication's status link and a delete seen
// by every view (about 5.7 kB), 55.6 kB with the schemas of the host's inputs (parsed by the
// engine) and the sessionMeta unit (about 1.1 kB), 58.8 kB with the session index behind
// store.sessions() (about 3.2 kB), 60.4 kB with deleteSession's tree (all locked first, children
// first) and the replication's retry of sessions the server skipped (about 1.6 kB), 61.2 kB with
// the tombstones that carry a delete to every device, 63.0 kB with conflicts resolved by forks
// (the move, the log replaced under open views, the replication's queue of them: about 1.8 kB).
// 64.4 kB with the OPFS store's code moved to a worker of its own, 66.2 kB with an app's events
// checked and upcast in the engine (defineEvent, its registry, the reserved events' definitions:
// about 1.8 kB), 68.3 kB with getSessions and createSessions (the walk's and the import's groups:
// an import of small sessions about ten times as fast in Chromium). 69 kB: a little room, not room
// for classic zod to come back (it added about 17 kB). 69.3 kB with the records' getMany and
// writeMany (IndexedDB's, the codec's, the session index's groups of rows: the list's rows after
// an import of 500 small sessions in 0.45 s rather than 2.9 s): 70 kB.
const WORKER_MAX_GZIP = 70 * 1024
// The worker of a store whose storage is 'opfs' is the default one with the file adapter (its
// group commit, feed, session index and records, on the origin's private file system): about
// 16.6 kB more. A page on IndexedDB never loads it. 82.7 kB with getSessions (IndexedDB's, the
// codec's, the walk's groups of lookups) and a close that ends its writers together, 83.6 kB
// with createSessions (the import's groups), 85.1 kB with the records' getMany and writeMany (the
// file adapter's, its index entries made in place, the session index's groups of rows): 86 kB.
const OPFS_WORKER_MAX_GZIP = 86 * 1024

let app: BuiltExample
let emitted: Emitted[] = []
let url: string

beforeAll(async () => {
  app = await buildExample(config)
  emitted = app.emitted
  url = app.url
}, 120_000)

afterAll(async () => {
  await app?.close()
})

/**
 * Opens the app in a new page (with no Worker constructor if `noWorker`), waits until it is
 * ready, and returns what it showed, the workers it started, the problems it met and the JS
 * files (paths under the build's root) that it and its workers fetched.
 */
async function open(noWorker: boolean) {
  const page = await app.context.newPage()
  const { problems, fetched, stop } = watchPage(app, page)
  // A page where no worker can start (as in a service worker): the engine runs in its thread.
  if (noWorker) await page.addInitScript(() => delete (globalThis as { Worker?: unknown }).Worker)
  try {
    await page.goto(url)
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('ready'), undefined, { timeout: 20_000 })
    return {
      status: await page.textContent('#status'),
      children: await page.$$eval('#children li', (els) => els.map((e) => e.textContent)),
      workers: page.workers().map((w) => w.url()),
      problems,
      fetched,
    }
  } finally {
    stop()
    await page.close()
  }
}

const js = () => emitted.filter((e) => e.fileName.endsWith('.js'))
const bytes = (e: Emitted) => Buffer.from(e.type === 'chunk' ? e.code : e.source)
const kB = (n: number) => `${(n / 1024).toFixed(1)} kB`
const workerAsset = (name = 'browser') => {
  const found = emitted.filter((e) => e.type === 'asset' && new RegExp(`(^|/)worker-entry\\.${name}-[\\w-]+\\.js$`).test(e.fileName))
  expect(found.map((e) => e.fileName)).toHaveLength(1)
  return found[0]!
}

it('builds with Vite and runs in Chromium with the engine in its Web Worker, under a strict CSP', async () => {
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:/)
  const app = await open(false)
  expect(app.status).toBe('ready: 3 children, asOfSeq 2')
  expect(app.children).toEqual(['planner (continuable)', 'coder (continuable)', 'reviewer (continuable)'])
  // The engine ran in a worker of the page, not in the page itself.
  expect(app.workers.some((w) => w.includes('worker-entry.browser'))).toBe(true)
  expect(app.problems).toEqual([])
})

it(`ships the worker minified (at most ${kB(WORKER_MAX_GZIP)} gzip; the OPFS one ${kB(OPFS_WORKER_MAX_GZIP)}), and every JS file Vite emits is one the page loads`, async () => {
  const worker = workerAsset()
  const withWorker = await open(false)
  const inThread = await open(true)
  // Without a Worker the same app works, with the engine in the page and no worker started.
  expect(inThread.status).toBe('ready: 3 children, asOfSeq 2')
  expect(inThread.workers).toEqual([])
  expect(inThread.fetched.has(worker.fileName)).toBe(false)

  const rows = js().map((e) => {
    const raw = bytes(e)
    const by = [withWorker.fetched.has(e.fileName) && 'the page', inThread.fetched.has(e.fileName) && 'the page without a Worker'].filter(Boolean).join(', ')
    return { file: e.fileName, raw: raw.length, gzip: gzipSync(raw, { level: 9 }).length, by: e === worker ? `${by} (the worker)` : by }
  })
  console.log(
    `Vite build of examples/vite-app (gzip level 9):\n${rows.map((r) => `  ${r.file.padEnd(48)} ${kB(r.raw).padStart(9)} ${kB(r.gzip).padStart(9)} gzip  loaded by ${r.by || 'nothing'}`).join('\n')}`,
  )

  const shipped = rows.find((r) => r.file === worker.fileName)!
  expect(shipped.gzip, `worker asset ${kB(shipped.gzip)} gzip`).toBeLessThanOrEqual(WORKER_MAX_GZIP)
  const opfsWorker = rows.find((r) => r.file === workerAsset('opfs').fileName)!
  expect(opfsWorker.gzip, `OPFS worker asset ${kB(opfsWorker.gzip)} gzip`).toBeLessThanOrEqual(OPFS_WORKER_MAX_GZIP)
  expect(opfsWorker.by, 'the OPFS worker, on a page whose store is in IndexedDB').toBe('')

  // Every JS file is fetched by the page, with or without a Worker, or is a feature's lazy chunk
  // (a tree watch, a live tail, a backend the page does not use) that a fetched file imports
  // when that feature is used: none is dead weight.
  const fetched = new Set([...withWorker.fetched, ...inThread.fetched])
  const lazy = new Set(emitted.flatMap((e) => (e.type === 'chunk' && fetched.has(e.fileName) ? e.dynamicImports : [])))
  // (The OPFS worker is for a store whose storage is 'opfs': this page's is in IndexedDB.)
  expect(rows.filter((r) => !r.by && !lazy.has(r.file) && r !== opfsWorker).map((r) => r.file)).toEqual([])
  // With a worker, the page fetches its entry, the entry's imports and the worker.
  const entry = emitted.find((e): e is Extract<Emitted, { type: 'chunk' }> => e.type === 'chunk' && e.isEntry)!
  for (const f of [entry.fileName, ...entry.imports, worker.fileName]) expect(withWorker.fetched, f).toContain(f)
  // And no zod outside the worker: zod is in the files only the in-thread engine loads.
  const zodIn = (e: Emitted) => e.type === 'chunk' && e.moduleIds.some((m) => /node_modules\/zod\//.test(m))
  expect(
    js()
      .filter((e) => withWorker.fetched.has(e.fileName) && zodIn(e))
      .map((e) => e.fileName),
  ).toEqual([])
  expect(
    js()
      .filter(zodIn)
      .every((e) => inThread.fetched.has(e.fileName)),
  ).toBe(true)
  expect(inThread.problems).toEqual([])
})

it("keeps an app's own unit and zod out of a page that takes its type as the guide advises", async () => {
  // The guide's main.ts line that imports the unit's module, in a page of its own.
  const main = await readFile(join(root, 'examples/custom-projection/main.ts'), 'utf8')
  const advised = /^import .*'\.\/token-count'.*$/m.exec(main)?.[0]
  expect(advised, 'examples/custom-projection/main.ts imports ./token-count').toBeDefined()
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-vite-types-'))
  try {
    await mkdir(join(dir, 'node_modules'))
    await symlink(join(root, 'node_modules/zod'), join(dir, 'node_modules/zod'), 'dir') // the app's own dependency
    await copyFile(join(root, 'examples/custom-projection/token-count.ts'), join(dir, 'token-count.ts'))
    await writeFile(join(dir, 'index.html'), '<!doctype html>\n<p id="count"></p>\n<script type="module" src="./main.ts"></script>\n')
    await writeFile(
      join(dir, 'main.ts'),
      `import { openStore } from 'sessionfold'\n${advised}\n
const session = await (await openStore({ name: 'types' })).createSession()
document.querySelector('#count')!.textContent = String(session.projections.get('tokenCount')?.total ?? 0)\n`,
    )
    const out = await build({
      root: dir,
      configFile: false,
      logLevel: 'silent',
      resolve: { alias: { sessionfold: root } },
      build: { target: 'es2022', write: false },
    })
    const chunks = (Array.isArray(out) ? out : [out])
      .flatMap((o) => (o as { output: Emitted[] }).output)
      .filter((e): e is Extract<Emitted, { type: 'chunk' }> => e.type === 'chunk')
    // What the page loads at start: its entry and what that imports statically, transitively.
    const start = new Set(chunks.filter((c) => c.isEntry).map((c) => c.fileName))
    for (const file of start) for (const imported of chunks.find((c) => c.fileName === file)!.imports) start.add(imported)
    const loaded = chunks.filter((c) => start.has(c.fileName))
    expect(loaded.flatMap((c) => c.moduleIds).some((m) => m.endsWith('/index.html') || m.endsWith('/main.ts'))).toBe(true)
    expect(
      loaded.flatMap((c) => c.moduleIds).filter((m) => /node_modules\/zod\/|\/token-count\.ts$/.test(m)),
      `${advised}`,
    ).toEqual([])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
