// The sessionfold command line: look inside a store without writing code, an fs store (--dir)
// or a PostgreSQL one (--url, --schema; postgres.ts). Read-only commands open the store
// read-only (no lock taken, nothing repaired, rewritten or created), so they work while an app
// writes; `import` and `delete` are the commands that write. What each command takes, and its
// help, is in usage.ts.
import { isSessionfoldError } from '../core/errors'
import { PG_SCHEMA_PATTERN as SCHEMA_NAME } from '../core/limits'
import type { StoreConfig } from '../backends/config'
import { assertSessionId } from '../core/validate'
import type { Engine } from '../engine'
import type { ReadableStorage } from '../engine/reader'
import { nodePlatform, redacted } from '../backends/node'
import type { OpenPurpose } from '../backends/platform'
import { openEngine, type OpenedEngine } from '../host/open-engine'
import { events } from './events'
import { ls } from './ls'
import { sessionQueryProblem } from '../core/session-list'
import { show } from './show'
import { tree } from './tree'
import { verify } from './verify'
import { deleteSessions } from './delete'
import { Output, report, type Io } from './output'
import { applyImport, checkImport, exportSessions, type CheckedImport } from './transfer'
import { COMMANDS, commandUsage, generalUsage, isCommand, type CommandName, type CommandSpec } from './usage'
import { packageVersion } from './version'
import { cliAdvice, cliKey } from './key'
import { loadDefinitions } from './definitions'

export type { Io } from './output'

class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: CommandName,
  ) {
    super(message)
  }
}

interface Args {
  command: Exclude<CommandName, 'help'>
  ids: string[]
  dir: string
  /** A PostgreSQL store instead of the folder `dir`. */
  pg?: { url: string; schema: string }
  json: boolean
  from?: number
  to?: number
  at?: number
  follow: boolean
  tree: boolean
  /** --key-file: where the key of an encrypted store is (else SESSIONFOLD_KEY, else none). */
  keyFile?: string
  /** events: a module of the app's event definitions (`--definitions`), to print at the latest version. */
  definitions?: string
  /** ls: the session list's query (`store.sessions`), as far as given. */
  query: { roots?: boolean; tag?: string; search?: string; order?: string; limit?: number }
}

type Parsed = Args | { help: CommandName | undefined } | { version: true }

export function parseArgs(argv: readonly string[]): Parsed {
  if (argv.length === 0) throw new UsageError('no command given')
  const [command, ...rest] = argv
  if (command === '--version') {
    if (rest.length > 0) throw new UsageError('--version takes nothing else')
    return { version: true }
  }
  if (command === '-h' || command === '--help') {
    if (rest.length > 0) throw new UsageError(`${command} takes nothing else (try: sessionfold help <command>)`)
    return { help: undefined }
  }
  if (!isCommand(command!)) throw new UsageError(`unknown command ${JSON.stringify(command)}`)
  if (command === 'help') {
    const topic = rest.filter((a) => a !== '--json')
    if (topic.length > 1) throw new UsageError('help takes at most one command', 'help')
    if (topic[0] !== undefined && !isCommand(topic[0])) throw new UsageError(`unknown command ${JSON.stringify(topic[0])}`)
    return { help: topic[0] as CommandName | undefined }
  }
  const spec: CommandSpec = COMMANDS[command]
  if (rest.includes('-h') || rest.includes('--help')) return { help: command }
  const args: Args = { command, ids: [], dir: '.sessionfold', json: false, follow: false, tree: false, query: {} }
  const fail = (message: string) => new UsageError(message, command)
  let dirGiven = false
  let url: string | undefined
  let schema: string | undefined
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!
    const [flag, inline] =
      token.startsWith('--') && token.includes('=') ? [token.slice(0, token.indexOf('=')), token.slice(token.indexOf('=') + 1)] : [token, undefined]
    const value = () => {
      const v = inline ?? rest[++i]
      if (v === undefined || v === '') throw fail(`${flag} needs a value`)
      return v
    }
    const seq = () => {
      const v = value()
      if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw fail(`${flag} must be an integer >= 0, got ${JSON.stringify(v)}`)
      return Number(v)
    }
    if (flag === '--dir') {
      args.dir = value()
      dirGiven = true
    } else if (flag === '--url') url = value()
    else if (flag === '--schema') schema = value()
    else if (flag === '--key-file') args.keyFile = value()
    else if (flag === '--key')
      throw fail('the key is never given as an argument (it would show in ps and in shell history): use --key-file <path> or SESSIONFOLD_KEY')
    else if (flag === '--json' && inline === undefined) args.json = true
    else if (!flag.startsWith('-')) args.ids.push(flag)
    else if (!Object.hasOwn(spec.options, flag)) throw fail(`${command} has no option ${flag}`)
    else if (flag === '--from') args.from = seq()
    else if (flag === '--to') args.to = seq()
    else if (flag === '--at') args.at = seq()
    else if (flag === '--follow' && inline === undefined) args.follow = true
    else if (flag === '--tree' && inline === undefined) args.tree = true
    else if (flag === '--roots' && inline === undefined) args.query.roots = true
    else if (flag === '--tag') args.query.tag = value()
    else if (flag === '--search') args.query.search = value()
    else if (flag === '--order') args.query.order = value()
    else if (flag === '--limit') args.query.limit = seq()
    else if (flag === '--definitions') args.definitions = value()
    else throw fail(`${flag} takes no value`)
  }
  if (dirGiven && url !== undefined) throw fail('--dir and --url name two different stores: give one of them')
  if (schema !== undefined && url === undefined) throw fail('--schema needs --url (the schema of a PostgreSQL store)')
  if (url !== undefined) {
    // Never echoed: the URL may hold a password.
    if (!/^postgres(ql)?:\/\//.test(url)) throw fail('--url must be a PostgreSQL URL: postgres://user:password@host:port/database')
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw fail(`--schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`)
    args.pg = { url, schema: schema ?? 'sessionfold' }
  }
  if (spec.ids === 'none' && args.ids.length > 0) throw fail(`${command} takes no session id`)
  if (spec.ids === 'one' && args.ids.length !== 1) throw fail(`${command} needs exactly one session id`)
  if (spec.ids === 'some' && args.ids.length === 0) throw fail(`${command} needs at least one session id`)
  if (args.tree && args.ids.length === 0) throw fail(`${command} --tree needs the sessions whose trees to take`)
  for (const id of args.ids) {
    try {
      assertSessionId(id)
    } catch (err) {
      throw fail((err as Error).message)
    }
  }
  args.ids = [...new Set(args.ids)]
  const queryProblem = sessionQueryProblem(args.query)
  if (queryProblem) throw fail(`ls ${queryProblem.replace(/^(\w+)/, '--$1')}`)
  if (args.from !== undefined && args.to !== undefined && args.to < args.from) throw fail('--to must not be less than --from')
  return args
}

/** Runs one command; resolves with the exit status. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let args: Parsed
  try {
    args = parseArgs(argv)
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    // --json anywhere asks for machine-readable errors, even when the rest does not parse.
    if (argv.includes('--json')) report(io, true, 'error', 'USAGE', err.message)
    else io.stderr.write(`sessionfold: ${err.message}\n\n${err.command ? commandUsage(err.command) : generalUsage()}`)
    return 2
  }
  if ('version' in args) {
    io.stdout.write(`${await packageVersion()}\n`)
    return 0
  }
  if ('help' in args) {
    io.stdout.write(args.help ? commandUsage(args.help) : generalUsage())
    return 0
  }
  const { command, dir, pg: target } = args
  // The store the command names; every command opens it through openEngine, as an app does.
  const store: StoreConfig = target ? { storage: 'postgres', ...target, durability: 'strict' } : { storage: 'fs', dir, durability: 'strict' }
  const out = new Output(io, args.json)
  let opened: OpenedEngine | undefined
  let checked: CheckedImport | undefined
  try {
    const key = await cliKey(args.keyFile)
    // Loaded and checked before the store is opened: a bad module opens nothing.
    const definitions = args.definitions === undefined ? undefined : await loadDefinitions(args.definitions)
    const open = (purpose: OpenPurpose) =>
      openEngine(nodePlatform, store, {
        purpose,
        events: definitions,
        encryption: key ? { key } : undefined,
        keyAdvice: cliAdvice(args.keyFile),
        onError: () => {},
      })
    if (command === 'import') {
      if (io.stdin.isTTY === true) throw new UsageError('import reads an export from stdin: sessionfold import < file', 'import')
      // All of the input is checked before the store is opened: bad input creates nothing.
      checked = await checkImport(io)
      // A PostgreSQL store is reached at once (an unreachable server fails the import); files
      // only once there is something to write: an empty import makes no store.
      if (target) opened = await open('create')
      return await applyImport(async () => (opened ??= await open('create')).engine, out, io, checked)
    }
    if (command === 'delete') {
      opened = await open('write')
      return await deleteSessions(opened.engine, out, args.ids, args.tree)
    }
    // Read-only commands only ask who holds a session (lock files, leases), never take a lock.
    opened = await open('read')
    return await readCommand(opened.engine, opened.storage, out, io, args)
  } catch (err) {
    if (isBrokenPipe(err)) return 0 // `sessionfold events x | head`: the reader has all it wants
    if (err instanceof UsageError) {
      if (args.json) report(io, true, 'error', 'USAGE', err.message)
      else io.stderr.write(`sessionfold: ${err.message}\n\n${err.command ? commandUsage(err.command) : generalUsage()}`)
      return 2
    }
    // Whatever said it (the driver, the server), the URL's password is not printed.
    report(io, args.json, 'error', isSessionfoldError(err) ? err.code : 'ERROR', redacted(store, (err as Error)?.message ?? String(err)))
    return 1
  } finally {
    await opened?.close().catch(() => {})
    await checked?.dispose()
  }
}

/** The commands that only read, on either kind of store. */
async function readCommand(engine: Engine, storage: ReadableStorage, out: Output, io: Io, args: Args): Promise<number> {
  switch (args.command) {
    case 'ls':
      return await ls(engine, out, storage, args.query)
    case 'show':
      return await show(engine, out, args.ids[0]!, args.at)
    case 'tree':
      return await tree(engine, out, args.ids[0]!, args.at)
    case 'events':
      return await events(engine, io, args.ids[0]!, args)
    case 'verify':
      return await verify(engine, out, io)
    case 'export':
      return await exportSessions(engine, out, args.ids, args.tree)
  }
  throw new Error(`no handler for ${args.command}`) // COMMANDS and this switch disagree: a bug
}

const isBrokenPipe = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code === 'EPIPE'
