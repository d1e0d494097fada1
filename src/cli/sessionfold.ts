// The `sessionfold` executable (package.json "bin"): see cli/main.ts.
import { main } from './main'

const interrupted = new Promise<void>((resolve) => process.once('SIGINT', () => resolve()))
process.stdout.on('error', () => {}) // a closed pipe (| head) is handled where writes fail
main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, interrupted }).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`sessionfold: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exit(1)
  },
)
