// A minimal node_modules resolver for the self-contained browser worker bundle: it inlines
// idb, comlink and zod, preferring their ESM ("module"/"exports" import) builds.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { readFileSync } from 'node:fs'

export function nodeResolve() {
  return {
    name: 'node-resolve-min',
    resolveId(source, importer) {
      if (!importer || source.startsWith('.') || source.startsWith('/') || source.startsWith('\0') || source.startsWith('node:')) return null
      const parts = source.split('/')
      const [name, ...rest] = source.startsWith('@') ? [parts.slice(0, 2).join('/'), ...parts.slice(2)] : parts
      const require = createRequire(importer)
      const pkgPath = require.resolve(`${name}/package.json`)
      const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'))
      const root = dirname(pkgPath)
      const sub = rest.length ? `./${rest.join('/')}` : '.'
      const exp = pkg.exports?.[sub] ?? (sub === '.' ? pkg.exports : undefined)
      const pick = (e) => (typeof e === 'string' ? e : e && (pick(e.browser) ?? pick(e.import) ?? pick(e.module) ?? pick(e.default)))
      const target = pick(exp) ?? (sub === '.' ? (pkg.module ?? pkg.main) : sub)
      return target ? join(root, target) : null
    },
  }
}
