// Serves the inspector (`npm run inspector`) with Vite's dev server, from this source tree.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { sourceTreeConfig } from '../vite-source-tree.js'

export default defineConfig(sourceTreeConfig(fileURLToPath(new URL('.', import.meta.url)), 'inspector'))
