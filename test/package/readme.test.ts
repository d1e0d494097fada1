// Package: the README, published with the package — each example is a compiled file, and the runnable ones run
// Every example in the README that names a file is that file under examples/, which tsc
// compiles (npm test runs tsc --noEmit) and, where it runs on its own, this test runs; every
// example, those included, also compiles against the built package (doc-examples.test.ts).
// The examples are the repository's, not the package's: the README says so.
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { markdownExamples } from '../support/doc-examples'

const root = join(__dirname, '../..')

function run(file: string, args: string[], dir: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], { cwd: root, env: { ...process.env, SESSIONFOLD_DIR: dir }, encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('README', () => {
  it('shows each example exactly as the file that is compiled and run', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    const blocks = markdownExamples(root, 'README.md').filter((b) => b.shows)
    expect(blocks.map((b) => b.shows)).toEqual([
      'examples/node-script.ts', 'examples/browser/main.ts', 'examples/custom-projection/token-count.ts',
      'examples/custom-projection/worker.ts', 'examples/custom-projection/main.ts', 'examples/react/session-panel.ts',
      'examples/session-tree.ts', 'examples/encrypted-store.ts',
    ])
    for (const { code, shows } of blocks) expect(await readFile(join(root, shows!), 'utf8'), shows).toBe(code)
    expect(readme).toContain('npm install && npm run demo')
    expect(readme).toContain('npm ci && npm test')
  })

  it('says that the examples are in the repository, not in the package (whose "files" leave them out)', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    const { files } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { files: string[] }
    expect(files.some((f) => f.startsWith('examples'))).toBe(false)
    expect(readme).toContain('not part of the installed package')
    expect(readme).toContain('The examples are in the repository, not in the npm package')
  })

  it('runs the Node examples', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-readme-'))
    try {
      const script = run('examples/node-script.ts', [], dir)
      expect(script.stderr).toBe('')
      expect(script.stdout).toContain('turns: 1')
      expect(script.stdout).toContain('2 turn/end')
      const custom = run('examples/custom-projection/main.ts', [], dir)
      expect(custom.stdout).toContain('{ total: 1545, turns: 2 }')
      // A small tree for session-tree to print.
      const store = await openStore({ dir, worker: false })
      const p = await store.createSession({ id: 'tree-root' })
      const a = await p.spawn({ mode: 'continuable', label: 'planner' })
      await a.spawn({ mode: 'one-shot', label: 'coder' })
      await store.close()
      const tree = run('examples/session-tree.ts', ['tree-root'], dir)
      expect(tree.stdout).toBe('planner [continuable] inactive\n  coder [one-shot] inactive\n')
      const secret = join(dir, 'secret')
      const sealed = run('examples/encrypted-store.ts', [], secret)
      expect(sealed.stderr).toBe('')
      expect(sealed.stdout).toMatch(/1 events, sealed on disk\nno plaintext in \d+ files\n$/)
      const wrong = spawnSync(process.execPath, ['--import', 'tsx', 'examples/encrypted-store.ts'], { cwd: root, env: { ...process.env, SESSIONFOLD_DIR: secret, SESSIONFOLD_PASSPHRASE: 'not it' }, encoding: 'utf8', timeout: 60_000 })
      expect(wrong.status).not.toBe(0)
      expect(wrong.stderr).toContain('KEY_REJECTED')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('runs the demo to exit 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-demo-'))
    try {
      // From an empty folder, as on a fresh machine: the default store lands in its .sessionfold/.
      const tsx = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href
      const r = spawnSync(process.execPath, ['--import', tsx, join(root, 'examples/demo.ts')], { cwd: dir, encoding: 'utf8', timeout: 60_000 })
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout).toMatch(/catalog: researcher \(continuable\), test-writer \(one-shot\), reviewer \(continuable\)/)
      expect(r.stdout).toContain('[researcher] turns 3')
      expect(r.stdout).toContain('parent log: turn/start, subagent/catalog, subagent/catalog, subagent/catalog, turn/end')
      expect(spawnSync('ls', [join(dir, '.sessionfold/sessions')], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)).toHaveLength(4)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
