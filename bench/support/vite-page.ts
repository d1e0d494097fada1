// A bench page served by Vite on 127.0.0.1 (bench/<name>/index.html), sessionfold's browser
// entry and worker taken from the sources: what the Chromium benches that drive a page of their
// own (sessions, codec-browser, many, opfs, browser) share.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createServer, type ViteDevServer } from 'vite'

const REPO = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Serves `bench/<folder>` (its Vite cache in `cacheDir`; `deps`: what the page imports beyond
 * sessionfold's own, such as a peer it measures against); the page's URL is `url`. Close `server` after.
 */
export async function serveBenchPage(folder: string, cacheDir: string, deps: string[] = []): Promise<{ server: ViteDevServer; url: string }> {
  const server = await createServer({
    configFile: false,
    root: join(REPO, 'bench', folder),
    cacheDir,
    logLevel: 'warn',
    clearScreen: false,
    resolve: {
      alias: [
        { find: 'sessionfold/worker', replacement: join(REPO, 'src/host/entry/serve-browser.ts') },
        { find: /^sessionfold$/, replacement: join(REPO, 'src/index-browser.ts') },
      ],
    },
    // Everything the page and the worker import, optimised up front: a dependency found late
    // would make vite reload the page in the middle of the run.
    optimizeDeps: { entries: ['index.html'], include: ['comlink', 'idb', 'zod', ...deps] },
    // No file watching: source edited while the benchmark runs must not reload the page.
    server: { host: '127.0.0.1', port: 0, hmr: false, watch: null, fs: { allow: [REPO] } },
  })
  try {
    await server.listen()
    const address = server.httpServer?.address()
    if (!address || typeof address === 'string') throw new Error('vite did not listen on a port')
    return { server, url: `http://127.0.0.1:${address.port}/index.html` }
  } catch (err) {
    await server.close().catch(() => {})
    throw err
  }
}
