// Support: an example page folder served by Vite on 127.0.0.1 (a free port), for tests and
// browser benchmarks, with a dependency cache apart from a running `npm run demo:page` or
// `npm run inspector`.
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createServer, type ViteDevServer } from 'vite'

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
