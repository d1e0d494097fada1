// The command line run in this process (cli/main.ts's main), its output as text: stdin given
// as one string, stderr a terminal when `tty`, and SESSIONFOLD_KEY set as given (unset when
// undefined) for the run only.
import { PassThrough, Readable } from 'node:stream'
import { main } from '../../src/cli/main'

export interface CliRun {
  code: number
  out: string
  err: string
}

export async function runCli(args: string[], options: { stdin?: string; tty?: boolean; key?: string } = {}): Promise<CliRun> {
  const saved = process.env.SESSIONFOLD_KEY
  if (options.key === undefined) delete process.env.SESSIONFOLD_KEY
  else process.env.SESSIONFOLD_KEY = options.key
  const stdout = new PassThrough()
  const stderr = Object.assign(new PassThrough(), { isTTY: options.tty, columns: 80 })
  let out = ''
  let err = ''
  stdout.on('data', (c: Buffer) => (out += c.toString()))
  stderr.on('data', (c: Buffer) => (err += c.toString()))
  try {
    const stdin = Readable.from(options.stdin === undefined ? [] : [options.stdin])
    const code = await main(args, { stdout, stderr, stdin, interrupted: new Promise(() => {}) })
    return { code, out, err }
  } finally {
    if (saved === undefined) delete process.env.SESSIONFOLD_KEY
    else process.env.SESSIONFOLD_KEY = saved
  }
}
