// Support: the `sessionfold` executable built fresh from the sources, and a runner for it
// Builds the command line's entry of rollup.config.mjs (the very bundle package.json "bin"
// ships, same plugins and banner) into test-output/, so that tests run the real executable
// of the code as it is now, not a dist/ left from an older build; runs it as a process.
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { rollup, type OutputOptions, type RollupOptions } from 'rollup'

export const root = join(__dirname, '../..')

/** Builds the executable; resolves with its path and a remover. */
export async function buildCli(): Promise<{ file: string; remove(): Promise<void> }> {
  const configs = (await import(join(root, 'rollup.config.mjs'))).default as RollupOptions[]
  const config = configs.find((c) => typeof c.input === 'object' && c.input !== null && 'cli' in c.input)
  if (!config) throw new Error('rollup.config.mjs has no cli entry')
  // Inside the repo (test-output/ is ignored by git): the bundle imports zod from node_modules
  // and finds the package's version in its package.json, as it does from dist/node.
  await mkdir(join(root, 'test-output'), { recursive: true })
  const dir = await mkdtemp(join(root, 'test-output', 'cli-'))
  const bundle = await rollup({ ...config, onwarn: () => {} })
  try {
    await bundle.write({ ...(config.output as OutputOptions), dir, sourcemap: false })
  } finally {
    await bundle.close()
  }
  return { file: join(dir, 'cli.js'), remove: () => rm(dir, { recursive: true, force: true }) }
}

export interface CliResult {
  code: number | null
  out: string
  err: string
}

/** Runs the executable (its own shebang, as a shell would) with `stdin` fed to it. */
export function runCli(
  file: string,
  args: string[],
  options: { stdin?: string | Buffer; cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd ?? root,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (err += c.toString()))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, out, err }))
    child.stdin.on('error', () => {}) // a command that exits before reading all of stdin
    child.stdin.end(options.stdin ?? '')
  })
}
