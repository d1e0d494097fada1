// The published package: ESM for browsers and for Node (plus CJS for Node's require), the
// worker entries, the adapters, and bundled .d.ts. Sources are TypeScript, transpiled by
// esbuild; idb, comlink and zod stay dependencies (postgres an optional peer, Node only), except in the browser worker, which is
// self-contained so that any bundler can ship it as a plain file. sessionfold/testing imports
// vitest (an optional peer), ESM only: vitest cannot be required.
import { chmod, readFile, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { transform } from 'esbuild'
import { dts } from 'rollup-plugin-dts'
import { nodeResolve } from './scripts/rollup-resolve.mjs'

const deps = (id) => /^(idb|comlink|zod|react|sessionfold|postgres|vitest)(\/|$)/.test(id)
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
 * A file taken into the build as it is. node-boot.mjs runs an app's TypeScript worker file
 * through tsx; the client finds it beside itself, as it finds its worker entry.
 */
const copy = (from, fileName) => ({
  name: 'copy',
  async generateBundle() {
    this.emitFile({ type: 'asset', fileName, source: await readFile(from, 'utf8') })
  },
})

/**
 * Minified output, with a source map through to the sources. For the self-contained browser
 * worker only: an app's bundler finds it by `new URL('./worker-entry.browser.js',
 * import.meta.url)` and copies it as an asset, as it is, without minifying it (Vite does), so
 * it must already be small. Licence comments (`/*!`, `@license`) stay in.
 */
const minify = () => ({
  name: 'esbuild-minify',
  async renderChunk(code) {
    const out = await transform(code, { minify: true, format: 'esm', target: 'es2022', sourcemap: true, legalComments: 'inline' })
    return { code: out.code, map: out.map }
  },
})

/**
 * The declarations of each entry point (dist/types/<name>.d.ts and .d.cts), by name: a new
 * entry point is one line here, plus its rows in package.json "exports" and "typesVersions"
 * (test/package/types-consumers.test.ts checks that those three agree). They are built
 * together, so that what two entries declare alike is declared once, in a chunk
 * (dist/types/chunks/) or in one entry that the other imports.
 */
const declarations = {
  index: 'src/index-node.ts',
  worker: 'src/host/entry/serve-node.ts',
  'adapters/memory': 'src/backends/memory/index.ts',
  'adapters/indexeddb': 'src/backends/indexeddb/index.ts',
  'adapters/fs': 'src/backends/fs/index.ts',
  'adapters/postgres': 'src/backends/postgres/index.ts',
  react: 'src/react/index.ts',
  server: 'src/sync/server/index.ts',
  testing: 'src/testing/index.ts',
}
/** The entries that are ES modules only (no .cjs, no .d.cts): sessionfold/testing, as vitest is. */
const esmOnly = ['testing']

/** Leaves out of a .d.cts build the declarations of the entries that have no CJS. */
const noCjsDeclarations = () => ({
  name: 'no-cjs-declarations',
  generateBundle(_options, bundle) {
    for (const name of esmOnly) if (`${name}.d.cts` in bundle) delete bundle[`${name}.d.cts`]
  },
})

/**
 * Refuses a bundled declaration file that merges into a module by name (`declare module '…'`).
 * Such a name resolves differently under each moduleResolution and from .d.ts or .d.cts
 * (`'./index'` is no module at all under node16 from ESM, and the ESM file from CJS), so
 * what it declares goes missing in some apps: declare on the interface itself instead.
 */
const readAlikeInEveryResolution = () => ({
  name: 'read-alike-in-every-resolution',
  renderChunk(code, chunk) {
    const merge = /^\s*declare module\s+(['"][^'"]*['"])/m.exec(code)
    if (merge)
      this.error(
        `${chunk.fileName}: \`declare module ${merge[1]}\` reaches its module only under some moduleResolution settings; declare the members on the interface itself`,
      )
    return null
  },
})

/**
 * Refuses a class declared in two declaration files of one format. TypeScript compares classes
 * with private members by declaration, so two declarations of one class are two types that do
 * not take each other: `createSyncHandler({ store })` refused openStore()'s Store while
 * server.d.ts declared a Store of its own. One instance is shared by every declaration build,
 * so this holds across builds too, should the entries ever be split.
 */
const oneDeclarationOfEachClass = () => {
  const classesOf = new Map() // declaration file → the classes it declares
  return {
    name: 'one-declaration-of-each-class',
    generateBundle(options, bundle) {
      const dir = options.dir ?? dirname(options.file)
      for (const chunk of Object.values(bundle)) {
        if (chunk.type === 'chunk')
          classesOf.set(
            `${dir}/${chunk.fileName}`,
            [...chunk.code.matchAll(/^(?:export )?declare (?:abstract )?class (\w+)/gm)].map((m) => m[1]),
          )
      }
      const where = new Map() // 'Store .d.ts' → the files of that format declaring it
      for (const [file, names] of classesOf) {
        const format = file.endsWith('.d.cts') ? '.d.cts' : '.d.ts'
        for (const name of names) where.set(`${name} ${format}`, [...(where.get(`${name} ${format}`) ?? []), file])
      }
      for (const [key, files] of where) {
        if (files.length > 1) this.error(`class ${key.split(' ')[0]} is declared in ${files.join(' and ')}: declare it once, and import it where it is used`)
      }
    },
  }
}
const classes = oneDeclarationOfEachClass()

/** Empties `dir` before a build: a chunk named by a hash that changed would stay and be published. */
const emptyFirst = (dir) => ({ name: 'empty-first', buildStart: () => rm(dir, { recursive: true, force: true }) })

const adapters = {
  'adapters/memory': 'src/backends/memory/index.ts',
  'adapters/indexeddb': 'src/backends/indexeddb/index.ts',
}
/** sessionfold/react: the hooks alone (react and the client are imports of it, never bundled). */
const react = { react: 'src/react/index.ts' }
/** sessionfold/server: the sync handler (Fetch API only, so it runs in Node and on edge runtimes). */
const server = { server: 'src/sync/server/index.ts' }
/** sessionfold/testing: the storage conformance suite, for vitest in Node and in a browser. */
const testing = { testing: 'src/testing/index.ts' }

// Each platform has its own client entry (src/index-node.ts, src/index-browser.ts), which finds
// its default worker beside itself by a literal URL: worker-entry.node.js, worker-entry.browser.js.
export default [
  // Node: ESM and CJS of the client, the worker API, the adapters, and the default worker.
  // (The CJS client spawns the ESM worker entry beside it: a worker needs no require.)
  // The conformance suite: ESM only.
  ...['es', 'cjs'].map((format) => ({
    input: {
      index: 'src/index-node.ts',
      ...adapters,
      ...react,
      ...server,
      worker: 'src/host/entry/serve-node.ts',
      'adapters/fs': 'src/backends/fs/index.ts',
      'adapters/postgres': 'src/backends/postgres/index.ts',
      ...(format === 'es' ? { 'worker-entry.node': 'src/host/entry/node.ts', ...testing } : {}),
    },
    external,
    plugins: [typescript(), format === 'es' && copy('src/client/node-boot.mjs', 'node-boot.mjs')],
    output: {
      dir: 'dist/node',
      format,
      entryFileNames: `[name].${format === 'es' ? 'js' : 'cjs'}`,
      chunkFileNames: `chunks/[name]-[hash].${format === 'es' ? 'js' : 'cjs'}`,
      sourcemap: true,
    },
  })),
  // The `sessionfold` command line (package.json "bin"): one executable ESM file for Node.
  {
    input: { cli: 'src/cli/sessionfold.ts' },
    external,
    plugins: [typescript(), { name: 'executable', writeBundle: (options) => chmod(`${options.dir}/cli.js`, 0o755) }],
    output: { dir: 'dist/node', format: 'es', entryFileNames: '[name].js', inlineDynamicImports: true, banner: '#!/usr/bin/env node', sourcemap: true },
  },
  // Browsers: the client, the worker API, the adapters and the conformance suite, as ESM.
  {
    input: { index: 'src/index-browser.ts', ...adapters, ...react, ...server, ...testing, worker: 'src/host/entry/serve-browser.ts' },
    external: deps,
    plugins: [typescript()],
    output: { dir: 'dist/browser', format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js', sourcemap: true },
  },
  // The default browser worker and the one for storage 'opfs' (the default one with the file
  // adapter), each self-contained (its dependencies inlined) and minified.
  ...Object.entries({ 'worker-entry.browser': 'src/host/entry/browser.ts', 'worker-entry.opfs': 'src/host/entry/browser-opfs.ts' }).map(([name, file]) => ({
    input: { [name]: file },
    plugins: [typescript(), nodeResolve(), minify()],
    output: { dir: 'dist/browser', format: 'es', entryFileNames: '[name].js', inlineDynamicImports: true, sourcemap: true },
  })),
  // Bundled declarations, one file per entry point (and the chunks they share), as .d.ts (import)
  // and .d.cts (require), in one build so that each class is declared once.
  {
    input: declarations,
    external,
    plugins: [
      emptyFirst('dist/types'),
      dts({ respectExternal: false, compilerOptions: { paths: {} } }),
      readAlikeInEveryResolution(),
      noCjsDeclarations(),
      classes,
    ],
    output: ['d.ts', 'd.cts'].map((ext) => ({
      dir: 'dist/types',
      format: 'es',
      entryFileNames: `[name].${ext}`,
      chunkFileNames: `chunks/[name]-[hash].${ext}`,
    })),
  },
]
