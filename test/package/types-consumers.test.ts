// Package: the published types work in an app under every moduleResolution — node16, nodenext, bundler, node10 — from ESM and CJS files (§3 projections, §6 entry points, §19 an app's events)
// For each resolution mode and each module format (ESM: .ts in a "type": "module" app; CJS:
// .cts), a throwaway app gets the built package in node_modules as published (package.json
// and dist/types) and is compiled, strict, by our own tsc: one `tsc -b` per mode for its two
// apps, two at a time. Its files are what an app writes: a projection of its own typed the
// documented way (declare module 'sessionfold'), its events merged into EventMap with a
// versioned defineEvent, a main file reading built-in and own keys and appending typed events,
// a worker file, a sync server on openStore's store, the adapters. Each also holds lines that must NOT compile (@ts-expect-error:
// an unknown key, a wrong value type, wrong or missing event data, a type outside a closed
// EventMap: a third app per mode closes it) and exact type checks, so that `never` or `any` fails
// as surely as a missing export. publint and attw check where the types are; this checks
// what they say, as an app's compiler reads them.
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { root } from '../support/ensure-built'

/** compilerOptions per mode: each moduleResolution with the `module` it goes with. */
const MODES = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
  bundler: { module: 'preserve', moduleResolution: 'bundler' }, // preserve: `import x = require()` in .cts
  node10: { module: 'commonjs', moduleResolution: 'node10' },
} as const
type Mode = keyof typeof MODES

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  types: string
  exports: Record<string, unknown>
  typesVersions?: Record<string, Record<string, string[]>>
}

/** Every `types` target under an entry's conditions, as [condition path, file]. */
function typesOf(conditions: unknown, path = ''): [string, string][] {
  if (typeof conditions !== 'object' || conditions === null) return []
  return Object.entries(conditions).flatMap(([key, value]) =>
    key === 'types' && typeof value === 'string' ? [[path + key, value] as [string, string]] : typesOf(value, `${path}${key}.`),
  )
}

/** The entry points with types (all but ./package.json), each with its types files by condition. */
const ENTRIES = Object.entries(pkg.exports)
  .map(([subpath, conditions]) => ({ subpath, types: typesOf(conditions) }))
  .filter((e) => e.types.length > 0)

/**
 * The app's import lines, ESM or CJS; the code after them is the same. In CJS, sessionfold
 * and the app's own files come through `import x = require()`, which TypeScript resolves with
 * the `require` condition in every mode, and types are read off the module.
 */
const IMPORTS = {
  esm: {
    ext: 'ts',
    main: `import { openStore, type CatalogEntry, type Json, type ProjectionMap, type TimingView } from 'sessionfold'
import { tokenCount, type TokenCount } from './token-count.js'`,
    tokenCount: `import { defineEvent, defineProjection, type Json } from 'sessionfold'
import { z } from 'zod'`,
    worker: `import type { ChunkedList } from 'sessionfold'
import { chunkedListSchema, serveEngine } from 'sessionfold/worker'
import { z } from 'zod'
import { tokenCount, usageEvent, usageTotal } from './token-count.js'`,
    server: `import { createServer } from 'node:http'
import { openStore } from 'sessionfold'
import { createSyncHandler, toNodeListener, type SyncHandler } from 'sessionfold/server'`,
    adapters: `import { createFsAdapter } from 'sessionfold/adapters/fs'
import { createIndexedDbAdapter } from 'sessionfold/adapters/indexeddb'
import { createMemoryAdapter } from 'sessionfold/adapters/memory'
import { createPostgresAdapter } from 'sessionfold/adapters/postgres'`,
  },
  cjs: {
    ext: 'cts',
    main: `import sessionfold = require('sessionfold')
import tc = require('./token-count.cjs')
const { openStore } = sessionfold
const { tokenCount } = tc
type CatalogEntry = sessionfold.CatalogEntry
type ProjectionMap = sessionfold.ProjectionMap
type TimingView = sessionfold.TimingView
type Json = sessionfold.Json
type TokenCount = tc.TokenCount`,
    tokenCount: `import sessionfold = require('sessionfold')
import { z } from 'zod'
const { defineEvent, defineProjection } = sessionfold
type Json = sessionfold.Json`,
    worker: `import sessionfold = require('sessionfold')
import sfWorker = require('sessionfold/worker')
import { z } from 'zod'
import tc = require('./token-count.cjs')
const { chunkedListSchema, serveEngine } = sfWorker
const { tokenCount, usageEvent, usageTotal } = tc
type ChunkedList<T> = sessionfold.ChunkedList<T>`,
    server: `import nodeHttp = require('node:http')
import sessionfold = require('sessionfold')
import sfServer = require('sessionfold/server')
const { createServer } = nodeHttp
const { openStore } = sessionfold
const { createSyncHandler, toNodeListener } = sfServer
type SyncHandler = sfServer.SyncHandler`,
    adapters: `import fsAdapter = require('sessionfold/adapters/fs')
import idbAdapter = require('sessionfold/adapters/indexeddb')
import memoryAdapter = require('sessionfold/adapters/memory')
import pgAdapter = require('sessionfold/adapters/postgres')
const { createFsAdapter } = fsAdapter
const { createPostgresAdapter } = pgAdapter
const { createIndexedDbAdapter } = idbAdapter
const { createMemoryAdapter } = memoryAdapter`,
  },
} as const
type Format = keyof typeof IMPORTS
const FORMATS = ['esm', 'cjs'] as const

/** Exact type equality: a line that uses it compiles only when A and B are the same type. */
const EQUAL = `type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
function assertType<T extends true>(): T | void {}`

const BODIES = {
  // The guide's "Your own projections": a unit, and its view type merged into ProjectionMap.
  tokenCount: `const usage = z.object({ tokens: z.number().int().nonnegative() })
const state = z.object({ total: z.number(), turns: z.number() })
export type TokenCount = z.infer<typeof state>

export const tokenCount = defineProjection({
  key: 'tokenCount',
  stateVersion: 1,
  stateSchema: state,
  init: () => ({ total: 0, turns: 0 }),
  apply(s, event) {
    if (event.type !== 'llm/usage') return s
    const parsed = usage.safeParse(event.data)
    return parsed.success ? { total: s.total + parsed.data.tokens, turns: s.turns + 1 } : s
  },
  view: { schema: state, view: (s) => s },
})

// The app's own event, at its second version: typed by EventMap, checked and upcast by its definition.
const usageV1 = z.object({ count: z.number() })
export const usageEvent = defineEvent({
  type: 'llm/usage',
  versions: [usageV1, { schema: usage, up: (v1) => ({ tokens: v1.count }) }],
})
// A unit that names its types gets each event narrowed by its type.
export const usageTotal = defineProjection({
  key: 'usageTotal',
  stateVersion: 1,
  stateSchema: z.number(),
  types: ['llm/usage', 'turn/end'],
  init: () => 0,
  apply(n, event) {
    if (event.type === 'turn/end') return n
    const tokens: number = event.data.tokens
    // @ts-expect-error: llm/usage data has no text
    void event.data.text
    return n + tokens
  },
})

declare module 'sessionfold' {
  interface ProjectionMap {
    tokenCount: TokenCount
  }
  interface EventMap {
    'llm/usage': { tokens: number }
    'app/note': { text: string; tags?: string[] } | null
    'app/json': Json
  }
}`,
  main: `${EQUAL}

export async function main(): Promise<number> {
  const store = await openStore({ storage: 'memory', worker: false, projections: [tokenCount] })
  const session = await store.createSession({ cwd: '/app' })
  const child = await session.spawn({ mode: 'one-shot', label: 'reviewer' })
  await child.append({ type: 'turn/start' })

  // Built-in keys, typed by the package itself.
  const catalog = session.projections.get('subagentCatalog')
  assertType<Equal<typeof catalog, CatalogEntry[] | null>>()
  const labels: (string | undefined)[] = (catalog ?? []).map((entry) => entry.label)
  const stop = session.projections.subscribe('subagentTiming', (v, meta) => {
    assertType<Equal<typeof v, TimingView | null>>()
    const turns: number | undefined = v?.turns
    const seq: number = meta.seq
    return [turns, seq]
  })
  assertType<Equal<ReturnType<typeof session.projections.get<'subagent'>>, ProjectionMap['subagent'] | null>>()

  // The app's own key, merged in by its token-count file.
  const tokens = session.projections.get('tokenCount')
  assertType<Equal<typeof tokens, TokenCount | null>>()
  session.projections.subscribe('tokenCount', (t) => t?.total)
  const { values } = session.projections.snapshot()
  assertType<Equal<typeof values.tokenCount, TokenCount | null>>()
  assertType<Equal<typeof values.subagentTiming, TimingView | null>>()

  // @ts-expect-error: not a key of ProjectionMap
  session.projections.get('tokenCont')
  // @ts-expect-error: not a key of ProjectionMap
  session.projections.subscribe('nope', () => {})
  // @ts-expect-error: the catalog is a list, not a number
  const wrong: number | null = session.projections.get('subagentCatalog')
  // @ts-expect-error: the listener gets the key's type
  session.projections.subscribe('subagentTiming', (v: { total: number } | null) => v)
  // @ts-expect-error: no such storage
  await openStore({ storage: 'paper' })
  // The worker function's result is typed by its shape (WorkerLike, SharedWorkerLike): a
  // Worker, or anything shaped so, with or without the DOM lib.
  const started = () => ({ postMessage: (message: unknown) => void message, terminate: () => {} })
  void openStore({ storage: 'indexeddb', worker: started })
  // @ts-expect-error: the function returns the Worker it starts, not where its file is
  void openStore({ worker: () => './worker.js' })

  // The app's events (EventMap, in token-count): append checks data by type.
  await session.append({ type: 'llm/usage', data: { tokens: 3 } })
  await session.append([{ type: 'llm/usage', data: { tokens: 1 } }, { type: 'app/note' }, { type: 'app/untyped', data: [1, 'x'] }])
  await session.append({ type: 'session/meta', data: { title: 'typed too' } })
  // @ts-expect-error: wrong data for its type
  await session.append({ type: 'llm/usage', data: { tokens: 'many' } })
  // @ts-expect-error: a missing field
  await session.append({ type: 'llm/usage', data: {} })
  // @ts-expect-error: its data cannot be left out
  await session.append({ type: 'llm/usage' })
  // @ts-expect-error: one wrong event in a batch
  await session.append([{ type: 'app/note' }, { type: 'llm/usage', data: { tokens: null } }])
  // @ts-expect-error: a reserved event's data is typed as well
  await session.append({ type: 'session/meta', data: { title: 5 } })
  // A type outside the map takes any Json.
  await session.append({ type: 'app/untyped', data: { any: ['json', 1, null] } })
  for await (const e of session.events({ types: ['llm/usage', 'app/note'] })) {
    if (e.type === 'llm/usage') assertType<Equal<typeof e.data, { tokens: number }>>()
    else assertType<Equal<typeof e.data, { text: string; tags?: string[] } | null>>()
  }
  for await (const e of session.events()) assertType<Equal<typeof e.data, Json>>()

  stop()
  await store.close()
  return labels.length + (wrong ?? 0)
}`,
  worker: `${EQUAL}

export function start(): Promise<void> {
  // @ts-expect-error: events are defineEvent() definitions
  void serveEngine({ events: ['llm/usage'] })
  void serveEngine({ projections: [tokenCount, usageTotal], events: [usageEvent] })
  const list = chunkedListSchema(z.number())
  assertType<Equal<ReturnType<typeof list.parse>['length'], number>>()
  // The class 'sessionfold' exports is the one the schema parses to: one declaration of it
  // (two would differ by their private members, and neither would take the other).
  const parsed: ChunkedList<number> = list.parse([[1, 2]])
  assertType<Equal<ReturnType<typeof list.parse>, ChunkedList<number>>>()
  void parsed.append(3)
  // @ts-expect-error: projections are units, not keys
  void serveEngine({ projections: ['tokenCount'] })
  return serveEngine({ projections: [tokenCount] })
}`,
  // The guide's "Sync with a server": openStore's Store is the Store the handler takes.
  server: `${EQUAL}

export async function serve(): Promise<SyncHandler> {
  const store = await openStore({ storage: 'memory', worker: false })
  const handler = createSyncHandler({ store, basePath: '/sync', authorize: ({ sessionId }) => sessionId === undefined || sessionId.startsWith('u1-') })
  assertType<Equal<Parameters<typeof createSyncHandler>[0]['store'], typeof store>>()
  createServer(toNodeListener(handler)).listen(8787, '127.0.0.1')
  // @ts-expect-error: a store, not the options of one
  createSyncHandler({ store: { storage: 'memory' }, authorize: () => true })
  // @ts-expect-error: every request is authorized by the app
  createSyncHandler({ store })
  return handler
}`,
  adapters: `export async function adapters(): Promise<string[]> {
  const all = [
    createMemoryAdapter(), createFsAdapter({ dir: '.sessionfold', durability: 'relaxed' }), createIndexedDbAdapter({ name: 'app' }),
    // Its types need no driver installed (postgres is an optional peer dependency).
    createPostgresAdapter({ url: 'postgres://localhost/app', schema: 'app', fence: (id) => (id === 'x' ? 1n : undefined) }),
  ]
  const ids: string[][] = await Promise.all(all.map((adapter) => adapter.listIds({ limit: 10 })))
  // @ts-expect-error: no such durability
  createFsAdapter({ durability: 'sometimes' })
  // @ts-expect-error: the schema is a string
  createPostgresAdapter({ url: 'postgres://localhost/app', schema: 1 })
  return ids.flat()
}`,
} as const

/**
 * An adapter's conformance test file (sessionfold/testing): ES modules only, as vitest is, so
 * only the ESM app has it.
 */
const TESTING = `import { createMemoryAdapter } from 'sessionfold/adapters/memory'
import { storageConformance, type AdapterHarness, type StorageConformanceOptions } from 'sessionfold/testing'

export function register(): void {
  const options: StorageConformanceOptions = { without: ['kv', 'meta'], timeout: 30_000 }
  const setup = async (): Promise<AdapterHarness> => {
    const adapter = createMemoryAdapter()
    return { adapter, reopen: async () => adapter, teardown: () => adapter.close() }
  }
  storageConformance('memory', setup, options)
  // @ts-expect-error: not an optional member of StorageAdapter
  storageConformance('memory', setup, { without: ['append'] })
  // @ts-expect-error: setup returns a harness, not an adapter
  storageConformance('memory', async () => createMemoryAdapter())
}
`

/**
 * An app that closes its EventMap (ESM, one file, a project of its own: the setting is for a
 * whole program): a type outside the map, or one known only at run time, does not compile.
 */
const CLOSED = `import type { Store } from 'sessionfold'

declare module 'sessionfold' {
  interface EventMapSettings {
    closed: true
  }
  interface EventMap {
    'chat/message': { role: 'user' | 'assistant'; text: string }
  }
}

export async function closed(store: Store): Promise<void> {
  const s = await store.createSession()
  await s.append({ type: 'chat/message', data: { role: 'user', text: 'hi' } })
  await s.append([{ type: 'turn/start' }, { type: 'turn/end', data: { ok: true } }])
  // @ts-expect-error: a type outside the closed map
  await s.append({ type: 'app/other', data: 1 })
  const dynamic: string = 'chat/message'
  // @ts-expect-error: a type known only at run time
  await s.append({ type: dynamic, data: null })
  // @ts-expect-error: wrong data for its type
  await s.append({ type: 'chat/message', data: { role: 'robot', text: 'hi' } })
  for await (const e of s.events()) {
    if (e.type === 'chat/message') {
      const text: string = e.data.text
      void text
    }
    // @ts-expect-error: not a type of the closed map
    if (e.type === 'app/other') void e
  }
}
`

function sourcesOf(format: Format): Record<string, string> {
  const imports = IMPORTS[format]
  const file = (name: 'main' | 'tokenCount' | 'worker' | 'server' | 'adapters', base: string) =>
    [`src/${base}.${imports.ext}`, `${imports[name]}\n\n${BODIES[name]}\n`] as const
  return Object.fromEntries([
    file('tokenCount', 'token-count'),
    file('main', 'main'),
    file('worker', 'worker'),
    file('server', 'server'),
    file('adapters', 'adapters'),
    ...(format === 'esm' ? [['src/testing.ts', TESTING] as const] : []),
  ])
}

/**
 * A throwaway app: its tsconfig for `mode`, its files in `format`, and the package as an app
 * installs it. One app per format: in one program, an ESM file's augmentation could hide a
 * CJS file's missing one when both reach the same .d.ts (and the other way round).
 */
function makeApp(dir: string, mode: Mode, format: Format): void {
  const modules = join(dir, 'node_modules')
  const pkg = join(modules, 'sessionfold')
  mkdirSync(join(pkg, 'dist'), { recursive: true })
  cpSync(join(root, 'package.json'), join(pkg, 'package.json'))
  cpSync(join(root, 'dist/types'), join(pkg, 'dist/types'), { recursive: true })
  // The app's own dependencies: zod (which sessionfold's types also import) and Node's types.
  symlinkSync(join(root, 'node_modules/zod'), join(modules, 'zod'), 'dir')
  mkdirSync(join(modules, '@types'))
  symlinkSync(join(root, 'node_modules/@types/node'), join(modules, '@types/node'), 'dir')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${mode}-${format}`, private: true, type: 'module' }))
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          ...MODES[mode],
          target: 'es2022',
          strict: true,
          noUncheckedIndexedAccess: true,
          esModuleInterop: true, // zod's own .d.cts need it under node10
          // As apps have it (tsc --init writes it): checking zod's and Node's .d.ts too would
          // double the time. What our .d.ts say is checked through the app's lines below.
          skipLibCheck: true,
          types: ['node'],
          noEmit: true,
        },
        include: ['src'],
      },
      null,
      2,
    ),
  )
  mkdirSync(join(dir, 'src'))
  for (const [path, text] of Object.entries(sourcesOf(format))) writeFileSync(join(dir, path), text)
}

interface Compiled {
  code: number | null
  output: string
  ms: number
}

/**
 * One tsc for a mode's two apps: `tsc -b` builds each as its own program (the tsconfig says
 * noEmit), and parses the files they share (lib, zod, @types/node) once: a quarter less time.
 */
function tsc(dir: string): Promise<Compiled> {
  const started = performance.now()
  const args = [join(root, 'node_modules/typescript/bin/tsc'), '-b', ...FORMATS, 'closed', '--pretty', 'false']
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: dir, timeout: 240_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: stdout + stderr, ms: performance.now() - started })
    })
  })
}

/** Runs `jobs` at most `limit` at a time (the machine is shared: two compilers at once). */
async function pooled<T>(jobs: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(jobs.length)
  let next = 0
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++
      results[i] = await jobs[i]!()
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker))
  return results
}

const modes = Object.keys(MODES) as Mode[]
const base = mkdtempSync(join(tmpdir(), 'sessionfold-types-'))
const results = new Map<Mode, Compiled>()

beforeAll(async () => {
  const missing = ENTRIES.flatMap((e) => e.types.map(([, file]) => file)).filter((f) => !existsSync(join(root, f)))
  if (missing.length > 0) {
    throw new Error(`the built package is missing ${missing.join(', ')}: build it first with \`npm run build\` (npm test does)`)
  }
  for (const mode of modes) {
    for (const format of FORMATS) makeApp(join(base, mode, format), mode, format)
    const closed = join(base, mode, 'closed')
    makeApp(closed, mode, 'esm')
    rmSync(join(closed, 'src'), { recursive: true })
    mkdirSync(join(closed, 'src'))
    writeFileSync(join(closed, 'src/closed.ts'), CLOSED)
  }
  const compiled = await pooled(
    modes.map((mode) => () => tsc(join(base, mode))),
    2,
  )
  modes.forEach((mode, i) => results.set(mode, compiled[i]!))
}, 600_000)

afterAll(() => rmSync(base, { recursive: true, force: true }))

/** The declaration files built, as package-relative paths ('./dist/types/…'), sorted. */
function built(): string[] {
  return readdirSync(join(root, 'dist/types'), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.d\.c?ts$/.test(f))
    .map((f) => `./dist/types/${f}`)
    .sort()
}

/** The package's own declaration files that `file` imports or re-exports ('./x.js' is x.d.ts; './x.cjs', x.d.cts). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  return [...text.matchAll(/^(?:import|export)\b[^'"]*?(?:from )?'(\.[^']+)'/gm)].map(
    ([, specifier]) => `./${posix.join(posix.dirname(file), specifier!.replace(/\.js$/, '.d.ts').replace(/\.cjs$/, '.d.cts'))}`,
  )
}

describe('the published types, in an app', () => {
  it('declare each class once, in .d.ts and in .d.cts: every entry point that names it imports that one declaration', () => {
    // Two declarations of one class are two types that do not take each other (their private
    // members are "separate declarations"): createSyncHandler({ store }) with openStore()'s Store
    // failed so, when sessionfold/server's file declared a Store of its own.
    for (const ext of ['.d.ts', '.d.cts']) {
      const where = new Map<string, string[]>()
      for (const file of built().filter((f) => f.endsWith(ext))) {
        for (const [, name] of readFileSync(join(root, file), 'utf8').matchAll(/^(?:export )?declare (?:abstract )?class (\w+)/gm)) {
          where.set(name!, [...(where.get(name!) ?? []), file])
        }
      }
      expect(where.get('Store'), `the files of ${ext} that declare Store`).toHaveLength(1)
      expect(
        [...where].filter(([, files]) => files.length > 1),
        `classes declared in more than one ${ext} file`,
      ).toEqual([])
    }
  })

  it('are there for every entry point under every resolution: package.json "exports" and "typesVersions" agree', () => {
    expect(ENTRIES.map((e) => e.subpath)).toEqual(
      expect.arrayContaining(['.', './worker', './adapters/memory', './adapters/indexeddb', './adapters/fs', './adapters/postgres', './testing']),
    )
    // Every declaration file built (rollup.config.mjs, `declarations`) is an entry's, or a
    // chunk of what entries share (chunks/), which an entry reaches.
    const entries = built().filter((f) => !f.startsWith('./dist/types/chunks/'))
    expect(entries).toEqual(
      ENTRIES.flatMap((e) => e.types.map(([, file]) => file))
        .filter((f, i, all) => all.indexOf(f) === i)
        .sort(),
    )
    const reached = new Set(entries)
    for (const file of reached) for (const imported of importsOf(file)) reached.add(imported)
    expect(built(), 'declaration files no entry reaches').toEqual([...reached].sort())
    for (const { subpath, types } of ENTRIES) {
      // import and the default: the .d.ts; require: the .d.cts of the same name.
      const name = subpath === '.' ? 'index' : subpath.slice(2)
      for (const [condition, file] of types) {
        expect(file, `${subpath} ${condition}`).toBe(`./dist/types/${name}.${condition.endsWith('require.types') ? 'd.cts' : 'd.ts'}`)
      }
      // node10 reads no "exports": "types" for the root, "typesVersions" for the others.
      const node10 = subpath === '.' ? [pkg.types] : pkg.typesVersions?.['*']?.[name]
      expect(node10, `${subpath} under node10`).toEqual(subpath === '.' ? ['./dist/types/index.d.ts'] : [`./dist/types/${name}.d.ts`])
    }
    expect(Object.keys(pkg.typesVersions?.['*'] ?? {}).sort()).toEqual(
      ENTRIES.filter((e) => e.subpath !== '.')
        .map((e) => e.subpath.slice(2))
        .sort(),
    )
  })

  it.each(modes)('compile under moduleResolution %s, from ESM files and from CJS files', (mode) => {
    const r = results.get(mode)!
    console.log(`tsc -b, moduleResolution ${mode}, ESM and CJS apps: ${Math.round(r.ms)} ms`)
    const numbered = (text: string) =>
      text
        .split('\n')
        .map((line, i) => `${String(i + 1).padStart(3)}  ${line}`)
        .join('\n')
    const files = FORMATS.flatMap((format) => Object.entries(sourcesOf(format)).map(([path, text]) => `--- ${format}/${path}\n${numbered(text)}`))
    expect(r.code, `tsc -b esm cjs in ${join(base, mode)} (${JSON.stringify(MODES[mode])}) said:\n${r.output}\n${files.join('\n')}`).toBe(0)
  })
})
