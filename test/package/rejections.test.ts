// Package: the test suite fails on any unhandled rejection (§13 last bullet) — the node project of
// vitest.config.ts has test/support/rejections.ts as a setup file and ignores no unhandled error,
// and, run by a vitest of its own on test/fixtures/leaks/leaks.leaky.ts, that setup fails by name
// each test that leaves a rejection unhandled in the test process, in a worker thread it starts,
// in a child process or in an engine's worker, and passes the one that leaves none.
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import type { TestProjectInlineConfiguration } from 'vitest/config'
import config from '../../vitest.config'
import { root } from '../support/ensure-built'
import { CHILD_HOOK, LEAKS_DIR_ENV } from '../support/rejections'

/** Every key of `value`, at any depth. */
function keysOf(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return []
  return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)])
}

it('the node project runs the rejection setup, and no project ignores unhandled errors', () => {
  const projects = config.test?.projects as TestProjectInlineConfiguration[]
  const node = projects.find((p) => p.test?.name === 'node')
  expect(node?.test?.setupFiles).toContain('test/support/rejections.ts')
  expect(keysOf(config)).not.toContain('dangerouslyIgnoreUnhandledErrors')
})

interface Report {
  testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[]
}

it('fails, by name, each test that leaves a rejection unhandled: in the test, a worker thread, a child process, an engine worker', async () => {
  const out = await mkdtemp(join(tmpdir(), 'sessionfold-leaks-run-'))
  try {
    // A vitest of its own, with nothing of this one's setup in its environment.
    const env = { ...process.env }
    delete env[LEAKS_DIR_ENV]
    env.NODE_OPTIONS = (env.NODE_OPTIONS ?? '').replace(`--import=${CHILD_HOOK}`, '').trim()
    const args = [
      join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--config',
      'test/fixtures/leaks/vitest.config.ts',
      '--reporter=json',
      `--outputFile=${join(out, 'report.json')}`,
    ]
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code, stderr).toBe(1)
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report
    const results = new Map(report.testResults.flatMap((f) => f.assertionResults).map((r) => [r.title, r]))
    const failed = (title: string, what: RegExp, leak: string) => {
      const r = results.get(title)
      expect(r?.status, title).toBe('failed')
      const message = r!.failureMessages.join('\n')
      expect(message, title).toMatch(what)
      expect(message, title).toContain(leak)
      expect(message, title).toContain(`during "${title}"`)
    }
    failed('leaks in the test', /an unhandled rejection in the test process/, 'leak: in the test')
    failed('leaks in a worker thread it starts', /worker thread \d+ failed/, 'leak: in a worker thread')
    failed('leaks in a child process', /an unhandled rejection in child process \d+/, 'leak: in a child process')
    failed('leaks in an engine worker, though every call of the test went well', /worker thread \d+ failed/, 'leak: in an engine worker')
    expect(results.get('handles every rejection it makes')?.status).toBe('passed')
    expect(results.size).toBe(5)
  } finally {
    await rm(out, { recursive: true, force: true })
  }
}, 120_000)
