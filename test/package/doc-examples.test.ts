// Package: every code example (the README's, docs/'s and the guide's, the doc comments' @example) compiles as written, against the published types (§6 entry points)
// Users paste examples into their apps and compile them against the package as published, so
// this does too: each document is a throwaway app (one tsc project, so that the guide's
// custom-projection files import one another as they say) with the built package in
// node_modules as an app installs it, compiled strict under moduleResolution bundler (the
// examples are ES modules with top-level await); one `tsc -b` builds them all. Against the
// built declarations, not the sources: what an app reads is dist/types, and some mistakes
// exist only there (a Store declared twice, refused by createSyncHandler).
// - A block that imports or exports something, or declares a module, is a module: compiled as
//   it is, at the path it names (`// examples/…`) so that its relative imports resolve.
// - Any other block is a fragment: the body of an async function, after CONTEXT, which holds
//   what fragments take from their surroundings (imports, and an app's `store`, `session`, DOM
//   nodes…, declared: their types are the package's).
// - A Markdown block marked ```ts sketch is a signature written for people, not code, and is
//   not compiled; SKETCHES counts them per file, so that they stay few and seen.
import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { commentExamples, markdownExamples, sourcesUnder, type DocExample } from '../support/doc-examples'
import { ensureBuilt, root } from '../support/ensure-built'

/** What fragments use without making it. An example that needs more declares it itself. */
const CONTEXT = `import http from 'node:http'
import { createElement, useSyncExternalStore } from 'react'
import { z } from 'zod'
import { bind, bindList, bindText, defineProjection, isSessionfoldError, openStore, sync, type ChangeCursor, type EventInput, type ProjectionMap, type Session, type Store } from 'sessionfold'
import { createStreamsHandler, createSyncHandler, toNodeListener, type Authorize } from 'sessionfold/server'
import { useChildren, useProjection, useSessions } from 'sessionfold/react'

// The app's stores (main: an Electron main process's), and the session handles it writes with.
declare const store: Store, main: Store, laptop: Store, backup: Store
declare const session: Session, child: Session
declare const id: string
declare const event: EventInput
declare const newKey: CryptoKey
// Its page.
declare const el: HTMLElement, cell: HTMLTableCellElement, ul: HTMLUListElement
// Its own functions: who may read or write what, tokens, rendering, IPC.
declare const authorize: Authorize
declare function mayAccess(request: Request, sessionId: string | undefined): boolean
declare function freshToken(): Promise<string>
declare function render(...values: unknown[]): void
declare function retry(): void
declare const ipc: { invoke(channel: string, ...args: unknown[]): Promise<unknown> }
`

/** The Markdown blocks that are sketches, per file. */
const SKETCHES: Record<string, number> = { 'docs/CONTRACT.md': 4 }

/** The Markdown files people read (root, and docs/ with its folders such as the guide; docs/reference/ is made from the doc comments). */
const MARKDOWN = [
  ...readdirSync(root).filter((f) => f.endsWith('.md')),
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md') && !f.startsWith('reference/'))
    .map((f) => `docs/${f}`),
].sort()

const fromMarkdown = MARKDOWN.flatMap((file) => markdownExamples(root, file))
const fromComments = sourcesUnder(root, ['src']).flatMap((file) => commentExamples(root, file))
const isSketch = (e: DocExample) => e.info.includes('sketch')

/** A module imports, exports or declares a module at its top level; anything else is a fragment. */
function isModule(code: string): boolean {
  const source = ts.createSourceFile('example.ts', code, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
  return source.statements.some(
    (s) =>
      ts.isImportDeclaration(s) ||
      ts.isImportEqualsDeclaration(s) ||
      ts.isExportDeclaration(s) ||
      ts.isExportAssignment(s) ||
      (ts.isModuleDeclaration(s) && ts.isStringLiteral(s.name)) ||
      (ts.canHaveModifiers(s) && (ts.getModifiers(s) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)),
  )
}

/** An example as a file of its project: its path there, and its text. */
function fileOf(e: DocExample): [string, string] {
  const origin = `// ${e.file}:${e.line}\n`
  if (isModule(e.code)) return [e.shows ?? `${e.file.replace(/\//g, '.')}.${e.line}.ts`, e.shows ? e.code : origin + e.code]
  const body = e.code
    .trimEnd()
    .split('\n')
    .map((l) => (l ? `  ${l}` : l))
    .join('\n')
  return [`${e.file.replace(/\//g, '.')}.${e.line}.ts`, `${origin}${CONTEXT}\nexport async function example() {\n${body}\n}\n`]
}

/** The projects: one per document, and one for every doc comment. */
const projects: Record<string, DocExample[]> = {
  ...Object.fromEntries(MARKDOWN.map((f) => [f.replace(/\//g, '-'), fromMarkdown.filter((e) => e.file === f && !isSketch(e))])),
  'doc-comments': fromComments,
}
for (const [name, examples] of Object.entries(projects)) if (examples.length === 0) delete projects[name]

const base = mkdtempSync(join(tmpdir(), 'sessionfold-doc-examples-'))
let compiled: { code: number | null; output: string }

/** The built package and the app's own dependencies, in node_modules, as an app installs them. */
function install(): void {
  const modules = join(base, 'node_modules')
  mkdirSync(join(modules, 'sessionfold/dist'), { recursive: true })
  cpSync(join(root, 'package.json'), join(modules, 'sessionfold/package.json'))
  cpSync(join(root, 'dist/types'), join(modules, 'sessionfold/dist/types'), { recursive: true })
  mkdirSync(join(modules, '@types'))
  mkdirSync(join(modules, '@vitest')) // vitest: the guide's page on testing an adapter configures it
  for (const dep of ['zod', 'react', 'postgres', 'vitest', '@vitest/browser-playwright', '@types/node', '@types/react'])
    symlinkSync(join(root, 'node_modules', dep), join(modules, dep), 'dir')
  writeFileSync(join(base, 'package.json'), JSON.stringify({ name: 'doc-examples', private: true, type: 'module' }))
}

function write(project: string, path: string, text: string): void {
  const file = join(base, project, path)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text, { flag: 'wx' }) // two examples at one path would hide one
}

beforeAll(async () => {
  ensureBuilt()
  install()
  for (const [project, examples] of Object.entries(projects)) {
    write(
      project,
      'tsconfig.json',
      JSON.stringify(
        {
          compilerOptions: {
            module: 'preserve',
            moduleResolution: 'bundler',
            target: 'es2022',
            lib: ['es2022', 'dom', 'dom.iterable'],
            types: ['node'],
            strict: true,
            noUncheckedIndexedAccess: true,
            skipLibCheck: true,
            noEmit: true,
          },
          include: ['**/*.ts'],
        },
        null,
        2,
      ),
    )
    for (const e of examples) write(project, ...fileOf(e))
  }
  // The doc comments' worker file imports the app's unit, beside it: the guide's.
  write('doc-comments', 'token-count.ts', readFileSync(join(root, 'examples/custom-projection/token-count.ts'), 'utf8'))
  const tsc = join(root, 'node_modules/typescript/bin/tsc')
  compiled = await new Promise((resolve) => {
    execFile(process.execPath, [tsc, '-b', ...Object.keys(projects), '--pretty', 'false'], { cwd: base, timeout: 240_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: stdout + stderr })
    })
  })
}, 300_000)

afterAll(() => rmSync(base, { recursive: true, force: true }))

describe('the code examples', () => {
  it("are found: the README's blocks, docs/'s (the guide's pages too), every @example of the sources", () => {
    expect(MARKDOWN).toEqual(expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/guide/README.md', 'docs/guide/sessions.md']))
    expect(fromMarkdown.filter((e) => e.file === 'README.md').length).toBeGreaterThan(0)
    expect(fromMarkdown.filter((e) => e.file.startsWith('docs/guide/')).length).toBeGreaterThan(10)
    expect(fromComments.length).toBeGreaterThan(20)
    expect(fromComments.map((e) => e.file)).toEqual(expect.arrayContaining(['src/client/store.ts', 'src/react/index.ts', 'src/host/entry/serve-node.ts']))
  })

  it('are sketches only where SKETCHES says so', () => {
    const sketches: Record<string, number> = {}
    for (const e of fromMarkdown.filter(isSketch)) sketches[e.file] = (sketches[e.file] ?? 0) + 1
    expect(sketches).toEqual(SKETCHES)
  })

  it('compile as written, strict, against the built package', () => {
    // Each error names its project's file; those files, numbered, follow it.
    const named = new Set([...compiled.output.matchAll(/^(\S+?\.ts)\(\d+,\d+\)/gm)].map((m) => m[1]!))
    const numbered = [...named].map(
      (f) =>
        `--- ${f}\n${readFileSync(join(base, f), 'utf8')
          .split('\n')
          .map((l, i) => `${String(i + 1).padStart(3)}  ${l}`)
          .join('\n')}`,
    )
    expect(compiled.code, `tsc -b in ${base} said:\n${compiled.output}\n${numbered.join('\n')}`).toBe(0)
  })
})
