// Serves the chat app (`npm run demo:chat`) with Vite's dev server, from this source tree. In an
// app of your own, 'sessionfold', 'sessionfold/worker' and 'sessionfold/react' come from
// node_modules and the aliases are not needed; Vite ships the app's worker.ts (main.ts starts it
// with `new Worker(new URL('./worker.ts', import.meta.url), …)`) as a worker of its own. Here
// they are aliased to the repository's sources, as for the other example pages.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { sourceTreeConfig } from '../vite-source-tree.js'

const base = sourceTreeConfig(fileURLToPath(new URL('.', import.meta.url)), 'chat-app')

export default defineConfig({
  ...base,
  // React bundled up front too: found mid-session, Vite would reload the page under a live chat.
  optimizeDeps: { include: [...(base.optimizeDeps?.include ?? []), 'react', 'react-dom/client'] },
  // Module workers in a build: Vite's default, 'iife', refuses worker.ts's top-level await.
  worker: { format: 'es' },
})
