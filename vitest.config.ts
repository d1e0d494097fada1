import { fileURLToPath } from 'node:url'
import { playwright } from '@vitest/browser-playwright'
import { defineConfig } from 'vitest/config'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const alias = (platform: 'node' | 'browser') => ({
  'sessionfold/worker': here(`./worker/entry/serve-${platform}.ts`),
  'sessionfold/react': here('./src/react/index.ts'),
  sessionfold: here(`./src/index-${platform}.ts`),
})

// Debian's chromium (no browser download is possible here), headless, with the flags this
// machine's closed network needs; a persistent context so IndexedDB lives on disk.
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export default defineConfig({
  server: { host: '127.0.0.1' },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        resolve: { alias: alias('node') },
        test: { name: 'node', include: ['test/**/*.test.ts'], exclude: ['test/browser/**'], pool: 'forks' },
      },
      {
        extends: true,
        resolve: { alias: alias('browser') },
        // Pre-bundled at start: a dependency Vite only discovers mid-run (zod, first imported by
        // a worker) makes it reload the page under a running test, which then fails.
        optimizeDeps: { include: ['comlink', 'idb', 'zod', 'zod/mini'] },
        test: {
          name: 'chromium',
          include: ['test/browser/**/*.test.ts'],
          browser: {
            enabled: true,
            headless: true,
            api: { host: '127.0.0.1' },
            provider: playwright({
              launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS },
              persistentContext: true,
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
})
