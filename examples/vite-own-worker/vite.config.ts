import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// A Vite app with a worker of its own (worker.ts, with the token-count unit of
// examples/custom-projection), started by openStore's `worker` function. As examples/vite-app,
// it uses the package's build: 'sessionfold' and 'sessionfold/worker' resolve, through this
// repository's package.json exports (the browser condition), as a package that imports itself
// by name, to dist/, not to the sources. Served with the page's Content-Security-Policy as a
// header too, which binds the worker's script (a meta tag binds only the page).
const csp =
  "default-src 'self'; script-src 'self'; worker-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'self'"

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  build: { target: 'es2022', outDir: 'dist', emptyOutDir: true },
  // Module workers: Vite's default, 'iife', refuses worker.ts's top-level await; the engine
  // loads a backend's code when a store opens, a chunk of its own.
  worker: { format: 'es' },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1', headers: { 'Content-Security-Policy': csp } },
})
