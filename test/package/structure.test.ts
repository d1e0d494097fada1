// Package: the house rules of docs/ARCHITECTURE.md — the layers, backends reached only through
// their registry, one place that builds an engine, no import cycle among the source files
// (type-only imports included), no source file over 400 lines, and a build that names entries
// without rewriting source text.
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { root } from '../support/ensure-built'

const FOLDERS = ['src']
const MAX_LINES = 400

/**
 * The layer of a source file (docs/ARCHITECTURE.md, "The layers"). A feature folder may hold
 * parts of several layers: src/sync/ has the wire protocol and the loop (sync), the worker's
 * running replications (host, runs.ts), the client's handle (connect.ts) and sync() between stores (client), and the
 * HTTP handler (server).
 */
function layerOf(file: string): string {
  const r = relative(root, file)
  if (/^src\/index(-node|-browser)?\.ts$/.test(r)) return 'entry'
  if (r.startsWith('src/sync/server/') || r.startsWith('src/streams/server/')) return 'server'
  if (r === 'src/sync/runs.ts') return 'host'
  if (r === 'src/sync/connect.ts' || r === 'src/sync/between-stores.ts') return 'client'
  if (r.startsWith('src/types/')) return 'core'
  return r.split('/')[1]!
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.(ts|mts|mjs|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

const files = FOLDERS.flatMap((folder) => sourceFiles(join(root, folder)))
const options: ts.CompilerOptions = { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, allowJs: true }

/** Every file of the tree that `file` imports, type-only and dynamic imports included. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
  return importedFiles.flatMap(({ fileName }) => {
    if (!fileName.startsWith('.')) return []
    const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule?.resolvedFileName
    return resolved && files.includes(resolved) ? [resolved] : []
  })
}

/** The import cycles among `files`, each as the list of its files (one per strongly connected group). */
function cycles(): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f)]))
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const found: string[][] = []
  let next = 0
  const visit = (f: string) => {
    index.set(f, next)
    low.set(f, next++)
    stack.push(f)
    for (const g of graph.get(f) ?? []) {
      if (!index.has(g)) {
        visit(g)
        low.set(f, Math.min(low.get(f)!, low.get(g)!))
      } else if (stack.includes(g)) {
        low.set(f, Math.min(low.get(f)!, index.get(g)!))
      }
    }
    if (low.get(f) === index.get(f)) {
      const group: string[] = []
      for (let g = stack.pop()!; ; g = stack.pop()!) {
        group.push(relative(root, g))
        if (g === f) break
      }
      if (group.length > 1 || graph.get(f)!.includes(f)) found.push(group)
    }
  }
  for (const f of files) if (!index.has(f)) visit(f)
  return found
}

describe('the structure of the source tree', () => {
  it('reads the whole tree (the check below has something to check)', () => {
    expect(files.length).toBeGreaterThan(50)
    expect(importsOf(join(root, 'src/engine/index.ts')).length).toBeGreaterThan(10)
  })

  it('has no import cycle, type-only imports included', () => {
    expect(cycles()).toEqual([])
  })

  it('keeps the layers of docs/ARCHITECTURE.md: each imports only the layers below it', () => {
    const allowed: Record<string, string[]> = {
      core: ['core'],
      storage: ['core', 'storage'],
      backends: ['core', 'storage', 'backends'],
      engine: ['core', 'storage', 'engine'],
      sync: ['core', 'sync'],
      host: ['core', 'storage', 'backends', 'engine', 'sync', 'host'],
      client: ['core', 'backends', 'host', 'sync', 'client'],
      entry: ['core', 'backends', 'sync', 'client', 'entry'],
      cli: ['core', 'storage', 'backends', 'engine', 'host', 'cli'],
      react: ['react'],
      server: ['core', 'sync', 'client', 'server'],
      testing: ['core', 'storage', 'testing'],
    }
    expect(files.map(layerOf).filter((layer) => !(layer in allowed))).toEqual([])
    const wrong = files.flatMap((f) =>
      importsOf(f)
        .filter((g) => !allowed[layerOf(f)]!.includes(layerOf(g)))
        .map((g) => `${relative(root, f)} (${layerOf(f)}) -> ${relative(root, g)} (${layerOf(g)})`),
    )
    expect(wrong).toEqual([])
  })

  it('reaches the backends only through their registry: src/backends/{node,browser,config,platform}.ts', () => {
    const registry = ['node', 'browser', 'config', 'platform'].map((name) => join(root, `src/backends/${name}.ts`))
    const reached = files
      .filter((f) => layerOf(f) !== 'backends')
      .flatMap((f) =>
        importsOf(f)
          .filter((g) => layerOf(g) === 'backends')
          .map((g) => ({ from: relative(root, f), to: g })),
      )
    expect(reached.length).toBeGreaterThan(0)
    expect(reached.filter(({ to }) => !registry.includes(to)).map(({ from, to }) => `${from} -> ${relative(root, to)}`)).toEqual([])
  })

  it('builds engines in one place: src/host/open-engine.ts is the only file that constructs an Engine', () => {
    const constructing = files.filter((f) => /\bnew Engine\s*\(/.test(readFileSync(f, 'utf8'))).map((f) => relative(root, f))
    expect(constructing).toEqual(['src/host/open-engine.ts'])
  })

  it("keeps sessionfold/react (src/react/) on the client's public types: it imports 'sessionfold' for types only", () => {
    const react = files.filter((f) => relative(root, f).startsWith('src/react/'))
    expect(react.length).toBeGreaterThan(0)
    const imports = react.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .filter((line) => /from 'sessionfold(\/.*)?'/.test(line)),
    )
    expect(imports.length).toBeGreaterThan(0)
    expect(imports.filter((line) => !/^(import|export) type /.test(line))).toEqual([])
  })

  it(`has no source file over ${MAX_LINES} lines`, () => {
    const long = files.map((f) => ({ file: relative(root, f), lines: readFileSync(f, 'utf8').split('\n').length })).filter((f) => f.lines > MAX_LINES)
    expect(long).toEqual([])
  })

  it('builds from named entries: rollup.config.mjs rewrites no source text', () => {
    const config = readFileSync(join(root, 'rollup.config.mjs'), 'utf8')
    expect(config).not.toMatch(/\.replace(All)?\(/)
    expect(config).not.toMatch(/\bload\s*\(/)
  })
})
