// Support: an example page folder served by Vite on 127.0.0.1 (a free port), for tests and
// browser benchmarks, with a dependency cache apart from a running `npm run demo:page` or
// `npm run inspector`; and an example app built by Vite for production against the built
// package, served by `vite preview`, opened in Chromium (test/package/vite-*.test.ts).
import { mkdtemp, rm } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type ConsoleMessage, type Page } from 'playwright'
import { build, createServer, preview, type ViteDevServer } from 'vite'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium'
import { ensureBuilt } from './ensure-built'

const repo = fileURLToPath(new URL('../..', import.meta.url))

/** Serves `examples/<folder>` (its own vite.config.ts); `cache` names its dependency cache. */
export async function serveExample(folder: string, cache: string): Promise<{ server: ViteDevServer; base: string }> {
  const server = await createServer({
    configFile: join(repo, 'examples', folder, 'vite.config.ts'),
    cacheDir: join(repo, 'node_modules/.vite', cache),
    server: { host: '127.0.0.1', port: 0 },
    logLevel: 'warn',
    clearScreen: false,
  })
  await server.listen()
  return { server, base: `http://127.0.0.1:${(server.httpServer!.address() as AddressInfo).port}` }
}

/** What Vite's build() hands back, as far as the tests read it. */
export type Emitted =
  | { type: 'chunk'; fileName: string; code: string; isEntry: boolean; imports: string[]; dynamicImports: string[]; moduleIds: string[] }
  | { type: 'asset'; fileName: string; source: string | Uint8Array }

/** An example app built by Vite for production, served by `vite preview` on 127.0.0.1, and a Chromium to open it in. */
export interface BuiltExample {
  emitted: Emitted[]
  url: string
  context: BrowserContext
  close(): Promise<void>
}

/** Builds the app of `config` (its vite.config.ts) against the built package, serves it, and launches Chromium with a profile of its own. */
export async function buildExample(config: string): Promise<BuiltExample> {
  ensureBuilt()
  const out = await build({ configFile: config, logLevel: 'silent' })
  const emitted = (Array.isArray(out) ? out : [out]).flatMap((o) => (o as { output: Emitted[] }).output)
  const server = await preview({ configFile: config, preview: { host: '127.0.0.1', port: 0 }, logLevel: 'silent' })
  const profile = await mkdtemp(join(tmpdir(), 'sessionfold-vite-'))
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS })
  return {
    emitted,
    url: server.resolvedUrls!.local[0]!,
    context,
    async close() {
      await context.close()
      await new Promise<void>((resolve) => server.httpServer.close(() => resolve()))
      await rm(profile, { recursive: true, force: true })
    },
  }
}

/**
 * Watches `page` of `app`: the problems it meets (page errors, console errors of the page and
 * its workers, CSP violations among them, failed responses) and the JS files (paths under the build's root) that it and
 * its workers fetch, until stop().
 */
export function watchPage(app: BuiltExample, page: Page): { problems: string[]; fetched: Set<string>; stop(): void } {
  const problems: string[] = []
  const fetched = new Set<string>()
  const onRequest = (r: { url(): string }) => {
    const u = new URL(r.url())
    if (u.href.startsWith(app.url) && u.pathname.endsWith('.js')) fetched.add(u.pathname.slice(1))
  }
  app.context.on('request', onRequest)
  page.on('pageerror', (e) => problems.push(e.message))
  const onConsole = (m: ConsoleMessage) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && problems.push(m.text())
  page.on('console', onConsole)
  page.on('worker', (w) => w.on('console', onConsole)) // a worker's own: a CSP its script is served with, say
  page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && problems.push(`${r.status()} ${r.url()}`))
  return { problems, fetched, stop: () => app.context.off('request', onRequest) }
}
