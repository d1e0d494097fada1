// Serves the chat app (`npm run demo:chat`) with Vite's dev server, from this source tree. In an
// app of your own, 'sessionfold' and 'sessionfold/react' come from node_modules and none of this
// is needed: Vite finds the engine's worker inside the package. Here they are aliased to the
// repository's sources, as for the other example pages.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { sourceTreeConfig } from '../vite-source-tree.js'

const base = sourceTreeConfig(fileURLToPath(new URL('.', import.meta.url)), 'chat-app')
const sourceAliases = Object.entries(base.resolve?.alias as Record<string, string>).map(([find, replacement]) => ({ find, replacement }))

export default defineConfig({
  ...base,
  resolve: {
    // First: an alias for 'sessionfold' would otherwise take 'sessionfold/react' as a path under it.
    alias: [{ find: 'sessionfold/react', replacement: fileURLToPath(new URL('../../src/react/index.ts', import.meta.url)) }, ...sourceAliases],
  },
  // React bundled up front too: found mid-session, Vite would reload the page under a live chat.
  optimizeDeps: { include: [...(base.optimizeDeps?.include ?? []), 'react', 'react-dom/client'] },
})
