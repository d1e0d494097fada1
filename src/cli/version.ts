// `sessionfold --version`: the version in the package's own package.json. It is read at run
// time, by walking up from this file, because the same code runs as cli/*.ts from the repo,
// as dist/node/cli.js from the repo, and as node_modules/sessionfold/dist/node/cli.js where
// it is installed: in each, the nearest package.json named "sessionfold" is the package's.
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export async function packageVersion(from: string = import.meta.url): Promise<string> {
  for (let dir = dirname(fileURLToPath(from)); ; dir = dirname(dir)) {
    const pkg = await readFile(join(dir, 'package.json'), 'utf8').then(
      (t) => JSON.parse(t) as { name?: unknown; version?: unknown },
      () => undefined,
    )
    if (pkg?.name === 'sessionfold' && typeof pkg.version === 'string') return pkg.version
    if (dirname(dir) === dir) throw new Error('the package.json of sessionfold was not found beside the command')
  }
}
