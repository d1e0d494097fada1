// The sessionfold command line: look inside an fs store without writing code. Read-only
// commands open the store read-only (no lock taken, nothing repaired or rewritten), so they
// work while an app writes; `import` is the one command that writes.
import { stat } from 'node:fs/promises'
import { createFsAdapter } from '../adapters/fs'
import { locksDir, sessionsDir } from '../adapters/fs/layout'
import { SessionfoldError, isSessionfoldError } from '../src/errors'
import type { SessionId } from '../src/model'
import { assertSessionId } from '../src/validate'
import { Engine } from '../worker/engine'
import { createFsLocks } from '../worker/locks/fs'
import { events } from './events'
import { ls } from './ls'
import { show } from './show'
import { tree } from './tree'
import { verify } from './verify'
import { Output, type Io } from './output'
import { exportSessions, importSessions } from './transfer'

export type { Io } from './output'

export const USAGE = `Usage: sessionfold <command> [options]

Commands (on the fs store in --dir):
  ls                       sessions, newest first, with event counts
  show <id>                header, counts, every projection value, faults
  tree <id>                the session's subagents, recursively
  events <id>              events as NDJSON  [--from N] [--to N] [--follow]
  verify                   read every log and checkpoint; exit 1 on damage
  export <id...>           sessions as NDJSON on stdout
  import                   NDJSON of export from stdin (importing twice changes nothing)

Options:
  --dir <path>   the store's folder (default: .sessionfold)
  --json         machine-readable output
  --from N       events: first seq (default 0)
  --to N         events: stop before this seq
  --follow       events: keep printing appends (by any process) until interrupted
  -h, --help     this text

Exit status: 0 done, 1 damage found or the operation failed, 2 usage error.
`

class UsageError extends Error {}

interface Args {
  command: string
  ids: string[]
  dir: string
  json: boolean
  from?: number
  to?: number
  follow: boolean
}

const COMMANDS: Record<string, { ids: 'none' | 'one' | 'some'; flags: string[] }> = {
  ls: { ids: 'none', flags: [] },
  show: { ids: 'one', flags: [] },
  tree: { ids: 'one', flags: [] },
  events: { ids: 'one', flags: ['--from', '--to', '--follow'] },
  verify: { ids: 'none', flags: [] },
  export: { ids: 'some', flags: [] },
  import: { ids: 'none', flags: [] },
}

export function parseArgs(argv: readonly string[]): Args | 'help' {
  if (argv.length === 0) throw new UsageError('no command given')
  if (argv.includes('-h') || argv.includes('--help')) return 'help'
  const [command, ...rest] = argv
  const spec = COMMANDS[command!]
  if (!spec) throw new UsageError(`unknown command ${JSON.stringify(command)}`)
  const args: Args = { command: command!, ids: [], dir: '.sessionfold', json: false, follow: false }
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!
    const [flag, inline] = token.startsWith('--') && token.includes('=') ? [token.slice(0, token.indexOf('=')), token.slice(token.indexOf('=') + 1)] : [token, undefined]
    const value = () => {
      const v = inline ?? rest[++i]
      if (v === undefined || v === '') throw new UsageError(`${flag} needs a value`)
      return v
    }
    const seq = () => {
      const v = value()
      if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new UsageError(`${flag} must be an integer >= 0, got ${JSON.stringify(v)}`)
      return Number(v)
    }
    if (flag === '--dir') args.dir = value()
    else if (flag === '--json' && inline === undefined) args.json = true
    else if (!flag.startsWith('-')) args.ids.push(flag)
    else if (!spec.flags.includes(flag)) throw new UsageError(`${command} has no option ${flag}`)
    else if (flag === '--from') args.from = seq()
    else if (flag === '--to') args.to = seq()
    else if (flag === '--follow' && inline === undefined) args.follow = true
    else throw new UsageError(`${flag} takes no value`)
  }
  if (spec.ids === 'none' && args.ids.length > 0) throw new UsageError(`${command} takes no session id`)
  if (spec.ids === 'one' && args.ids.length !== 1) throw new UsageError(`${command} needs exactly one session id`)
  if (spec.ids === 'some' && args.ids.length === 0) throw new UsageError(`${command} needs at least one session id`)
  for (const id of args.ids) {
    try {
      assertSessionId(id)
    } catch (err) {
      throw new UsageError((err as Error).message)
    }
  }
  if (args.from !== undefined && args.to !== undefined && args.to < args.from) throw new UsageError('--to must not be less than --from')
  return args
}

/** Runs one command; resolves with the exit status. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let args: Args | 'help'
  try {
    args = parseArgs(argv)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    io.stderr.write(`sessionfold: ${err.message}\n\n${USAGE}`)
    return 2
  }
  if (args === 'help') {
    io.stdout.write(USAGE)
    return 0
  }
  const out = new Output(io, args.json)
  let engine: Engine | undefined
  try {
    const writes = args.command === 'import'
    if (!writes && !(await isStore(args.dir))) throw new SessionfoldError('STORAGE_UNAVAILABLE', `there is no sessionfold store at ${args.dir} (use --dir)`)
    engine = new Engine({
      storage: createFsAdapter({ dir: args.dir, readOnly: !writes }),
      // Read-only commands only ask who holds a session (lock files), never take a lock.
      locks: writes ? createFsLocks(args.dir) : readOnlyLocks(args.dir),
      onError: () => {},
    })
    switch (args.command) {
      case 'ls': return await ls(engine, out)
      case 'show': return await show(engine, out, args.ids[0]!)
      case 'tree': return await tree(engine, out, args.ids[0]!)
      case 'events': return await events(engine, io, args.ids[0]!, args)
      case 'verify': return await verify(engine, out, io)
      case 'export': return await exportSessions(engine, out, args.ids)
      case 'import': return await importSessions(engine, out, io)
    }
    throw new UsageError(args.command)
  } catch (err) {
    if (isBrokenPipe(err)) return 0 // `sessionfold events x | head`: the reader has all it wants
    const code = isSessionfoldError(err) ? err.code : 'ERROR'
    io.stderr.write(`sessionfold: ${(err as Error)?.message ?? String(err)}${code === 'ERROR' ? '' : ` (${code})`}\n`)
    return 1
  } finally {
    await engine?.close().catch(() => {})
  }
}

async function isStore(dir: string): Promise<boolean> {
  return stat(sessionsDir(dir)).then((s) => s.isDirectory(), () => false)
}

/** Asks lock files who holds a session; takes none (and makes no lock folder where there is none). */
function readOnlyLocks(dir: string) {
  let probe: ReturnType<typeof createFsLocks> | undefined
  return {
    acquire: async (id: SessionId): Promise<never> => {
      throw new SessionfoldError('STORAGE_UNAVAILABLE', `session "${id}" cannot be opened for writing by a read-only command`, { sessionId: id })
    },
    isHeld: async (id: SessionId) => {
      if (!probe && !(await stat(locksDir(dir)).then(() => true, () => false))) return false // no writer ever ran here
      probe ??= createFsLocks(dir)
      return probe.isHeld(id)
    },
  }
}

const isBrokenPipe = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code === 'EPIPE'
