// Serves the demo page (and durability.html, sync.html, tabs.html) with Vite's dev server:
// `npm run demo:page`, from this source tree (examples/vite-app shows a production build of
// the package).
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { sourceTreeConfig } from '../vite-source-tree.js'

export default defineConfig(sourceTreeConfig(fileURLToPath(new URL('.', import.meta.url)), 'demo-page'))
