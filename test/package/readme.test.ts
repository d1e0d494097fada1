// Package: the README (the front page, published with the package) and the guide (docs/guide/) — each example is a compiled file, and the runnable ones run
// Every example in the README and the guide that names a file is that file under examples/,
// which tsc compiles (npm test runs tsc --noEmit) and, where it runs on its own, this test
// runs; every example, those included, also compiles against the built package
// (doc-examples.test.ts). The examples are the repository's, not the package's: both say so.
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ERROR_CODES, openStore } from 'sessionfold'
import { markdownExamples } from '../support/doc-examples'

const root = join(__dirname, '../..')
const GUIDE = 'docs/guide/README.md'

function run(file: string, args: string[], dir: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: root,
    env: { ...process.env, SESSIONFOLD_DIR: dir },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** The text of a Markdown section: from its `## title` heading to the next heading of its level. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`)
  expect(start, heading).toBeGreaterThanOrEqual(0)
  const level = heading.split(' ')[0]!
  const end = markdown.indexOf(`\n${level} `, start + heading.length + 1)
  return markdown.slice(start, end < 0 ? undefined : end)
}

/** The guide's pages in their reading order: the numbered list of its index. */
async function guidePages(): Promise<string[]> {
  const index = await readFile(join(root, GUIDE), 'utf8')
  return [...section(index, '## Reading order').matchAll(/^\d+\. \[[^\]]+\]\(([^)#]+)\)/gm)].map((m) => `docs/guide/${m[1]}`)
}

describe('README', () => {
  it('is a front page: at most 300 lines, and a Quick start of exactly its two commands', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    expect(readme.split('\n').length).toBeLessThanOrEqual(300)
    const quick = section(readme, '## Quick start')
    expect([...quick.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, body]) => `${lang}: ${body!.trim()}`)).toEqual([
      'sh: npm install && npm run demo',
      'sh: npm ci && npm test',
    ])
  })

  it('shows one example, exactly as the file that is compiled and run', async () => {
    const blocks = markdownExamples(root, 'README.md')
    expect(blocks.map((b) => b.shows)).toEqual(['examples/node-script.ts'])
    expect(await readFile(join(root, 'examples/node-script.ts'), 'utf8')).toBe(blocks[0]!.code)
  })

  it('sends readers on: the guide, the reference, the contract, the architecture, operations, reliability, benchmarks, the examples', async () => {
    const readme = section(await readFile(join(root, 'README.md'), 'utf8'), '## Where to go next')
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1])
    // That each target exists, its heading included, is docs.test.ts's check of every link.
    expect(targets).toEqual(
      expect.arrayContaining([
        GUIDE,
        'docs/reference/README.md',
        'docs/CONTRACT.md',
        'docs/ARCHITECTURE.md',
        'docs/operations.md',
        'RELIABILITY.md',
        'BENCHMARKS.md',
        `${GUIDE}#examples`,
      ]),
    )
  })

  it('leaves figures to BENCHMARKS.md and RELIABILITY.md', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    // Measured quantities: times, sizes, rates, percentiles, ratios.
    const figures = readme.match(/\b\d[\d,.]*\s?(?:µs|ms|s|seconds|minutes|B|kB|KB|MB|MiB|GB|events\/s|%|x|×)(?![\w/])|\bp(?:50|90|99)\b|percentile/g)
    expect(figures).toBeNull()
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
      expect(
        spawnSync('ls', [join(dir, '.sessionfold/sessions')], { encoding: 'utf8' })
          .stdout.split('\n')
          .filter(Boolean),
      ).toHaveLength(4)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('the guide', () => {
  it('reads top to bottom: its index lists every page in order, and each page leads to the next', async () => {
    const pages = await guidePages()
    const present = (await readdir(join(root, 'docs/guide'))).filter((f) => f.endsWith('.md') && f !== 'README.md').map((f) => `docs/guide/${f}`)
    expect([...pages].sort()).toEqual(present.sort())
    for (const [i, page] of pages.entries()) {
      const text = await readFile(join(root, page), 'utf8')
      const next = /^Next: \[[^\]]+\]\(([^)]+)\)\.$/m.exec(text)?.[1]
      expect(next && `docs/guide/${next}`, page).toBe(pages[i + 1])
    }
  })

  it('shows each example exactly as the file that is compiled and run', async () => {
    const blocks = (await guidePages()).flatMap((page) => markdownExamples(root, page)).filter((b) => b.shows)
    expect(blocks.map((b) => b.shows)).toEqual([
      'examples/node-script.ts',
      'examples/browser/main.ts',
      'examples/react/session-panel.ts',
      'examples/custom-projection/token-count.ts',
      'examples/custom-projection/worker.ts',
      'examples/custom-projection/main.ts',
      'examples/vite-own-worker/main.ts',
      'examples/vite-own-worker/jitless.ts',
      'examples/vite-own-worker/worker.ts',
      'examples/app-events/chat-events.ts',
      'examples/app-events/worker.ts',
      'examples/app-events/main.ts',
      'examples/session-tree.ts',
      'examples/encrypted-store.ts',
      'examples/testing-an-adapter/my-adapter.test.ts',
    ])
    for (const { code, shows } of blocks) expect(await readFile(join(root, shows!), 'utf8'), shows).toBe(code)
  })

  it('says that the examples are in the repository, not in the package (whose "files" leave them out)', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    const guide = await readFile(join(root, GUIDE), 'utf8')
    const { files } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { files: string[] }
    expect(files.some((f) => f.startsWith('examples'))).toBe(false)
    expect(readme).toContain('not part of the installed package')
    expect(guide).toContain('The examples are in the repository, not in the npm package')
  })

  it('lists every error code', async () => {
    const page = await readFile(join(root, 'docs/guide/sessions.md'), 'utf8')
    const listed = [...section(page, '## Errors').matchAll(/^\| `([A-Z_]+)`(?: \/ `([A-Z_]+)`)? \|/gm)].flatMap((m) => m.slice(1).filter(Boolean))
    expect([...listed].sort()).toEqual([...ERROR_CODES].sort())
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
      const events = run('examples/app-events/main.ts', [], dir)
      expect(events.stderr).toBe('')
      expect(events.stdout).toMatch(/refused: chat\/message data for session "\w+" at seq 2: role: /)
      expect(events.stdout).toContain("{ role: 'assistant', text: 'Hi! How can I help?' }")
      expect(events.stdout).toContain('1 2 assistant Hi! How can I help?')
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
      const wrong = spawnSync(process.execPath, ['--import', 'tsx', 'examples/encrypted-store.ts'], {
        cwd: root,
        env: { ...process.env, SESSIONFOLD_DIR: secret, SESSIONFOLD_PASSPHRASE: 'not it' },
        encoding: 'utf8',
        timeout: 60_000,
      })
      expect(wrong.status).not.toBe(0)
      expect(wrong.stderr).toContain('KEY_REJECTED')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
