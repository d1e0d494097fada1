// Package: npm pack holds what users need; the tarball installs into a new project and runs (ESM, CJS, the command); an unbuilt folder builds itself on install (§6 entry points)
// What a user gets from npm. The tarball `npm pack` makes holds dist/ (Node, browsers, types),
// README, LICENSE and docs/, every file package.json points to, and no sources or tests.
// Installed into a throwaway project, it runs as ESM and as CJS, with the engine in a worker, on
// files in a temp dir, and its `sessionfold` command reads back what they wrote. And an unbuilt
// copy of the repository (what `npm install <git url>` and `npm install ../folder` start from;
// before `prepare` existed, such an install had no dist/ and failed with ERR_MODULE_NOT_FOUND)
// builds its dist/ when installed, through `prepare`, and runs the same way.
import { spawn } from 'node:child_process'
import { existsSync, lstatSync, readFileSync, readdirSync, realpathSync } from 'node:fs'
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt, root } from '../support/ensure-built'

let tmp: string
beforeAll(async () => {
  ensureBuilt()
  tmp = await mkdtemp(join(tmpdir(), 'sessionfold-install-'))
}, 120_000)
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true })
})

/** Runs a command (without blocking the other test), resolving with its exit status and output. */
function run(cmd: string, args: string[], cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

/** A new project that installs `spec` (npm's cache holds idb, comlink and zod: no network). */
async function consumer(name: string, spec: string): Promise<string> {
  const app = join(tmp, name)
  await mkdir(app)
  await writeFile(join(app, 'package.json'), JSON.stringify({ name, private: true }))
  const r = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', spec], app)
  expect(r.status, r.stdout + r.stderr).toBe(0)
  return app
}

const ESM = `
import { openStore } from 'sessionfold'
const dir = process.argv[2]
const store = await openStore({ dir, worker: true })
const s = await store.createSession({ id: 'esm' })
await s.append([{ type: 'turn/start', data: { n: 1 } }, { type: 'turn/end' }])
await store.close()
const again = await openStore({ dir, worker: true })
const types = []
for await (const e of (await again.openSession('esm')).events()) types.push(e.type)
console.log(JSON.stringify(types))
await again.close()
`
const CJS = `
const { openStore, isSessionfoldError } = require('sessionfold')
const dir = process.argv[2]
;(async () => {
  const store = await openStore({ dir, worker: true })
  const s = await store.createSession({ id: 'cjs' })
  await s.append({ type: 'app/x', data: { ok: true } })
  const locked = await store.openSession('cjs').catch((e) => e)
  const data = []
  for await (const e of s.events()) data.push(e.data)
  console.log(isSessionfoldError(locked, 'SESSION_LOCKED'), JSON.stringify(data))
  await store.close()
})()
`

/** The installed package runs as ESM and as CJS, and its command line reads what they wrote. */
async function runsFrom(app: string): Promise<void> {
  await writeFile(join(app, 'esm.mjs'), ESM)
  await writeFile(join(app, 'cjs.cjs'), CJS)
  const dir = join(app, 'store')
  const [esm, cjs] = await Promise.all([run(process.execPath, ['esm.mjs', dir], app), run(process.execPath, ['cjs.cjs', dir], app)])
  expect(esm.stderr).toBe('')
  expect(esm.stdout.trim()).toBe('["turn/start","turn/end"]')
  expect(cjs.stderr).toBe('')
  expect(cjs.stdout.trim()).toBe('true [{"ok":true}]')
  const cli = await run(join(app, 'node_modules/.bin/sessionfold'), ['events', 'esm', '--dir', dir], app)
  expect(cli.status, cli.stderr).toBe(0)
  expect(
    cli.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { type: string }).type),
  ).toEqual(['turn/start', 'turn/end'])
}

/** Every file path package.json names: main, module, types, bin and each exports target. */
function pointedTo(pkg: Record<string, unknown>): string[] {
  const walk = (v: unknown): string[] => (typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(walk) : [])
  return [...walk([pkg.main, pkg.module, pkg.types, pkg.bin]), ...walk(pkg.exports)].map((p) => p.replace(/^\.\//, ''))
}

describe.concurrent('installing the package', () => {
  it('packs what users need, installs from the tarball, and runs as ESM, as CJS and as a command', async () => {
    // The build is there (ensureBuilt): --ignore-scripts keeps prepare from rebuilding it
    // under the other tests' feet. (prepare itself is exercised by the next test.)
    const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], root)
    expect(pack.status, pack.stderr).toBe(0)
    const [info] = JSON.parse(pack.stdout) as { filename: string; size: number; files: { path: string }[] }[]
    const files = info!.files.map((f) => f.path)
    console.log(`npm pack: ${files.length} files, ${(info!.size / 1024).toFixed(0)} kB packed`)
    for (const f of [
      'README.md',
      'LICENSE',
      'package.json',
      'docs/CONTRACT.md',
      'dist/node/index.js',
      'dist/node/index.cjs',
      'dist/node/worker-entry.node.js',
      'dist/node/node-boot.mjs',
      'dist/browser/index.js',
      'dist/browser/worker-entry.browser.js',
      'dist/types/index.d.ts',
      'dist/types/index.d.cts',
    ]) {
      expect(files, f).toContain(f)
    }
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>
    for (const f of pointedTo(pkg)) expect(files, `package.json points to ${f}`).toContain(f)
    expect(files.filter((f) => !/^(dist|docs)\//.test(f) && !['README.md', 'LICENSE', 'package.json'].includes(f))).toEqual([])
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/)
    expect(pkg.license).toBe('MIT')

    const app = await consumer('from-tarball', join(tmp, info!.filename))
    expect(lstatSync(join(app, 'node_modules/sessionfold')).isDirectory()).toBe(true)
    for (const dep of ['idb', 'comlink', 'zod']) expect(existsSync(join(app, 'node_modules', dep, 'package.json')), dep).toBe(true)
    await runsFrom(app)
  }, 120_000)

  it('installs from an unbuilt folder: prepare builds dist/ there, and the package runs', async () => {
    // The repository's files as git has them (no dist/), and the node_modules an `npm install`
    // there would make (for a git URL, npm installs the dev dependencies before prepare): the
    // repository's own, linked entry by entry, rather than minutes of npm ci.
    const folder = join(tmp, 'unbuilt')
    const list = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root)
    expect(list.status, list.stderr).toBe(0)
    const tracked = list.stdout.split('\0').filter((f) => f && existsSync(join(root, f)))
    expect(tracked).toContain('rollup.config.mjs')
    expect(tracked.some((f) => f.startsWith('dist/'))).toBe(false)
    for (const f of tracked) await cp(join(root, f), join(folder, f))
    await mkdir(join(folder, 'node_modules'))
    for (const entry of readdirSync(join(root, 'node_modules'))) await symlink(join(root, 'node_modules', entry), join(folder, 'node_modules', entry))
    expect(existsSync(join(folder, 'dist'))).toBe(false)

    const started = Date.now()
    const app = await consumer('from-folder', folder)
    console.log(`npm install <unbuilt folder> (prepare: rollup -c): ${((Date.now() - started) / 1000).toFixed(1)} s`)
    expect(realpathSync(join(app, 'node_modules/sessionfold'))).toBe(realpathSync(folder))
    for (const f of ['dist/node/index.js', 'dist/node/index.cjs', 'dist/browser/worker-entry.browser.js', 'dist/types/index.d.ts'])
      expect(existsSync(join(folder, f)), f).toBe(true)
    await runsFrom(app)
  }, 240_000)
})
