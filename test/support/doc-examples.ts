// Support: the code examples of the Markdown files and of the sources' doc comments, as written
// A test compiles them (test/package/doc-examples.test.ts) and checks the README's and the guide's against
// the files under examples/ (test/package/readme.test.ts); both read them from here.
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'

/** One example: where it is written (file and 1-based line of its first code line) and its code. */
export interface DocExample {
  file: string
  line: number
  code: string
  /** A Markdown block's info words after its language: ```ts sketch → ['sketch']. */
  info: string[]
  /** The repository file it shows, when its first line names one: `// examples/node-script.ts`. */
  shows?: string
}

const TS = new Set(['ts', 'typescript', 'tsx', 'mts', 'cts'])

/** The TypeScript blocks of a Markdown file, indented ones (in a list item) included, de-indented. */
export function markdownExamples(root: string, file: string): DocExample[] {
  const text = readFileSync(join(root, file), 'utf8')
  const found: DocExample[] = []
  for (const m of text.matchAll(/^( *)```(\w+)([^\n]*)\n([\s\S]*?)^\1```[ \t]*$/gm)) {
    const [, indent = '', lang = '', info = '', body = ''] = m
    if (!TS.has(lang)) continue
    const code = body
      .split('\n')
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      .join('\n')
    const shows = /^\/\/ (examples\/\S+\.tsx?)\n/.exec(code)?.[1]
    found.push({ file, line: text.slice(0, m.index).split('\n').length + 1, code, info: info.trim().split(/\s+/).filter(Boolean), ...(shows ? { shows } : {}) })
  }
  return found
}

/**
 * The `@example`s of a source file's doc comments (every `/** … *\/`, attached to a
 * declaration or not), read as TypeDoc shows them: an example ends at the next tag or at the
 * comment's end; without fences all of it is code (words on the tag's own line too), with
 * fences the code is what they hold and the words before them are a title.
 */
export function commentExamples(root: string, file: string): DocExample[] {
  const text = readFileSync(join(root, file), 'utf8')
  const found: DocExample[] = []
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const lines = comment[0]
      .slice(3, -2)
      .split('\n')
      .map((l) => l.replace(/^\s*\* ?/, ''))
    const start = text.slice(0, comment.index).split('\n').length
    for (let i = 0; i < lines.length; i++) {
      const tag = /^@example\b ?(.*)$/.exec(lines[i]!)
      if (!tag) continue
      let end = i + 1
      while (end < lines.length && !/^@\w/.test(lines[end]!)) end++
      let body = lines.slice(i + 1, end)
      let first = i + 1
      const fence = body.findIndex((l) => l.startsWith('```'))
      if (fence >= 0) {
        const close = body.findIndex((l, j) => j > fence && l.startsWith('```'))
        first += fence + 1
        body = body.slice(fence + 1, close)
      } else if (tag[1]) {
        body = [tag[1], ...body] // no title and no fence: the tag's line is code already
        first = i
      }
      found.push({ file, line: start + first, code: `${body.join('\n').trimEnd()}\n`, info: [] })
      i = end - 1
    }
  }
  return found
}

/** The TypeScript sources under `dirs` (declaration files aside), as paths relative to `root`. */
export function sourcesUnder(root: string, dirs: string[]): string[] {
  return dirs
    .flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts'))
        .map((e) => relative(root, join(e.parentPath, e.name))),
    )
    .sort()
}
