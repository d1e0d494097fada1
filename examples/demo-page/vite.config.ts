// Serves the demo page (and durability.html) with Vite's dev server: `npm run demo:page`. The
// aliases are the ones vitest.config.ts uses for the browser, so the page runs this source tree
// (examples/vite-app shows a production build of the package).
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  root: here('.'),
  // Its own dependency cache, apart from vitest's.
  cacheDir: here('../../node_modules/.vite/demo-page'),
  resolve: {
    alias: {
      'sessionfold/worker': here('../../worker/entry/serve-browser.ts'),
      sessionfold: here('../../src/index-browser.ts'),
    },
  },
  // The engine's worker imports these too: bundling them up front spares a reload mid-demo.
  optimizeDeps: { include: ['comlink', 'idb', 'zod'] },
  server: { host: '127.0.0.1', strictPort: false, fs: { allow: [here('../..')] } },
})
