// Package: sessionfold/testing from the built package — an app's vitest runs the storage conformance suite on an adapter of its own (§6 entry points)
// A throwaway app gets the built package in node_modules as published (package.json and dist/),
// with vitest as its dev dependency, and runs vitest on three files: the guide's example
// (examples/testing-an-adapter/my-adapter.test.ts, the memory adapter standing in for the app's),
// a broken adapter, and adapters without optional members. The suite must pass the first, fail
// the second on the rules it breaks, and skip only what the third declares it goes without.
// Then vitest's browser mode runs the guide's IndexedDB file in Chromium, through the package's
// browser build: the whole suite passes there, the reopen test included.
import { spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium'
import { markdownExamples } from '../support/doc-examples'
import { ensureBuilt, root } from '../support/ensure-built'

/** An adapter that lists sessions in the wrong order, and takes any seq: the suite must say so. */
const BROKEN = `import { createMemoryAdapter } from 'sessionfold/adapters/memory'
import { storageConformance } from 'sessionfold/testing'

storageConformance('broken', async () => {
  const inner = createMemoryAdapter()
  const adapter = Object.create(inner)
  adapter.listSessions = async (options) => (await inner.listSessions(options)).reverse()
  return { adapter, teardown: () => inner.close() }
})
`

/** The memory adapter without kv and history: declared once, and once not. */
const WITHOUT = `import { createMemoryAdapter } from 'sessionfold/adapters/memory'
import { storageConformance } from 'sessionfold/testing'

const bare = () => {
  const inner = createMemoryAdapter()
  const adapter = Object.create(inner, { kv: { value: undefined }, history: { value: undefined } })
  return { adapter, teardown: () => inner.close() }
}
storageConformance('declared', async () => bare(), { without: ['kv', 'history'] })
storageConformance('undeclared', async () => bare())
`

interface Assertion {
  fullName: string
  title: string
  status: string
  failureMessages: string[]
}
interface Report {
  testResults: { name: string; assertionResults: Assertion[] }[]
}

const app = mkdtempSync(join(tmpdir(), 'sessionfold-testing-entry-'))
let run: { code: number | null; output: string }
let report: Report
let browserRun: { code: number | null; output: string }
let browserReport: Report

beforeAll(async () => {
  ensureBuilt()
  const modules = join(app, 'node_modules')
  mkdirSync(join(modules, 'sessionfold'), { recursive: true })
  cpSync(join(root, 'package.json'), join(modules, 'sessionfold/package.json'))
  cpSync(join(root, 'dist'), join(modules, 'sessionfold/dist'), { recursive: true })
  for (const dep of ['idb', 'comlink', 'zod', 'vitest']) symlinkSync(join(root, 'node_modules', dep), join(modules, dep), 'dir')
  symlinkSync(join(root, 'node_modules/playwright'), join(modules, 'playwright'), 'dir')
  mkdirSync(join(modules, '@vitest'))
  symlinkSync(join(root, 'node_modules/@vitest/browser-playwright'), join(modules, '@vitest/browser-playwright'), 'dir')
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-adapter', private: true, type: 'module' }))
  // One worker: the machine is shared with the test run that started this one.
  writeFileSync(
    join(app, 'vitest.config.mjs'),
    `export default { test: { include: ['*.node.test.*'], testTimeout: 60000, maxWorkers: 1, fileParallelism: false } }\n`,
  )
  // The guide's browser config, with this machine's Chromium (test/support/chromium.ts).
  writeFileSync(
    join(app, 'vitest.browser.mjs'),
    `import { playwright } from '@vitest/browser-playwright'
export default {
  server: { host: '127.0.0.1' },
  test: {
    include: ['*.browser.test.*'], testTimeout: 60000,
    browser: {
      enabled: true, headless: true, api: { host: '127.0.0.1' },
      provider: playwright({ launchOptions: { executablePath: ${JSON.stringify(CHROMIUM_PATH)}, args: ${JSON.stringify(CHROMIUM_ARGS)} } }),
      instances: [{ browser: 'chromium' }],
    },
  },
}
`,
  )
  cpSync(join(root, 'examples/testing-an-adapter/my-adapter.test.ts'), join(app, 'my-adapter.node.test.ts'))
  writeFileSync(join(app, 'broken.node.test.js'), BROKEN)
  writeFileSync(join(app, 'without.node.test.js'), WITHOUT)
  const guide = markdownExamples(root, 'docs/guide/testing-an-adapter.md').filter((e) => e.code.includes("from 'sessionfold/adapters/indexeddb'"))
  expect(guide).toHaveLength(1)
  writeFileSync(join(app, 'indexeddb.browser.test.ts'), guide[0]!.code)
  run = await vitest(['run', '--reporter=json', '--outputFile=report.json'])
  report = JSON.parse(readFileSync(join(app, 'report.json'), 'utf8')) as Report
  browserRun = await vitest(['run', '--config', 'vitest.browser.mjs', '--reporter=json', '--outputFile=browser.json'])
  browserReport = JSON.parse(readFileSync(join(app, 'browser.json'), 'utf8')) as Report
}, 300_000)

/** The app's vitest, one run at a time. */
function vitest(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), ...args], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    child.on('close', (code) => resolve({ code, output }))
  })
}

afterAll(() => rmSync(app, { recursive: true, force: true }))

/** The tests of one file of the app, by title, with their status. */
function testsOf(file: string, of = report, output = run.output): Assertion[] {
  const result = of.testResults.find((r) => r.name.endsWith(`/${file}`))
  expect(result, `${file} in the app's vitest report:\n${output}`).toBeDefined()
  return result!.assertionResults
}

describe('sessionfold/testing, from the built package in an app of its own', () => {
  it("runs the guide's example: every test of the suite passes on the memory adapter, but the reopen test, skipped", () => {
    const tests = testsOf('my-adapter.node.test.ts')
    expect(tests.length).toBeGreaterThanOrEqual(20)
    expect(tests.every((t) => t.fullName.startsWith('storage conformance: my adapter '))).toBe(true)
    expect(tests.filter((t) => t.status !== 'passed').map((t) => `${t.status}: ${t.title}`)).toEqual(['skipped: keeps everything across close and reopen'])
  })

  it('fails an adapter that breaks the rules, on those rules', () => {
    const failed = testsOf('broken.node.test.js')
      .filter((t) => t.status === 'failed')
      .map((t) => t.title)
    expect(failed).toEqual(expect.arrayContaining(['lists 1,000 sessions through pages, ordered by id', 'keeps ids that differ only in case apart']))
    expect(run.code).not.toBe(0)
  })

  it('skips what an adapter is declared to go without, and fails what it lacks undeclared, naming the option', () => {
    const tests = testsOf('without.node.test.js')
    const declared = tests.filter((t) => t.fullName.startsWith('storage conformance: declared '))
    const undeclared = tests.filter((t) => t.fullName.startsWith('storage conformance: undeclared '))
    expect(
      declared
        .filter((t) => t.status === 'skipped')
        .map((t) => t.title)
        .sort(),
    ).toEqual([
      'keeps everything across close and reopen',
      'keeps history rows by position: the row at or before a position, listed in order, removed, gone with their session (without history)',
      "keeps key-value records: replaced whole, listed in key order by prefix, a session's gone with it, bad keys and values refused with nothing written (without kv)",
      "reads and writes many records at once (getMany and writeMany, the adapter's own where it has them), each as get, put and delete would, bad writes refused with nothing written (without kv)",
    ])
    expect(declared.filter((t) => t.status === 'failed').map((t) => t.title)).toEqual([])
    const failures = undeclared.filter((t) => t.status === 'failed')
    expect(failures.map((t) => t.title.split(':')[0]).sort()).toEqual([
      'keeps history rows by position',
      'keeps key-value records',
      "reads and writes many records at once (getMany and writeMany, the adapter's own where it has them), each as get, put and delete would, bad writes refused with nothing written",
    ])
    for (const t of failures) expect(t.failureMessages.join('\n')).toMatch(/pass \{ without: \['(kv|history)'\] \} to storageConformance/)
  })

  it("runs the guide's IndexedDB file in Chromium (vitest browser mode, the package's browser build): every test passes, the reopen test included", () => {
    const tests = testsOf('indexeddb.browser.test.ts', browserReport, browserRun.output)
    expect(tests.length).toBeGreaterThanOrEqual(20)
    expect(
      tests.filter((t) => t.status !== 'passed').map((t) => `${t.status}: ${t.title}`),
      browserRun.output,
    ).toEqual([])
    expect(tests.map((t) => t.title)).toContain('keeps everything across close and reopen')
    expect(browserRun.code, browserRun.output).toBe(0)
  })
})
