// Package: a Vite app bundles the built package and runs its worker in Chromium under a strict CSP (§6 entry points)
// A web app that bundles sessionfold with Vite gets a working worker without copying files:
// build examples/vite-app against the built package, serve it on 127.0.0.1, run it in Chromium.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright'
import { build, preview } from 'vite'
import { beforeAll, expect, it } from 'vitest'
import { ensureBuilt, root } from '../support/ensure-built'

beforeAll(ensureBuilt, 120_000)
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

it('builds with Vite and runs in Chromium with the engine in its Web Worker, under a strict CSP', async () => {
  const config = join(root, 'examples/vite-app/vite.config.ts')
  await build({ configFile: config, logLevel: 'silent' })
  const server = await preview({ configFile: config, preview: { host: '127.0.0.1', port: 0 }, logLevel: 'silent' })
  const profile = await mkdtemp(join(tmpdir(), 'sessionfold-vite-app-'))
  const context = await chromium.launchPersistentContext(profile, { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ARGS })
  try {
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    page.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && problems.push(m.text()))
    page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && problems.push(`${r.status()} ${r.url()}`))
    const url = server.resolvedUrls!.local[0]!
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:/)
    await page.goto(url)
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('ready'), undefined, { timeout: 20_000 })
    expect(await page.textContent('#status')).toBe('ready: 3 children, asOfSeq 2')
    expect(await page.$$eval('#children li', (els) => els.map((e) => e.textContent))).toEqual(['planner (continuable)', 'coder (continuable)', 'reviewer (continuable)'])
    // The engine ran in a worker of the page, not in the page itself.
    expect(page.workers().some((w) => w.url().includes('worker-entry.browser'))).toBe(true)
    expect(problems).toEqual([])
  } finally {
    await context.close()
    await new Promise<void>((resolve) => server.httpServer.close(() => resolve()))
    await rm(profile, { recursive: true, force: true })
  }
})
