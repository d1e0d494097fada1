// The Vite settings the example pages share: served from this source tree (the aliases are
// the ones vitest.config.ts uses for the browser; an app imports 'sessionfold' from
// node_modules instead, as examples/vite-app does), on 127.0.0.1, with a dependency cache of
// their own.
import { fileURLToPath } from 'node:url'
import type { UserConfig } from 'vite'

const repo = (path: string) => fileURLToPath(new URL(path, import.meta.url))

/** The config of a page folder `root` (an absolute path), its dependency cache named `cache`. */
export function sourceTreeConfig(root: string, cache: string): UserConfig {
  return {
    root,
    cacheDir: repo(`../node_modules/.vite/${cache}`),
    resolve: {
      alias: {
        // Before 'sessionfold', which would otherwise take these as paths under it.
        'sessionfold/worker': repo('../src/host/entry/serve-browser.ts'),
        'sessionfold/react': repo('../src/react/index.ts'),
        sessionfold: repo('../src/index-browser.ts'),
      },
    },
    // The engine's worker imports these too: bundling them up front spares a reload mid-session.
    optimizeDeps: { include: ['comlink', 'idb', 'zod'] },
    server: { host: '127.0.0.1', strictPort: false, fs: { allow: [repo('..')] } },
  }
}
