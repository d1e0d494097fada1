// Package: what is published — publint, attw, sizes, the built ESM and CJS run, no eval in the bundles (§6 entry points)
// The published package: its shape (publint, attw), its sizes, that the built files run, and
// that our bundles use no eval or new Function (so the SDK runs under a strict CSP).
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'
import { publint } from 'publint'
import { beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt, root } from '../support/ensure-built'

const dist = (p: string) => join(root, 'dist', p)

beforeAll(ensureBuilt, 120_000)

/** min+gzip bytes of a file bundled with what it imports statically (dependencies excluded). */
async function minGzip(file: string, external: string[] = ['idb', 'comlink', 'zod', 'zod/*']): Promise<number> {
  const out = await build({
    entryPoints: [file],
    bundle: true,
    minify: true,
    format: 'esm',
    write: false,
    platform: 'browser',
    external,
    plugins: [
      {
        name: 'no-lazy-chunks',
        setup(b) {
          // The client loads the in-thread engine only for worker: false, and a backend's code only
          // where an engine opens it (src/backends/<name>/registration.ts): lazy chunks, split off
          // by an app's bundler as by this build, not part of the entry.
          b.onResolve({ filter: /^\.\.?\//, namespace: 'file' }, (args) => (args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined))
        },
      },
    ],
  })
  return gzipSync(out.outputFiles[0]!.contents, { level: 9 }).length
}

/** The built JavaScript files under `dir` (the self-contained browser worker aside). */
const builtFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? builtFiles(join(dir, d.name)) : /\.(c?js)$/.test(d.name) && !d.name.startsWith('worker-entry.browser') ? [join(dir, d.name)] : [],
  )

describe('the package', () => {
  it('passes publint', async () => {
    const { messages } = await publint({ pkgDir: root, level: 'warning' })
    expect(messages).toEqual([])
  })

  it('passes @arethetypeswrong/cli (node10, node16 from CJS and ESM, and bundler resolution)', async () => {
    // Packed here with --ignore-scripts: attw's own --pack would run prepare, a whole rebuild
    // of dist/ while the other test files read it.
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-attw-'))
    try {
      const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' })
      expect(pack.status, pack.stderr).toBe(0)
      const tarball = join(dir, pack.stdout.trim().split('\n').at(-1)!)
      const attw = (...args: string[]) =>
        spawnSync(process.execPath, [join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'), tarball, '--format', 'table-flipped', ...args], {
          cwd: root,
          encoding: 'utf8',
        })
      // sessionfold/testing is ESM only, as vitest is (vitest throws when required): under
      // node16 from CJS it is "dynamic import only", by design. Everything else holds for it too.
      const r = attw('--exclude-entrypoints', './testing')
      expect(r.status, r.stdout + r.stderr).toBe(0)
      const testing = attw('--entrypoints', './testing', '--ignore-rules', 'cjs-resolves-to-esm')
      expect(testing.status, testing.stdout + testing.stderr).toBe(0)
      expect(testing.stdout).toContain('"sessionfold/testing"')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 120_000)

  // 14.9 kB with HTTP sync and the codec's key options, 15.1 kB with rotateKey's progress. The
  // limit is there to catch what would weigh on every page (zod in the client is about 13 kB).
  // 17 kB since session metadata, live tails and tree watches (§14): 16.4 kB with comlink then
  // (15.8 before them), the engine-only parts of the browser platform and the watch loaded lazily.
  // 18.5 kB since the session list (store.sessions(), §14, 18.0 kB): what nearly every agent app
  // shows (its sidebar), so it is in the entry rather than loaded on first use.
  // 19 kB since store.follow (Durable Streams, §16, 18.6 kB): its handle and option checks are in
  // the entry, so that bad options throw at once; its loop is loaded at the first follow.
  // 21 kB since an app's own events (§19: 19.9 kB with idb and comlink, 18.0 kB of our code):
  // defineEvent, events({ types }) and the checks of openStore's worker function, about 1.3 kB;
  // a page that imports its definitions' module for types only (as the guide shows) ships none
  // of defineEvent's code.
  it('keeps the client entry under 21 kB min+gzip, and says how big the worker is', async () => {
    const client = await minGzip(dist('browser/index.js'))
    const clientWithDeps = await minGzip(dist('browser/index.js'), [])
    const worker = await minGzip(dist('browser/worker-entry.browser.js'), [])
    console.log(
      `client entry (browser, min+gzip): ${(client / 1024).toFixed(1)} kB of our code, ${(clientWithDeps / 1024).toFixed(1)} kB with idb, comlink and zod`,
    )
    console.log(`worker bundle (self-contained, min+gzip): ${(worker / 1024).toFixed(1)} kB`)
    expect(client).toBeLessThan(21 * 1024)
    expect(clientWithDeps).toBeLessThan(21 * 1024) // the client loads no zod: what an app ships
  })

  // The client finds its default worker beside the file it is in (a literal URL). When a chunk
  // that is loaded lazily imported code only the entry held, rollup moved the entry's code into
  // chunks/, where no worker is: every store opened with the defaults failed (e849344).
  it('keeps each client that names its default worker in the folder that worker is in', () => {
    const named: string[] = []
    for (const folder of ['node', 'browser']) {
      for (const f of builtFiles(dist(folder)).filter((f) => !f.includes('worker-entry'))) {
        const workers = [...readFileSync(f, 'utf8').matchAll(/["']\.\/(worker-entry\.[a-z]+\.js)["']/g)].map((m) => m[1]!)
        if (workers.length === 0) continue
        named.push(f)
        expect(join(f, '..'), f).toBe(dist(folder))
        for (const w of workers) expect(readdirSync(dist(folder)), `${f} names ${w}`).toContain(w)
      }
    }
    expect(named.length).toBeGreaterThanOrEqual(3) // Node's ESM and CJS entries, the browser's
  })

  it('has no eval or new Function in our bundles', () => {
    for (const f of [...builtFiles(dist('node')), ...builtFiles(dist('browser'))]) {
      expect(readFileSync(f, 'utf8'), f).not.toMatch(/\beval\s*\(|new\s+Function\s*\(/)
    }
  })

  it('keeps vitest to sessionfold/testing: no other built file imports it, and the client entry holds none of the suite', async () => {
    const importers = builtFiles(dist('')).filter((f) => /\bfrom\s*['"]vitest['"]|\b(?:import|require)\s*\(\s*['"]vitest['"]/.test(readFileSync(f, 'utf8')))
    expect(importers.sort()).toEqual([dist('browser/testing.js'), dist('node/testing.js')])
    for (const entry of ['browser/index.js', 'node/index.js']) {
      const { metafile } = await build({
        entryPoints: [dist(entry)],
        bundle: true,
        write: false,
        metafile: true,
        logLevel: 'silent',
        platform: entry.startsWith('node') ? 'node' : 'browser',
        format: 'esm',
        external: ['idb', 'comlink', 'zod', 'zod/*'],
      })
      expect(
        Object.keys(metafile.inputs).filter((f) => /testing|vitest/.test(f)),
        entry,
      ).toEqual([])
    }
  })

  it('ships sessionfold/react as an entry of its own: React stays out of the client, the hooks run from the built ESM and CJS', async () => {
    for (const entry of ['browser/index.js', 'node/index.js']) {
      const { metafile } = await build({
        entryPoints: [dist(entry)],
        bundle: true,
        write: false,
        metafile: true,
        logLevel: 'silent',
        platform: entry.startsWith('node') ? 'node' : 'browser',
        format: 'esm',
        external: ['idb', 'comlink', 'zod', 'zod/*'],
      })
      expect(
        Object.keys(metafile.inputs).filter((f) => /react/.test(f)),
        entry,
      ).toEqual([])
    }
    const hooks = await minGzip(dist('browser/react.js'), ['react'])
    console.log(`sessionfold/react (browser, min+gzip): ${(hooks / 1024).toFixed(1)} kB`)
    expect(hooks).toBeLessThan(2 * 1024)
    // Server rendering reads the handle's values synchronously (useSyncExternalStore's server snapshot).
    const app = (load: (m: string) => string) => `
      const { openStore } = ${load(dist('node/index'))}
      const { useProjection, useChildren } = ${load(dist('node/react'))}
      const { createElement: h } = ${load('react')}
      const { renderToString } = ${load('react-dom/server')}
      const run = async () => {
        const store = await openStore({ storage: 'memory', worker: false })
        const s = await store.createSession({ id: 'r' })
        await s.append({ type: 'turn/start' })
        const C = () => h('p', null, useProjection(s, 'subagentTiming').turns + ' turns, loading ' + useChildren(s).loading)
        console.log(renderToString(h(C)))
        await store.close()
      }`
    const esm = `${app((m) => `await import(${JSON.stringify(m.startsWith('/') ? `${m}.js` : m)})`)}\nawait run()`
    const r1 = spawnSync(process.execPath, ['--input-type=module', '-e', esm], { cwd: root, encoding: 'utf8', timeout: 30_000 })
    expect(r1.stderr).toBe('')
    expect(r1.stdout.trim()).toBe('<p>1 turns, loading true</p>')
    const cjs = `${app((m) => `require(${JSON.stringify(m.startsWith('/') ? `${m}.cjs` : m)})`)}\nrun()`
    const r2 = spawnSync(process.execPath, ['-e', cjs], { cwd: root, encoding: 'utf8', timeout: 30_000 })
    expect(r2.stderr).toBe('')
    expect(r2.stdout.trim()).toBe('<p>1 turns, loading true</p>')
  })

  it('runs from the built files in Node, as ESM and as CJS, with the engine in a worker', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-dist-'))
    try {
      const esm = `
        const { openStore } = await import(${JSON.stringify(dist('node/index.js'))})
        const store = await openStore({ dir: ${JSON.stringify(join(dir, 'esm'))} })
        const s = await store.createSession({ id: 'esm' })
        const kid = await s.spawn({ mode: 'one-shot', label: 'k' })
        await kid.append({ type: 'turn/start' })
        console.log(JSON.stringify(s.projections.get('subagentCatalog').map((c) => c.label)))
        await store.close()`
      const r1 = spawnSync(process.execPath, ['--input-type=module', '-e', esm], { cwd: dir, encoding: 'utf8', timeout: 30_000 })
      expect(r1.stderr).toBe('')
      expect(r1.stdout.trim()).toBe('["k"]')
      const cjs = `
        const { openStore, isSessionfoldError } = require(${JSON.stringify(dist('node/index.cjs'))})
        openStore({ dir: ${JSON.stringify(join(dir, 'cjs'))} }).then(async (store) => {
          const s = await store.createSession({ id: 'cjs' })
          await s.append({ type: 'app/x' })
          const err = await store.openSession('cjs').catch((e) => e)
          console.log(isSessionfoldError(err, 'SESSION_LOCKED'), s.projections.snapshot().asOfSeq)
          await store.close()
        })`
      const r2 = spawnSync(process.execPath, ['-e', cjs], { cwd: dir, encoding: 'utf8', timeout: 30_000 })
      expect(r2.stderr).toBe('')
      expect(r2.stdout.trim()).toBe('true 0')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
