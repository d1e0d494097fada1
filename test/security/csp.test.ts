// Security: the demo page under a strict CSP header, its worker included — no violation reported (§1: no code from strings)
// The demo page under its Content-Security-Policy sent as a response header on everything the
// server sends, the engine's worker script included. A meta tag binds only the document; a
// worker gets its policy from its own response, so this is where a `new Function` in the
// worker shows. Every violation, in the page or in the worker, is POSTed to report-uri and
// collected here: there must be none, and the page must still work.
import type { IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright'
import { createServer, type ViteDevServer } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium'

const root = join(__dirname, '../..')
/** The page's own policy (examples/demo-page/index.html), plus where to report. */
const CSP =
  "default-src 'self'; script-src 'self'; worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; connect-src 'self' ws://127.0.0.1:*; img-src 'self' data:; object-src 'none'; base-uri 'self'; report-uri /__csp-report"

let server: ViteDevServer
let context: BrowserContext
let profile: string
let base: string
const reports: unknown[] = []
const served: string[] = []

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let s = ''
    req.on('data', (c: Buffer) => (s += c.toString('utf8')))
    req.on('end', () => resolve(s))
  })

beforeAll(async () => {
  server = await createServer({
    configFile: join(root, 'examples/demo-page/vite.config.ts'),
    cacheDir: join(root, 'node_modules/.vite/demo-page-csp-test'),
    server: { host: '127.0.0.1', port: 0 },
    logLevel: 'warn',
    clearScreen: false,
    plugins: [
      {
        name: 'csp-header',
        configureServer(s) {
          s.middlewares.use((req, res, next) => {
            if (req.url === '/__csp-report') {
              void body(req).then((text) => {
                reports.push(JSON.parse(text || 'null'))
                res.statusCode = 204
                res.end()
              })
              return
            }
            served.push(req.url ?? '')
            res.setHeader('Content-Security-Policy', CSP)
            next()
          })
        },
      },
    ],
  })
  await server.listen()
  base = `http://127.0.0.1:${(server.httpServer!.address() as AddressInfo).port}`
  profile = await mkdtemp(join(tmpdir(), 'sessionfold-csp-'))
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
  })
  context.setDefaultTimeout(20_000)
}, 40_000)

afterAll(async () => {
  await context?.close()
  await server?.close()
  if (profile) await rm(profile, { recursive: true, force: true })
})

describe('the demo page with its CSP as a header, worker included', () => {
  it('runs the agent to the end with no violation reported from the page or its worker', async () => {
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(`console.${m.type()}: ${m.text()}`)
    })
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
    const workers: string[] = []
    page.on('worker', (w) => workers.push(w.url()))
    await page.goto(`${base}/`)
    await page.waitForSelector('body[data-state="done"], body[data-state="failed"]', { timeout: 30_000 })
    expect(await page.textContent('#status'), problems.join('\n')).toMatch(/: done\./)
    expect(await page.$$eval('#tree tbody tr', (rows) => rows.length)).toBeGreaterThanOrEqual(8)
    // The engine ran in a worker whose script came from this server, with the header.
    expect(
      workers.some((u) => /worker-entry\.browser/.test(u)),
      workers.join('\n'),
    ).toBe(true)
    expect(
      served.some((u) => /host\/entry\/browser/.test(u)),
      'the worker script was served here',
    ).toBe(true)
    // Reports are sent asynchronously: give them a moment after the work is done.
    await page.waitForTimeout(1000)
    expect(reports, JSON.stringify(reports, null, 2)).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)
})
