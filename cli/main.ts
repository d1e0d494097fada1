// The sessionfold command line: look inside an fs store without writing code. Read-only
// commands open the store read-only (no lock taken, nothing repaired or rewritten), so they
// work while an app writes; `import` is the one command that writes.
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { createFsAdapter } from '../adapters/fs'
import type { ApplyResult, ChangeEntry } from '../src/changes'
import type { SubagentListEntry } from '../src/children'
import { SessionfoldError, isSessionfoldError } from '../src/errors'
import type { SessionEvent, SessionHeader, SessionId } from '../src/model'
import type { VerifyReport } from '../src/protocol'
import { DEFAULT_MAX_EVENT_BYTES, assertSessionId } from '../src/validate'
import { Engine } from '../worker/engine'
import { createFsLocks } from '../worker/locks-fs'
import { checkBatch, checkHeader } from '../worker/sync'

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

/** Where the command line writes, and how it is interrupted (tests and the real process alike). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  stdin: NodeJS.ReadableStream
  /** Resolves on SIGINT (events --follow stops there). */
  interrupted: Promise<void>
}

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
      case 'events': return await events(engine, out, io, args)
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
  return stat(join(dir, 'sessions')).then((s) => s.isDirectory(), () => false)
}

/** Asks lock files who holds a session; takes none (and makes no lock folder where there is none). */
function readOnlyLocks(dir: string) {
  let probe: ReturnType<typeof createFsLocks> | undefined
  return {
    acquire: async (id: SessionId): Promise<never> => {
      throw new SessionfoldError('STORAGE_UNAVAILABLE', `session "${id}" cannot be opened for writing by a read-only command`, { sessionId: id })
    },
    isHeld: async (id: SessionId) => {
      if (!probe && !(await stat(join(dir, 'locks')).then(() => true, () => false))) return false // no writer ever ran here
      probe ??= createFsLocks(dir)
      return probe.isHeld(id)
    },
  }
}

const isBrokenPipe = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code === 'EPIPE'

/** Human text or JSON, on stdout; waits for the stream to drain so huge outputs stay bounded. */
class Output {
  constructor(private readonly io: Io, readonly json: boolean) {}

  async line(text: string): Promise<void> {
    await write(this.io.stdout, `${text}\n`)
  }

  async value(v: unknown): Promise<void> {
    await this.line(JSON.stringify(v, null, 2))
  }
}

function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: unknown) => reject(err)
    stream.once('error', onError)
    const flushed = stream.write(text, (err) => {
      stream.off('error', onError)
      if (err) reject(err)
      else if (flushed) resolve()
    })
    if (!flushed) stream.once('drain', () => resolve())
  })
}

// ---- ls ---------------------------------------------------------------------------------

async function* allIds(engine: Engine): AsyncGenerator<SessionId> {
  for (let after: SessionId | undefined; ;) {
    const ids = await engine.storage.listIds({ after, limit: 1000 })
    yield* ids
    if (ids.length < 1000) return
    after = ids[ids.length - 1]
  }
}

type Row = { id: SessionId; header?: SessionHeader; events?: number; error?: { code: string; message: string } }

async function ls(engine: Engine, out: Output): Promise<number> {
  const rows: Row[] = []
  for await (const id of allIds(engine)) {
    try {
      const info = await engine.storage.getSession(id)
      if (info) rows.push({ id, header: info.header, events: info.length })
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
      rows.push({ id, error: { code: err.code, message: err.message } })
    }
  }
  rows.sort((a, b) => (b.header?.createdAt ?? Infinity) - (a.header?.createdAt ?? Infinity) || (a.id < b.id ? -1 : 1))
  const damaged = rows.filter((r) => r.error).length
  if (out.json) {
    await out.value(rows)
    return damaged > 0 ? 1 : 0
  }
  if (rows.length === 0) {
    await out.line('no sessions')
    return 0
  }
  const table = rows.map((r) => r.header
    ? [r.id, new Date(r.header.createdAt).toISOString(), r.header.origin, String(r.events), r.header.parentSession ?? r.header.forkedFrom ?? '', r.header.cwd ?? '']
    : [r.id, '-', 'DAMAGED', '-', '', r.error!.message])
  await out.line(columns([['ID', 'CREATED', 'ORIGIN', 'EVENTS', 'FROM', 'CWD'], ...table]))
  await out.line(`${rows.length} session${rows.length === 1 ? '' : 's'}${damaged ? `, ${damaged} damaged` : ''}`)
  return damaged > 0 ? 1 : 0
}

function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n')
}

// ---- show -------------------------------------------------------------------------------

async function show(engine: Engine, out: Output, id: SessionId): Promise<number> {
  const cold = await engine.coldRead(id)
  const faults = cold.slots.filter((s) => s.fault).map((s) => ({ key: s.def.key, fault: s.fault!, reason: s.faultReason ?? '' }))
  const catalog = cold.snapshot.values.subagentCatalog
  const running = await engine.isRunning(id)
  const report = {
    header: cold.header,
    events: cold.length,
    children: Array.isArray(catalog) ? catalog.length : null,
    activity: running ? 'running' : 'inactive',
    values: cold.snapshot.values,
    faults,
  }
  if (out.json) {
    await out.value(report)
    return 0
  }
  const h = cold.header
  const lines = [
    `session   ${h.id}`,
    `created   ${new Date(h.createdAt).toISOString()}`,
    `origin    ${h.origin}${h.parentSession ? ` of ${h.parentSession}` : ''}${h.forkedFrom ? ` from ${h.forkedFrom} (${h.seedLength} seed events)` : ''}`,
    `depth     ${h.delegationDepth}`,
    ...(h.cwd !== undefined ? [`cwd       ${h.cwd}`] : []),
    `events    ${cold.length}`,
    `children  ${report.children ?? 'unknown (catalog faulted)'}`,
    `activity  ${report.activity}`,
    '',
    'projections',
    ...Object.entries(cold.snapshot.values).map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`),
  ]
  if (faults.length > 0) lines.push('', 'faults', ...faults.map((f) => `  ${f.key}: ${f.fault}${f.reason ? ` (${f.reason})` : ''}`))
  else lines.push('', 'faults    none')
  await out.line(lines.join('\n'))
  return 0
}

// ---- tree -------------------------------------------------------------------------------

async function tree(engine: Engine, out: Output, id: SessionId): Promise<number> {
  const rows = await engine.listChildren(id, { recursive: true })
  const diagnostics = rows.filter((r) => r.kind === 'diagnostic').length
  if (out.json) {
    await out.value(rows)
    return 0
  }
  const info = await engine.storage.getSession(id)
  const lines = [`${id}  ${info?.header.origin ?? ''}${(await engine.isRunning(id)) ? '  running' : ''}`]
  // Pre-order rows with depths: a row is the last of its siblings when no later row before
  // the next shallower one has its depth.
  const isLast = rows.map((r, i) => {
    for (let j = i + 1; j < rows.length; j++) {
      if (rows[j]!.depth < r.depth) return true
      if (rows[j]!.depth === r.depth) return false
    }
    return true
  })
  const open: boolean[] = [] // per depth: does that ancestor have siblings still to come?
  rows.forEach((r, i) => {
    open[r.depth] = !isLast[i]
    const indent = Array.from({ length: r.depth }, (_, d) => (open[d] ? '│  ' : '   ')).join('')
    lines.push(`${indent}${isLast[i] ? '└─ ' : '├─ '}${describeRow(r)}`)
  })
  if (rows.length === 0) lines.push('(no subagents)')
  await out.line(lines.join('\n'))
  void diagnostics
  return 0
}

function describeRow(r: SubagentListEntry): string {
  if (r.kind === 'diagnostic') return `${r.id}  ! ${r.reason}`
  const label = r.label !== undefined ? `  "${r.label}"` : ''
  return `${r.id}  ${r.mode}${label}${r.mode === 'external' ? '' : `  ${r.activity}`}`
}

// ---- events -----------------------------------------------------------------------------

async function events(engine: Engine, out: Output, io: Io, args: Args): Promise<number> {
  const id = args.ids[0]!
  let at = args.from ?? 0
  const end = args.to
  const info = await engine.storage.getSession(id)
  if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" does not exist`, { sessionId: id })
  const print = async (to: number) => {
    if (at >= to) return
    for await (const page of engine.storage.readEvents(id, { from: at, to })) {
      await write(io.stdout, page.map((e) => `${JSON.stringify(e)}\n`).join(''))
      at = page[page.length - 1]!.seq + 1
    }
  }
  await print(end === undefined ? info.length : Math.min(end, info.length))
  if (!args.follow) return 0
  // Follow: another process appends to the log; its length is polled (a stat while idle).
  let stop = false
  void io.interrupted.then(() => (stop = true))
  while (!stop && (end === undefined || at < end)) {
    const now = await engine.storage.getSession(id)
    if (!now) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" was deleted`, { sessionId: id })
    await print(end === undefined ? now.length : Math.min(end, now.length))
    await Promise.race([io.interrupted, new Promise((r) => setTimeout(r, 100))])
  }
  return 0
}

// ---- verify -----------------------------------------------------------------------------

async function verify(engine: Engine, out: Output, io: Io): Promise<number> {
  const plan = await engine.verifyPlan()
  const report: VerifyReport = { sessions: 0, events: 0, damaged: [] }
  const bar = io.stderr.isTTY === true && !out.json
  const progress = (done: number) => {
    const total = Math.max(plan.events, done)
    const ratio = total === 0 ? 1 : done / total
    if (bar) {
      const width = Math.max(10, Math.min(40, (io.stderr.columns ?? 80) - 40))
      const filled = Math.round(ratio * width)
      io.stderr.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${Math.floor(ratio * 100)}% ${done}/${total} events`)
    } else if (!out.json) {
      io.stderr.write(`verified ${done}/${total} events\n`)
    }
  }
  progress(0)
  for (let after: string | undefined; ;) {
    const step = await engine.verifyStep(after, 20_000)
    report.sessions += step.sessions
    report.events += step.events
    report.damaged.push(...step.damaged)
    progress(report.events)
    if (step.next === null) break
    after = step.next
  }
  if (bar) io.stderr.write('\n')
  if (out.json) {
    await out.value(report)
  } else if (report.damaged.length === 0) {
    await out.line(`ok: ${report.sessions} sessions, ${report.events} events, no damage`)
  } else {
    const ids = new Set(report.damaged.map((d) => d.id))
    await out.line([
      `DAMAGED: ${ids.size} of ${report.sessions} sessions (${report.events} events read)`,
      ...report.damaged.map((d) => `  ${d.id}  ${d.code}  ${d.detail}`),
    ].join('\n'))
  }
  return report.damaged.length > 0 ? 1 : 0
}

// ---- export / import --------------------------------------------------------------------
// The format: one JSON value per line. A `{"kind":"session","header":…,"length":n}` line starts
// a session; `{"kind":"event","session":id,"event":…}` lines follow it, in seq order from 0.

const IMPORT_BATCH = 1000

async function exportSessions(engine: Engine, out: Output, ids: SessionId[]): Promise<number> {
  // Every session is checked first: a missing one fails the export before anything is printed.
  const infos = []
  for (const id of ids) {
    const info = await engine.storage.getSession(id)
    if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" does not exist`, { sessionId: id })
    infos.push(info)
  }
  for (const { header, length } of infos) {
    await out.line(JSON.stringify({ kind: 'session', header, length }))
    for await (const page of engine.storage.readEvents(header.id, { from: 0, to: length })) {
      await out.line(page.map((event) => JSON.stringify({ kind: 'event', session: header.id, event })).join('\n'))
    }
  }
  return 0
}

/**
 * Reads the export twice: once to check every line (to a temporary copy, so stdin is read once
 * and memory stays bounded), once to apply it in batches. A bad line fails before any write.
 */
async function importSessions(engine: Engine, out: Output, io: Io): Promise<number> {
  const tmp = await mkdtemp(join(tmpdir(), 'sessionfold-import-'))
  const copy = join(tmp, 'import.ndjson')
  try {
    const sink = createWriteStream(copy)
    let lineNo = 0
    let current: { id: SessionId; next: number; length: number } | undefined
    const check = (entry: ChangeEntry) => {
      try {
        checkBatch({ v: 1, sessions: [entry] }, DEFAULT_MAX_EVENT_BYTES) // what applyChanges will allow
      } catch (err) {
        throw new SessionfoldError('INVALID_ARGUMENT', `line ${lineNo} of the import: ${(err as Error).message}`)
      }
    }
    const ended = () => {
      if (current && current.next !== current.length) {
        throw new SessionfoldError('INVALID_ARGUMENT', `the import ends session "${current.id}" after ${current.next} of its ${current.length} events`)
      }
    }
    for await (const line of createInterface({ input: io.stdin, crlfDelay: Infinity })) {
      lineNo++
      if (line.trim() === '') continue
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        throw new SessionfoldError('INVALID_ARGUMENT', `line ${lineNo} of the import is not JSON`)
      }
      const v = value as { kind?: unknown; header?: SessionHeader; length?: unknown; session?: unknown; event?: SessionEvent }
      if (v?.kind === 'session') {
        ended()
        try {
          checkHeader(v.header, 'the session line')
        } catch (err) {
          throw new SessionfoldError('INVALID_ARGUMENT', `line ${lineNo} of the import: ${(err as Error).message}`)
        }
        if (!Number.isSafeInteger(v.length) || (v.length as number) < v.header!.seedLength) throw new SessionfoldError('INVALID_ARGUMENT', `line ${lineNo} of the import: length must be an integer >= the seed length`)
        current = { id: v.header!.id, next: 0, length: v.length as number }
      } else if (v?.kind === 'event') {
        if (!current || v.session !== current.id) throw new SessionfoldError('INVALID_ARGUMENT', `line ${lineNo} of the import: an event outside its session's block`)
        check({ header: { version: 1, id: current.id, createdAt: 0, seedLength: 0, delegationDepth: 0, origin: 'root' }, from: current.next, events: [v.event!] })
        current.next++
      } else {
        throw new SessionfoldError('INVALID_ARGUMENT', `line ${lineNo} of the import is neither a session nor an event line`)
      }
      if (!sink.write(`${line}\n`)) await new Promise<void>((r) => sink.once('drain', () => r()))
    }
    ended()
    await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err ? reject(err) : resolve())))

    const total: ApplyResult = { copiedSessions: 0, copiedEvents: 0, conflicts: [], skipped: [] }
    let entry: ChangeEntry | undefined
    let batchEvents = 0
    let pending: ChangeEntry[] = []
    const flush = async () => {
      if (pending.length === 0) return
      const r = await engine.applyChanges({ v: 1, sessions: pending })
      total.copiedSessions += r.copiedSessions
      total.copiedEvents += r.copiedEvents
      total.conflicts.push(...r.conflicts)
      total.skipped.push(...r.skipped)
      pending = []
      batchEvents = 0
    }
    for await (const line of createInterface({ input: createReadStream(copy), crlfDelay: Infinity })) {
      if (line.trim() === '') continue
      const v = JSON.parse(line) as { kind: 'session'; header: SessionHeader } | { kind: 'event'; event: SessionEvent }
      if (v.kind === 'session') {
        entry = { header: v.header, from: 0, events: [] }
        pending.push(entry)
      } else {
        // A fork's seed stays in one entry: the store creates a fork with its seed at once.
        if (batchEvents >= IMPORT_BATCH && v.event.seq >= entry!.header.seedLength) {
          const { header } = entry!
          await flush()
          entry = { header, from: v.event.seq, events: [] }
          pending.push(entry)
        }
        entry!.events.push(v.event)
        batchEvents++
      }
      if (pending.length >= IMPORT_BATCH) await flush()
    }
    await flush()
    // A session skipped in one batch is skipped in the ones after it too: report it once.
    total.skipped = total.skipped.filter((s, i) => total.skipped.findIndex((k) => k.id === s.id) === i)
    const problems = total.conflicts.length + total.skipped.length
    if (out.json) {
      await out.value(total)
    } else {
      const lines = [`imported ${total.copiedSessions} new session${total.copiedSessions === 1 ? '' : 's'}, ${total.copiedEvents} event${total.copiedEvents === 1 ? '' : 's'}`]
      for (const c of total.conflicts) lines.push(`  conflict  ${c.id}  ${c.reason === 'header' ? 'another session with this id is here' : `events differ at seq ${c.seq}`}; left as it was`)
      for (const s of total.skipped) lines.push(`  skipped   ${s.id}  ${s.reason}: ${s.detail}`)
      await out.line(lines.join('\n'))
    }
    return problems > 0 ? 1 : 0
  } finally {
    await rm(tmp, { recursive: true, force: true })
  }
}
