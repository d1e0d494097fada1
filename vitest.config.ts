import { fileURLToPath } from 'node:url'
import { playwright } from '@vitest/browser-playwright'
import { defineConfig } from 'vitest/config'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './test/support/chromium.js'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const alias = (platform: 'node' | 'browser') => ({
  'sessionfold/worker': here(`./src/host/entry/serve-${platform}.ts`),
  'sessionfold/react': here('./src/react/index.ts'),
  'sessionfold/testing': here('./src/testing/index.ts'),
  sessionfold: here(`./src/index-${platform}.ts`),
})

export default defineConfig({
  server: { host: '127.0.0.1' },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        resolve: { alias: alias('node') },
        // rejections.ts: a test fails on an unhandled rejection of its own, of a worker thread
        // or of a process it started (vitest alone fails the run, naming no test, for its own).
        // Two files at a time on these 2-core machines (vitest's default is one fewer than the
        // cores): most of a file's time waits on disks, servers, processes and timers. Projects
        // of different widths run one after the other (groupOrder): Node's, then Chromium's.
        // (Three at a time was tried: the cores stayed at 100 % and the run took longer.)
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/browser/**'],
          pool: 'forks',
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
          setupFiles: ['test/support/rejections.ts'],
        },
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
          sequence: { groupOrder: 1 },
          browser: {
            enabled: true,
            headless: true,
            api: { host: '127.0.0.1' },
            // Debian's chromium (test/support/chromium.ts); a persistent context keeps IndexedDB on disk.
            provider: playwright({
              launchOptions: { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS },
              persistentContext: true,
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
})
