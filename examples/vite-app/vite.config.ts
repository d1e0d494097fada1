import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The app uses the package as an app would, from its build: 'sessionfold' resolves to this
// repository's package.json exports (the browser condition), not to its sources.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  resolve: { alias: { sessionfold: fileURLToPath(new URL('../../', import.meta.url)) } },
  build: { target: 'es2022', outDir: 'dist', emptyOutDir: true },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
})
