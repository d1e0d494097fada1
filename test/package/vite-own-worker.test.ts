// Package: a Vite app whose own worker file (its units) is started by openStore({ worker: () => new Worker(new URL(…)) }) gets it bundled as a worker of its own, and runs under a strict CSP (§6 client API, §19 bundlers find the worker)
// examples/vite-own-worker: a page that starts its own worker.ts (the token-count unit of
// examples/custom-projection, served by serveEngine) through the worker function, built by Vite
// for production against the built package, served on 127.0.0.1 with the page's
// Content-Security-Policy also as a header (which binds the worker's script), run in Chromium.
// Vite bundles worker.ts as a file of its own only because it sees the pattern the function is
// written in; a URL passed as workerUrl would have been copied as it is, with its bare imports.
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { root } from '../support/ensure-built'
import { buildExample, watchPage, type BuiltExample, type Emitted } from '../support/vite'

let app: BuiltExample

beforeAll(async () => {
  app = await buildExample(join(root, 'examples/vite-own-worker/vite.config.ts'))
}, 120_000)

afterAll(async () => {
  await app?.close()
})

const text = (e: Emitted) => (e.type === 'chunk' ? e.code : typeof e.source === 'string' ? e.source : Buffer.from(e.source).toString('utf8'))
const kB = (n: number) => `${(n / 1024).toFixed(1)} kB`
/** The app's worker: worker.ts bundled by Vite's worker build, emitted as an asset named after it. */
const ownWorker = () => {
  const found = app.emitted.filter((e) => /(^|\/)worker-[\w-]+\.js$/.test(e.fileName))
  expect(
    found.map((e) => e.fileName),
    'one file bundled from worker.ts',
  ).toHaveLength(1)
  return found[0]!
}

it("bundles the app's worker file as a worker of its own, with its unit and the engine, and no import left bare", () => {
  const worker = text(ownWorker())
  // The unit's own code (its key, the event it folds) and serveEngine's host are in it.
  expect(worker).toContain('tokenCount')
  expect(worker).toContain('llm/usage')
  // A module worker (worker.format 'es'): its lazy parts are chunks beside it, imported relatively.
  const js = app.emitted.filter((e) => e.fileName.endsWith('.js'))
  for (const e of js) {
    const code = text(e)
    expect(code, e.fileName).not.toMatch(/\bfrom\s*["']sessionfold(\/[\w/]+)?["']/)
    expect(code, e.fileName).not.toMatch(/\bimport\s*\(\s*["']sessionfold(\/[\w/]+)?["']\s*\)/)
    expect(code, e.fileName).not.toMatch(/\bfrom\s*["']zod["']/)
  }
  // The page names the worker's file, with the option's URL rewritten to it.
  const entry = app.emitted.find((e): e is Extract<Emitted, { type: 'chunk' }> => e.type === 'chunk' && e.isEntry)!
  expect(entry.code).toContain(ownWorker().fileName.split('/').pop())
  // The unit is in no file of the page (main.ts takes only its type), and zod in none it loads
  // at start (the entry and its static imports: zod is in the engine for worker: false only).
  const chunks = app.emitted.filter((e): e is Extract<Emitted, { type: 'chunk' }> => e.type === 'chunk')
  expect(chunks.flatMap((c) => c.moduleIds).filter((m) => /\/token-count\.ts$/.test(m))).toEqual([])
  const start = new Set([entry.fileName])
  for (const file of start) for (const imported of chunks.find((c) => c.fileName === file)!.imports) start.add(imported)
  const loaded = chunks.filter((c) => start.has(c.fileName)).flatMap((c) => c.moduleIds)
  expect(loaded.some((m) => m.endsWith('/main.ts'))).toBe(true)
  expect(loaded.filter((m) => /node_modules\/zod\//.test(m))).toEqual([])
})

it('runs in Chromium under a strict CSP: the engine in the app’s worker folds its unit, read in the page', async () => {
  const page = await app.context.newPage()
  const watch = watchPage(app, page)
  const violations: string[] = []
  await page.exposeFunction('reportViolation', (v: string) => violations.push(v))
  await page.addInitScript(() =>
    addEventListener('securitypolicyviolation', (e) =>
      (globalThis as unknown as { reportViolation(v: string): void }).reportViolation(`${e.violatedDirective} ${e.blockedURI}`),
    ),
  )
  try {
    await page.goto(app.url)
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('ready'), undefined, { timeout: 20_000 })
    expect(await page.textContent('#status')).toBe('ready: 1545 tokens, asOfSeq 1')
    expect(await page.textContent('#tokens')).toBe('1545 tokens in 2 turns')
    // The app's event definition, checked in its worker: nothing written (asOfSeq above).
    expect(await page.textContent('#refused')).toBe('tokens: -1 was INVALID_ARGUMENT')
    // The engine ran in the app's worker, and the built-in one was never loaded.
    const worker = ownWorker().fileName
    expect(page.workers().map((w) => new URL(w.url()).pathname.slice(1))).toEqual([worker])
    expect([...watch.fetched].filter((f) => /worker-entry/.test(f))).toEqual([])
    expect(watch.fetched).toContain(worker)
    // The header binds the worker's script too (a meta tag binds only the page), and zod runs
    // jitless there, as worker.ts's first import sets it. (DevTools' evaluate is exempt from a
    // CSP, so the worker's own eval is not tried from here.)
    const response = await page.request.get(new URL(worker, app.url).href)
    expect(response.headers()['content-security-policy']).toContain("script-src 'self'")
    const [running] = page.workers()
    expect(await running!.evaluate(() => (globalThis as { __zod_globalConfig?: { jitless?: boolean } }).__zod_globalConfig?.jitless)).toBe(true)

    const rows = app.emitted
      .filter((e) => watch.fetched.has(e.fileName))
      .map((e) => {
        const raw = Buffer.from(text(e))
        return { file: e.fileName, raw: raw.length, gzip: gzipSync(raw, { level: 9 }).length, worker: e.fileName === worker }
      })
    console.log(
      `Vite build of examples/vite-own-worker, the files the page and its worker fetched (gzip level 9):\n${rows
        .map((r) => `  ${r.file.padEnd(48)} ${kB(r.raw).padStart(9)} ${kB(r.gzip).padStart(9)} gzip${r.worker ? '  (the app’s worker)' : ''}`)
        .join('\n')}`,
    )
    expect(watch.problems).toEqual([])
    expect(violations).toEqual([])
  } finally {
    watch.stop()
    await page.close()
  }
})
