// Reliability: the inspector page (examples/inspector) in real Chromium — time travel (§11) as a developer uses it
// Vite serves the page, Playwright drives Debian's Chromium (a persistent profile: IndexedDB on
// disk, the engine in a module Web Worker), under the page's strict CSP. A 100,000-event sample
// session: the timeline shows the values, tree and events as of any point (equal to
// store.observe(id, { at })), the event list stays virtual, following live moves with appends,
// and "Fork here" continues from the point shown. Screenshots go to test-output/.
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium'
import { serveExample } from '../support/vite'

const root = join(__dirname, '../..')
const OUT = join(root, 'test-output')

let server: ViteDevServer
let context: BrowserContext
let profile: string
let page: Page
const problems: string[] = []

type Inspector = {
  store: import('sessionfold').Store
  open(id: string): Promise<void>
  scrubTo(at: number): Promise<number>
  makeSample(n: number): Promise<string>
  current: { id: string; length: number; at: number } | undefined
}
/** The page's window, inside page.evaluate. */
type W = { inspector: Inspector }

beforeAll(async () => {
  let base: string
  ;({ server, base } = await serveExample('inspector', 'inspector-test'))
  profile = await mkdtemp(join(tmpdir(), 'sessionfold-inspector-'))
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 820 },
  })
  context.setDefaultTimeout(30_000)
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP: ${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'}`))
  })
  page = await context.newPage()
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`)
  })
  await page.goto(`${base}/`)
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 })
  await mkdir(OUT, { recursive: true })
}, 90_000)

afterAll(async () => {
  await context?.close()
  await server?.close()
  if (profile) await rm(profile, { recursive: true, force: true })
})

describe('the inspector page', () => {
  let id: string
  let length: number

  it('opens a 100,000-event session: its values, subagent tree and events, the list virtual', async () => {
    id = await page.evaluate((n) => (window as unknown as W).inspector.makeSample(n), 100_000)
    await page.evaluate((id) => (window as unknown as W).inspector.open(id), id)
    length = await page.evaluate(() => (window as unknown as W).inspector.current!.length)
    expect(length).toBe(100_003) // and two catalog facts and the external run
    await page.waitForSelector(`body[data-shown="${length}"]`)
    expect(await page.textContent('#title')).toBe(id)
    expect(await page.textContent('#position')).toContain('100,003 of 100,003 events')
    expect(await page.$$eval('#tree li', (li) => li.map((l) => l.dataset.id))).toEqual([`${id}-kid1000`, `${id}-kid1000-helper`, `${id}-kid50000`, `${id}-ci`])
    expect(await page.$$eval('#values .unit', (u) => u.map((d) => d.dataset.key))).toEqual(['sessionMeta', 'subagent', 'subagentCatalog', 'subagentTiming'])
    // Scrolled to the middle: the rows there, and only about a screenful of rows in the page.
    await page.$eval('#events', (el) => void (el.scrollTop = 60_000 * 22))
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLElement>('#events .row:not([hidden])')].some(
        (r) => r.querySelector('.seq')!.textContent === '60010' && r.querySelector('.type')!.textContent !== '…',
      ),
    )
    expect(await page.$$eval('#events .row', (rows) => rows.length)).toBeLessThan(120)
    await page.screenshot({ path: join(OUT, 'inspector.png') })
  }, 120_000)

  it('the timeline shows everything as of any point, equal to store.observe(id, { at })', async () => {
    for (const at of [0, 1, 999, 1001, 1002, 50_001, 50_002, 77_777, length - 1, length]) {
      const ms = await page.evaluate((at) => (window as unknown as W).inspector.scrubTo(at), at)
      expect(ms).toBeGreaterThan(0)
      const shown = await page.$$eval('#values .unit', (units) =>
        Object.fromEntries(units.map((u) => [u.dataset.key!, JSON.parse(u.querySelector('pre')!.textContent!)])),
      )
      const want = await page.evaluate(
        async ([id, at]) => {
          const view = await (window as unknown as W).inspector.store.observe(id as string, { at: at as number })
          return view.projections.snapshot().values
        },
        [id, at] as const,
      )
      expect(shown).toEqual(want)
      const tree = await page.$$eval('#tree li', (li) => li.map((l) => l.dataset.id).filter(Boolean))
      const kids = [
        ...(at > 1000 ? [`${id}-kid1000`, `${id}-kid1000-helper`] : []),
        ...(at > 50_001 ? [`${id}-kid50000`] : []),
        ...(at === length ? [`${id}-ci`] : []),
      ]
      expect(tree, `tree at ${at}`).toEqual(kids)
      expect(await page.textContent('#position')).toContain(`${at.toLocaleString('en')} of`)
    }
    // The row before the point is marked, and the list was brought to it.
    await page.evaluate(() => (window as unknown as W).inspector.scrubTo(77_777))
    await page.waitForSelector('#events .row.at')
    expect(await page.$eval('#events .row.at .seq', (s) => s.textContent)).toBe('77776')
    await page.screenshot({ path: join(OUT, 'inspector-scrubbed.png') })
  }, 120_000)

  it('follows appends live, and "Fork here" continues from the point shown', async () => {
    await page.check('#follow')
    await page.waitForSelector(`body[data-shown="${length}"]`)
    await page.evaluate(async (id) => {
      const writer = await (window as unknown as W).inspector.store.openSession(id)
      await writer.append([{ type: 'message', data: { text: 'later' } }, { type: 'turn/end' }])
      await writer.close()
    }, id)
    await page.waitForFunction(
      (n) => document.querySelector('#position')!.textContent!.startsWith(`${n.toLocaleString('en')} of ${n.toLocaleString('en')}`),
      length + 2,
    )
    await page.evaluate(() => (window as unknown as W).inspector.scrubTo(1500))
    await page.click('#fork')
    await page.waitForFunction((id) => document.querySelector('#title')!.textContent!.startsWith(`${id}-fork-`), id)
    const fork = await page.evaluate(() => (window as unknown as W).inspector.current!)
    expect(fork.length).toBe(1500)
    expect(await page.textContent('#message')).toContain('Forked at 1500')
    const header = await page.evaluate(async (fid) => (await (window as unknown as W).inspector.store.observe(fid)).header, fork.id)
    expect(header).toMatchObject({ origin: 'fork', forkedFrom: id, seedLength: 1500 })
    expect(problems).toEqual([])
  }, 60_000)
})
