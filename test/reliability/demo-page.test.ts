// Reliability: the demo page in real Chromium — reload after an ack, close() in flight, many tabs, a crashed tab (§6 one writer, §7 durability)
// The demo page for real: Vite serves examples/demo-page/, Playwright drives Debian's Chromium
// (a persistent context, so IndexedDB is on disk), and the page runs under its strict CSP.
// Also: acknowledged appends survive a reload right after the ack, and close() waits for
// appends still in flight (livestore#1064 lost exactly these). Many tabs: one writer per
// session, freed when the writer's tab closes or its renderer crashes, in each worker mode.
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import { createServer, type ViteDevServer } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoredEvent } from '../../examples/demo-page/durability'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium'

const root = join(__dirname, '../..')
const SCREENSHOT = join(root, 'test-output', 'demo-page.png')

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
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1000, height: 640 },
  })
  context.setDefaultTimeout(20_000)
  // Before any script of the page: every CSP violation the document sees is recorded.
  await context.addInitScript(() => {
    const seen: string[] = []
    Object.assign(window, { __cspViolations: seen })
    document.addEventListener('securitypolicyviolation', (e) =>
      seen.push(`${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`),
    )
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
  page.$$eval('#tree tbody tr', (trs) =>
    (trs as HTMLTableRowElement[]).map((tr) => ({
      id: tr.dataset.id ?? '',
      kind: tr.dataset.kind ?? '',
      depth: Number(tr.dataset.depth),
      mode: tr.dataset.mode ?? '',
      activity: tr.dataset.activity ?? '',
      label: (tr.cells[0]?.textContent ?? '').replace(/^└ /, ''),
      timing: tr.cells[3]?.textContent ?? '',
    })),
  )

describe('the demo page in Chromium', () => {
  it('renders the live session tree under a strict CSP', async () => {
    const { page, problems, violations } = await open('/')
    // While the agent runs: the tree grows, rows say running or inactive.
    await page.waitForFunction(
      () =>
        document.querySelectorAll('#tree tbody tr[data-kind="child"][data-activity="running"], #tree tbody tr[data-kind="child"][data-activity="inactive"]')
          .length >= 4,
    )
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
    const parentOf = (i: number) =>
      rows
        .slice(0, i)
        .reverse()
        .find((r) => r.depth === rows[i]!.depth - 1)?.label ?? null
    const [top, forkRow] = [rows.find((r) => r.kind === 'root')!, rows.find((r) => r.kind === 'fork')!]
    const labels = ['planner', 'coder', 'grep', 'test-run', 'researcher', 'lint', 'alt-lint']
    const oneShotNoLabel = rows.find((r) => r.kind === 'child' && !labels.includes(r.label))?.label // shown by id
    expect(new Map(rows.map((r, i) => [r.label, parentOf(i)]))).toEqual(
      new Map([
        [top.label, null],
        ['planner', top.label],
        ['coder', 'planner'],
        ['grep', 'coder'],
        ['test-run', 'planner'],
        ['researcher', top.label],
        [oneShotNoLabel, 'researcher'],
        ['lint', top.label],
        [forkRow.label, null],
        ['alt-lint', forkRow.label],
      ]),
    )
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
  appendAndReport(id: string, max: number): Promise<number>
  events(id: string): Promise<StoredEvent[]>
}
const call = <K extends keyof Tab>(page: Page, fn: K, ...args: Parameters<Tab[K]>) =>
  page.evaluate(([f, a]) => (window as unknown as { tab: Record<string, (...x: unknown[]) => unknown> }).tab[f as string]!(...(a as unknown[])), [
    fn,
    args,
  ] as const) as Promise<Awaited<ReturnType<Tab[K]>>>

describe('many tabs: separate pages of one origin on one store (Chromium)', () => {
  for (const [mode, worker, noShared] of [
    ['module Web Workers', true, false],
    ['a SharedWorker', 'shared', false],
    ["'shared' where SharedWorker is missing", 'shared', true],
  ] as const) {
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

/** Rejects after `ms` rather than hang: a call into a crashed page may never be answered. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** Crashes the page's renderer process, and every worker living in it, and waits to see it. */
async function crash(page: Page): Promise<void> {
  const cdp = await within(5000, 'a CDP session', context.newCDPSession(page))
  const crashed = page.waitForEvent('crash', { timeout: 10_000 })
  // Page.crash never answers (the renderer that would is gone): raced with the crash event.
  void cdp.send('Page.crash').catch(() => {})
  await crashed
}

describe('many tabs: a crashed tab frees its locks (Chromium)', () => {
  // Which renderer a SharedWorker lives in is Chromium's choice: an existing renderer of its
  // site, so the one of the tab that started it while that is the only tab. Hence two cases:
  // the worker outlives the writer's crashed tab (tab B started it: the host's tab lock must
  // close A's handles), or dies with it (tab A started it: B's store is told WORKER_TERMINATED
  // and a new store in B takes the session over).
  const modes = [
    { mode: 'module Web Workers', worker: true, noShared: false, startedByB: false, workerDies: false },
    { mode: "'shared' where SharedWorker is missing", worker: 'shared', noShared: true, startedByB: false, workerDies: false },
    { mode: 'a SharedWorker that outlives the crashed tab', worker: 'shared', noShared: false, startedByB: true, workerDies: false },
    { mode: "a SharedWorker that dies in the crashed tab's renderer", worker: 'shared', noShared: false, startedByB: false, workerDies: true },
  ] as const
  for (const { mode, worker, noShared, startedByB, workerDies } of modes) {
    it(`the writer's tab crashes with appends in flight: B takes the session over with every acknowledged event (${mode})`, async () => {
      const name = `crash-${Date.now()}-${Math.random().toString(36).slice(2)}`
      const tabs: Awaited<ReturnType<typeof open>>[] = []
      try {
        // One tab after the other: the first one starts the SharedWorker, if there is one.
        for (let i = 0; i < 2; i++) {
          const tab = await open('/tabs.html')
          tabs.push(tab)
          expect(await within(10_000, 'open', call(tab.page, 'open', name, worker, noShared))).toBe('open')
        }
        const [a, b] = startedByB ? [tabs[1]!, tabs[0]!] : [tabs[0]!, tabs[1]!]
        await within(5000, 'create', call(a.page, 'create', 's'))
        expect(await within(5000, 'write', call(b.page, 'write', 's'))).toBe('SESSION_LOCKED')

        // Tab A appends, reporting every ack; at the 40th its renderer crashes, appends in flight.
        const TARGET = 40
        const acked: number[] = []
        let crashing: Promise<void> | undefined
        let reached!: () => void
        const enough = new Promise<void>((r) => (reached = r))
        await a.page.exposeFunction('__ack', (firstSeq: number, lastSeq: number) => {
          for (let s = firstSeq; s <= lastSeq; s++) acked.push(s) // acks reported while crashing count too
          if (acked.length >= TARGET && !crashing) {
            crashing = crash(a.page)
            reached()
          }
        })
        const appending = call(a.page, 'appendAndReport', 's', 1_000_000).then(
          () => 'finished',
          () => 'stopped',
        )
        await within(15_000, `${TARGET} acks`, enough)
        await within(15_000, 'the crash', crashing!)
        const crashedAt = Date.now()
        expect(await within(5000, "tab A's append loop", appending)).toBe('stopped')

        // Tab B: the session is free (after a moment: a surviving SharedWorker first closes A's handles).
        let state = 'SESSION_LOCKED'
        for (const end = Date.now() + 5000; state === 'SESSION_LOCKED' && Date.now() < end; ) {
          state = await within(5000, 'write', call(b.page, 'write', 's'))
          if (state === 'SESSION_LOCKED') await new Promise((r) => setTimeout(r, 50))
        }
        if (workerDies) {
          expect(state, "the SharedWorker lived in tab A's renderer: B's store learns it is gone").toBe('WORKER_TERMINATED')
          expect(await within(10_000, 'reopen', call(b.page, 'open', name, worker, noShared))).toBe('open')
          state = await within(5000, 'write', call(b.page, 'write', 's'))
        }
        expect(state).toBe('writing')
        const freeAfter = Date.now() - crashedAt

        // Every event tab A saw acknowledged is there, the log has no gap, each event its own data.
        const events = await within(10_000, 'events', call(b.page, 'events', 's'))
        expect(acked.length).toBeGreaterThanOrEqual(TARGET)
        expect(acked).toEqual(acked.map((_, i) => i))
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
        expect(events.length).toBeGreaterThanOrEqual(acked.length)
        for (const e of events) expect(e).toEqual({ seq: e.seq, type: 'test/acked', data: { n: e.seq } })
        // And B writes on from there.
        expect(await within(5000, 'turn', call(b.page, 'turn', 's'))).toBe(events.length + 1)
        console.log(`crashed tab (${mode}): ${acked.length} acked, ${events.length} in the log, B writing ${freeAfter} ms after the crash`)
        expect(await b.violations()).toEqual([])
        expect(b.problems).toEqual([])
      } finally {
        for (const tab of tabs) await within(10_000, 'closing a tab', tab.page.close()).catch(() => {})
      }
    }, 60_000)
  }
})
