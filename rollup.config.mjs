// The published package: ESM for browsers and for Node (plus CJS for Node's require), the
// worker entries, the adapters, and bundled .d.ts. Sources are TypeScript, transpiled by
// esbuild; idb, comlink and zod stay dependencies, except in the browser worker, which is
// self-contained so that any bundler can ship it as a plain file.
import { chmod, readFile } from 'node:fs/promises'
import { transform } from 'esbuild'
import { dts } from 'rollup-plugin-dts'
import { nodeResolve } from './scripts/rollup-resolve.mjs'

const deps = (id) => /^(idb|comlink|zod)(\/|$)/.test(id)
const external = (id) => deps(id) || id.startsWith('node:')

/** TypeScript through esbuild (types are checked by tsc --noEmit in the tests). */
const typescript = () => ({
  name: 'esbuild-ts',
  async resolveId(source, importer) {
    if (!importer || !source.startsWith('.') || /\.(m?js|ts)$/.test(source)) return null
    const resolved = await this.resolve(`${source}.ts`, importer, { skipSelf: true })
    return resolved ?? this.resolve(`${source}/index.ts`, importer, { skipSelf: true })
  },
  async transform(code, id) {
    if (!id.endsWith('.ts')) return null
    const out = await transform(code, { loader: 'ts', format: 'esm', target: 'es2022', sourcemap: true, sourcefile: id })
    return { code: out.code, map: out.map }
  },
})

/**
 * The client finds its worker and its platform code by paths into the source tree; in the
 * build they point at the built entries, and the other platform's code is left out.
 */
const platform = (target) => ({
  name: 'sessionfold-platform',
  resolveId(source) {
    if (target === 'browser' && (/platform-node|locks-fs|node-adapter/.test(source) || source.startsWith('node:'))) return '\0sessionfold-not-in-browser'
    if (target === 'node' && /platform-browser/.test(source)) return '\0sessionfold-not-in-node'
    return null
  },
  load(id) {
    if (id === '\0sessionfold-not-in-browser') {
      // Reached only where isNode is true, which a browser never is.
      return 'export const nodePlatform = undefined, releaseThreadLocks = async () => {}, Worker = undefined; export default undefined'
    }
    if (id === '\0sessionfold-not-in-node') return 'export const browserPlatform = undefined'
    return null
  },
  transform(code, id) {
    if (!id.endsWith('src/store.ts')) return null
    let out = code
      .replaceAll("'../worker/node-entry.ts'", "'./worker-entry.node.js'")
      .replaceAll("'../worker/browser-entry.ts'", "'./worker-entry.browser.js'")
      .replaceAll("'../worker/node-boot.mjs'", "'./node-boot.mjs'")
    if (target === 'browser') {
      // Node's worker files mean nothing to a browser bundler (it would look for them).
      out = out.replace("new URL('./worker-entry.node.js', import.meta.url)", 'undefined').replace("new URL('./node-boot.mjs', import.meta.url)", 'undefined')
    }
    return { code: out, map: null }
  },
  async generateBundle() {
    // Runs TypeScript worker files (workerUrl: './my-worker.ts') through tsx, where installed.
    if (target === 'node') this.emitFile({ type: 'asset', fileName: 'node-boot.mjs', source: await readFile('worker/node-boot.mjs', 'utf8') })
  },
})

const entries = {
  index: 'src/index.ts',
  'adapters/memory': 'adapters/memory.ts',
  'adapters/indexeddb': 'adapters/indexeddb.ts',
}

export default [
  // Node: ESM and CJS of the client, the worker API, the adapters, and the default worker.
  // (The CJS client spawns the ESM worker entry beside it: a worker needs no require.)
  ...['es', 'cjs'].map((format) => ({
    input: { ...entries, worker: 'worker/serve-node.ts', 'adapters/fs': 'adapters/fs/index.ts', ...(format === 'es' ? { 'worker-entry.node': 'worker/node-entry.ts' } : {}) },
    external,
    plugins: [platform('node'), typescript()],
    output: { dir: 'dist/node', format, entryFileNames: `[name].${format === 'es' ? 'js' : 'cjs'}`, chunkFileNames: `chunks/[name]-[hash].${format === 'es' ? 'js' : 'cjs'}`, sourcemap: true },
  })),
  // The `sessionfold` command line (package.json "bin"): one executable ESM file for Node.
  {
    input: { cli: 'cli/sessionfold.ts' },
    external,
    plugins: [platform('node'), typescript(), { name: 'executable', writeBundle: () => chmod('dist/node/cli.js', 0o755) }],
    output: { dir: 'dist/node', format: 'es', entryFileNames: '[name].js', inlineDynamicImports: true, banner: '#!/usr/bin/env node', sourcemap: true },
  },
  // Browsers: the client, the worker API and the adapters, as ESM.
  {
    input: { ...entries, worker: 'worker/serve-browser.ts' },
    external: deps, // node: imports are stubbed out by the platform plugin
    plugins: [platform('browser'), typescript()],
    output: { dir: 'dist/browser', format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js', sourcemap: true },
  },
  // The default browser worker, self-contained (its dependencies inlined).
  {
    input: { 'worker-entry.browser': 'worker/browser-entry.ts' },
    plugins: [platform('browser'), typescript(), nodeResolve()],
    output: { dir: 'dist/browser', format: 'es', entryFileNames: '[name].js', inlineDynamicImports: true, sourcemap: true },
  },
  // Bundled declarations, one file per entry point, as .d.ts (import) and .d.cts (require).
  ...Object.entries({ index: 'src/index.ts', worker: 'worker/serve-node.ts', 'adapters/memory': 'adapters/memory.ts', 'adapters/indexeddb': 'adapters/indexeddb.ts', 'adapters/fs': 'adapters/fs/index.ts' }).map(([name, input]) => ({
    input,
    external,
    plugins: [dts({ respectExternal: false, compilerOptions: { paths: {} } })],
    output: [{ file: `dist/types/${name}.d.ts`, format: 'es' }, { file: `dist/types/${name}.d.cts`, format: 'es' }],
  })),
]

