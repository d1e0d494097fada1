// Support: ensureBuilt() and the repo root, for the tests of the built package (dist/)
// Tests of the built package need dist/: npm test builds it first; a lone vitest run builds here.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

export const root = join(__dirname, '../..')

export function ensureBuilt(): void {
  if (existsSync(join(root, 'dist/browser/worker-entry.browser.js'))) return
  const r = spawnSync(process.execPath, [join(root, 'node_modules/rollup/dist/bin/rollup'), '-c', '--silent'], { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`)
}
