// Package: importing every entry point in Node touches no browser global (§6 entry points)
// Importing sessionfold in Node touches no browser global (window, document, indexedDB, self,
// localStorage, ...): each one throws here if read. (Not navigator: zod reads
// navigator.userAgent in a guarded feature check of its own.)
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { expect, it } from 'vitest'

it('imports the client, the worker entry and every adapter in Node without touching browser globals', () => {
  const root = join(__dirname, '../..')
  const script = `
    for (const name of ['window', 'document', 'indexedDB', 'self', 'localStorage', 'IDBKeyRange', 'IDBDatabase', 'SharedWorker']) {
      Object.defineProperty(globalThis, name, { configurable: true, get() { throw new Error('touched ' + name) } })
    }
    for (const m of ['./src/index-node.ts', './src/host/entry/serve-node.ts', './src/backends/memory/index.ts', './src/backends/fs/index.ts', './src/backends/postgres/index.ts', './src/backends/indexeddb/index.ts']) await import(m)
    console.log('clean')
  `
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' })
  expect(r.stderr).toBe('')
  expect(r.stdout.trim()).toBe('clean')
})
