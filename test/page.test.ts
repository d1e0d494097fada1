// The demo page for real: Vite serves examples/demo-page/, Playwright drives Debian's Chromium
// (a persistent context, so IndexedDB is on disk), and the page runs under its strict CSP.
// Also: acknowledged appends survive a reload right after the ack, and close() waits for
// appends still in flight (livestore#1064 lost exactly these).
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import { createServer, type ViteDevServer } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoredEvent } from '../examples/demo-page/durability'

const root = join(__dirname, '..')
const SCREENSHOT = join(root, 'test-output', 'demo-page.png')
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

let server: ViteDevServer
let context: BrowserContext
let profile: string
let base: string

beforeAll(async () => {
  server = await createServer({
    configFile: join(root, 'examples/demo-page/vite.config.ts'),
    cacheDir: join(root, 'node_modules/.vite/demo-page-test'), // apart from a running `npm run demo:page`
    server: { host: '127.0.0.1', port: 0 },
    logLevel: 'warn',
    clearScreen: false,
  })
  await server.listen()
  base = `http://127.0.0.1:${(server.httpServer!.address() as AddressInfo).port}`
  profile = await mkdtemp(join(tmpdir(), 'sessionfold-page-'))
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1000, height: 640 },
  })
  context.setDefaultTimeout(20_000)
  // Before any script of the page: every CSP violation the document sees is recorded.
  await context.addInitScript(() => {
    const seen: string[] = []
    Object.assign(window, { __cspViolations: seen })
    document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`))
  })
}, 40_000)

afterAll(async () => {
  await context?.close()
  await server?.close()
  if (profile) await rm(profile, { recursive: true, force: true })
})

/** A page whose console errors, page errors and CSP violations are collected. */
async function open(path: string): Promise<{ page: Page; problems: string[]; violations: () => Promise<string[]> }> {
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(`console.${m.type()}: ${m.text()}`)
  })
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
  await page.goto(base + path)
  return { page, problems, violations: () => page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations) }
}

interface RowData {
  id: string
  kind: string
  depth: number
  mode: string
  activity: string
  label: string
  timing: string
}

const readRows = (page: Page): Promise<RowData[]> =>
  page.$$eval('#tree tbody tr', (trs) => (trs as HTMLTableRowElement[]).map((tr) => ({
    id: tr.dataset.id ?? '',
    kind: tr.dataset.kind ?? '',
    depth: Number(tr.dataset.depth),
    mode: tr.dataset.mode ?? '',
    activity: tr.dataset.activity ?? '',
    label: (tr.cells[0]?.textContent ?? '').replace(/^└ /, ''),
    timing: tr.cells[3]?.textContent ?? '',
  })))

describe('the demo page in Chromium', () => {
  it('renders the live session tree under a strict CSP', async () => {
    const { page, problems, violations } = await open('/')
    // While the agent runs: the tree grows, rows say running or inactive.
    await page.waitForFunction(() => document.querySelectorAll('#tree tbody tr[data-kind="child"][data-activity="running"], #tree tbody tr[data-kind="child"][data-activity="inactive"]').length >= 4)
    await page.waitForSelector('body[data-state="done"], body[data-state="failed"]', { timeout: 30_000 })
    expect(await page.textContent('#status'), problems.join('\n')).toMatch(/: done\./)
    // Timings are bound per row as their views open: wait until every row shows one.
    await page.waitForFunction(() => [...document.querySelectorAll('#tree tbody td.timing')].every((td) => /^\d+ turns? · \d+ ms$/.test(td.textContent ?? '')))

    const rows = await readRows(page)
    const byLabel = new Map(rows.map((r) => [r.label, r]))
    const child = (label: string) => {
      const r = byLabel.get(label)
      expect(r, `row ${label} in ${JSON.stringify(rows.map((x) => x.label))}`).toBeDefined()
      return r!
    }
    // Siblings are spawned concurrently (catalog order is the order of their facts): check
    // the shape as parent -> child pairs, from the pre-order rows and their depths.
    const parentOf = (i: number) => rows.slice(0, i).reverse().find((r) => r.depth === rows[i]!.depth - 1)?.label ?? null
    const [top, forkRow] = [rows.find((r) => r.kind === 'root')!, rows.find((r) => r.kind === 'fork')!]
    const labels = ['planner', 'coder', 'grep', 'test-run', 'researcher', 'lint', 'alt-lint']
    const oneShotNoLabel = rows.find((r) => r.kind === 'child' && !labels.includes(r.label))?.label // shown by id
    expect(new Map(rows.map((r, i) => [r.label, parentOf(i)]))).toEqual(new Map([
      [top.label, null], ['planner', top.label], ['coder', 'planner'], ['grep', 'coder'], ['test-run', 'planner'],
      ['researcher', top.label], [oneShotNoLabel, 'researcher'], ['lint', top.label],
      [forkRow.label, null], ['alt-lint', forkRow.label],
    ]))
    expect(rows.map((r) => r.kind)).toEqual(['root', ...Array(7).fill('child'), 'fork', 'child'])
    expect(child('grep').depth).toBe(3)
    for (const label of ['planner', 'coder', 'researcher']) expect(child(label)).toMatchObject({ mode: 'continuable', activity: 'running' })
    for (const label of ['grep', 'test-run', 'lint', 'alt-lint']) expect(child(label)).toMatchObject({ mode: 'one-shot', activity: 'inactive' })
    expect(rows[0]).toMatchObject({ kind: 'root', mode: 'root', activity: 'running' })
    expect(forkRow).toMatchObject({ kind: 'fork', activity: 'inactive' })
    expect(forkRow.label).toMatch(/@ seq 2$/)
    // subagentTiming through bindText: the turns each agent ran.
    expect(child('planner').timing).toMatch(/^2 turns · \d+ ms$/)
    expect(child('coder').timing).toMatch(/^3 turns · \d+ ms$/)
    expect(child('grep').timing).toMatch(/^1 turn · \d+ ms$/)
    expect(child(oneShotNoLabel!)).toMatchObject({ mode: 'one-shot', activity: 'inactive' })
    expect(Number(/· (\d+) ms/.exec(child('coder').timing)![1])).toBeGreaterThanOrEqual(3 * 40) // three turns of >= 40 ms
    expect(rows[0]!.timing).toMatch(/^1 turn · \d+ ms$/)

    await mkdir(join(root, 'test-output'), { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    console.log(`demo page screenshot: ${SCREENSHOT}`)
    expect(await violations()).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  }, 45_000)
})

describe('durability across a reload (Chromium, IndexedDB on disk)', () => {
  const ready = (page: Page) => page.waitForSelector('body[data-ready="true"]')

  it('every acknowledged append is there after a reload right after its ack', async () => {
    const { page, violations } = await open('/durability.html')
    await ready(page)
    const name = `durability-${Date.now()}`
    const acked: number[] = []
    const TARGET = 60
    let reloaded: Promise<unknown> | undefined
    let reloadRequested!: () => void
    const requested = new Promise<void>((r) => (reloadRequested = r))
    await page.exposeFunction('__ack', (firstSeq: number, lastSeq: number) => {
      if (reloaded) return // a late report from the page being torn down: not counted
      for (let s = firstSeq; s <= lastSeq; s++) acked.push(s)
      // The moment an ack arrives: reload, while the page goes on appending.
      if (acked.length >= TARGET) {
        reloaded = page.reload()
        reloadRequested()
      }
    })
    await page.evaluate(({ name }) => void window.durability.appendAndReport(name, 'acked', 100_000), { name })
    await requested
    await reloaded
    await ready(page)
    expect(await violations()).toEqual([])
    const events: StoredEvent[] = await page.evaluate(({ name }) => window.durability.read(name, 'acked'), { name })
    // The log is whole (0..k, no gap), holds every acknowledged seq, each with its own data.
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.length).toBeGreaterThanOrEqual(Math.max(...acked) + 1)
    for (const e of events) expect(e).toEqual({ seq: e.seq, type: 'test/durable', data: { n: e.seq } })
    expect(acked.length).toBeGreaterThanOrEqual(TARGET)
    await page.close()
  }, 40_000)

  it('close() waits for appends still in flight; all of them are there after a reload', async () => {
    const { page, problems, violations } = await open('/durability.html')
    await ready(page)
    const name = `close-${Date.now()}`
    const COUNT = 200
    const result = await page.evaluate(({ name, count }) => window.durability.fireAndClose(name, 'pending', count), { name, count: COUNT })
    expect(result).toEqual({ fulfilled: COUNT, rejected: [] })
    await page.reload()
    await ready(page)
    const events: StoredEvent[] = await page.evaluate(({ name }) => window.durability.read(name, 'pending'), { name })
    expect(events).toHaveLength(COUNT)
    expect(events.map((e) => e.data)).toEqual(Array.from({ length: COUNT }, (_, n) => ({ n })))
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(['test/pending']))
    expect(await violations()).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  }, 40_000)
})

type Tab = {
  open(name: string, worker: boolean | 'shared', noSharedWorker?: boolean): Promise<string>
  create(id: string): Promise<string>
  write(id: string): Promise<string>
  observe(id: string): Promise<string>
  turn(id: string): Promise<number>
  turns(id: string): number | null
  spawn(id: string, childId: string): Promise<string>
  children(id: string): Promise<{ id: string; activity?: string }[]>
}
const call = <K extends keyof Tab>(page: Page, fn: K, ...args: Parameters<Tab[K]>) =>
  page.evaluate(([f, a]) => ((window as unknown as { tab: Record<string, (...x: unknown[]) => unknown> }).tab[f as string]!)(...(a as unknown[])), [fn, args] as const) as Promise<Awaited<ReturnType<Tab[K]>>>

describe('many tabs: separate pages of one origin on one store (Chromium)', () => {
  for (const [mode, worker, noShared] of [['module Web Workers', true, false], ['a SharedWorker', 'shared', false], ["'shared' where SharedWorker is missing", 'shared', true]] as const) {
    it(`one writer across tabs, appends seen in another tab within 100 ms, running children, a closed tab frees its lock (${mode})`, async () => {
      const name = `tabs-${Date.now()}-${Math.random().toString(36).slice(2)}`
      const a = await open('/tabs.html')
      const b = await open('/tabs.html')
      // Two tabs opening the same store at the same moment both come up.
      expect(await Promise.all([call(a.page, 'open', name, worker, noShared), call(b.page, 'open', name, worker, noShared)])).toEqual(['open', 'open'])
      await call(a.page, 'create', 's')
      expect(await call(b.page, 'write', 's')).toBe('SESSION_LOCKED')
      await call(b.page, 'observe', 's')
      const lags: number[] = []
      for (let i = 1; i <= 5; i++) {
        const t0 = Date.now()
        await call(a.page, 'turn', 's')
        await b.page.waitForFunction((n) => (window as unknown as { tab: Tab }).tab.turns('s') === n, i, { polling: 5, timeout: 5000 })
        lags.push(Date.now() - t0)
      }
      lags.sort((x, y) => x - y)
      console.log(`${mode}: append in tab A to tab B's subscriber, ms: median ${lags[2]}, max ${lags[4]}`)
      expect(lags[2]).toBeLessThan(100)
      await call(a.page, 'spawn', 's', 'kid')
      expect(await call(b.page, 'children', 's')).toEqual([{ id: 'kid', activity: 'running' }])
      await a.page.close() // the writer's tab goes away: its locks with it
      let state = ''
      for (const end = Date.now() + 5000; state !== 'writing' && Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
        state = await call(b.page, 'write', 's')
      }
      expect(state).toBe('writing')
      expect(await call(b.page, 'children', 's')).toEqual([{ id: 'kid', activity: 'inactive' }])
      expect(await b.violations()).toEqual([])
      expect(b.problems).toEqual([])
      await b.page.close()
    })
  }
})
