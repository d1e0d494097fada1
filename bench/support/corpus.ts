// The corpus of bench/codec.ts (text files shipped in node_modules, taken at even steps in path
// order) and the bytes a store's folder holds, by kind of file.
import { createHash } from 'node:crypto'
import * as fs from 'node:fs'
import { basename, extname, join, relative, sep } from 'node:path'

export interface CorpusFile {
  path: string
  text: string
}

/** Every candidate under node_modules in path order (symlinks not followed), then `n` taken at even steps. */
export function loadCorpus(
  repo: string,
  n: number,
  CONFIG: { extensions: readonly string[]; minFileBytes: number; maxFileBytes: number },
): { files: CorpusFile[]; candidates: number; digest: string } {
  const exts = new Set(CONFIG.extensions)
  const found: string[] = []
  const walk = (dir: string) => {
    let entries: fs.Dirent[]
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const p = join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.isFile() && exts.has(extname(e.name))) {
        const size = fs.statSync(p).size
        if (size >= CONFIG.minFileBytes && size <= CONFIG.maxFileBytes) found.push(p)
      }
    }
  }
  walk(join(repo, 'node_modules'))
  if (found.length < n) throw new Error(`node_modules holds ${found.length} files that fit, BENCH_CODEC_FILES=${n}`)
  const step = found.length / n
  const hash = createHash('sha256')
  const files = Array.from({ length: n }, (_, i) => {
    const p = found[Math.floor(i * step)]!
    const path = relative(repo, p).split(sep).join('/')
    const text = fs.readFileSync(p, 'utf8')
    hash.update(`${path}\0${text}\0`)
    return { path, text }
  })
  return { files, candidates: found.length, digest: hash.digest('hex').slice(0, 16) }
}

/** Bytes of every file under `dir`, by kind (the session's log, its index, rows, the store's own files). */
export function diskBytes(dir: string): { total: number; byKind: Record<string, number>; files: number } {
  const byKind: Record<string, number> = {}
  let total = 0
  let files = 0
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.isFile()) {
        const size = fs.statSync(p).size
        const rel = relative(dir, p).split(sep)
        const kind =
          rel[0] === 'sessions' ? (rel.includes('history') ? 'history' : basename(p)) : rel[0] === 'meta' || rel[0] === 'locks' ? rel[0] : basename(p)
        byKind[kind] = (byKind[kind] ?? 0) + size
        total += size
        files++
      }
    }
  }
  walk(dir)
  return { total, byKind, files }
}
