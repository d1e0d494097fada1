// Serves the chat app (`npm run demo:chat`) with Vite's dev server, from this source tree. In an
// app of your own, 'sessionfold' and 'sessionfold/react' come from node_modules and none of this
// is needed: Vite finds the engine's worker inside the package. Here they are aliased to the
// repository's sources, as for the other example pages.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { sourceTreeConfig } from '../vite-source-tree.js'

const base = sourceTreeConfig(fileURLToPath(new URL('.', import.meta.url)), 'chat-app')

export default defineConfig({
  ...base,
  // React bundled up front too: found mid-session, Vite would reload the page under a live chat.
  optimizeDeps: { include: [...(base.optimizeDeps?.include ?? []), 'react', 'react-dom/client'] },
})
