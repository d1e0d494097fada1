// The read-only commands: ls, show, tree, events, verify. They read through the engine's read
// path (its storage opened read-only by main.ts) and never take a writer lock.
import type { SubagentListEntry } from '../src/children'
import { SessionfoldError, isSessionfoldError } from '../src/errors'
import type { SessionHeader, SessionId } from '../src/model'
import type { VerifyReport } from '../src/protocol'
import type { Engine } from '../worker/engine'
import { progressBar, write, type Io, type Output } from './output'

// ---- ls ---------------------------------------------------------------------------------

type Row = { id: SessionId; header?: SessionHeader; events?: number; error?: { code: string; message: string } }

export async function ls(engine: Engine, out: Output): Promise<number> {
  const rows: Row[] = []
  for await (const id of engine.reader.ids()) {
    try {
      const info = await engine.reader.find(id)
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

export async function show(engine: Engine, out: Output, id: SessionId): Promise<number> {
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

export async function tree(engine: Engine, out: Output, id: SessionId): Promise<number> {
  const rows = await engine.listChildren(id, { recursive: true })
  const diagnostics = rows.filter((r) => r.kind === 'diagnostic').length
  if (out.json) {
    await out.value(rows)
    return 0
  }
  const info = await engine.reader.find(id)
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

export async function events(engine: Engine, io: Io, id: SessionId, args: { from?: number; to?: number; follow: boolean }): Promise<number> {
  let at = args.from ?? 0
  const end = args.to
  const info = await engine.reader.find(id)
  if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" does not exist`, { sessionId: id })
  const print = async (to: number) => {
    if (at >= to) return
    for await (const page of engine.reader.pages(id, { from: at, to })) {
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
    const now = await engine.reader.find(id)
    if (!now) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" was deleted`, { sessionId: id })
    await print(end === undefined ? now.length : Math.min(end, now.length))
    await Promise.race([io.interrupted, new Promise((r) => setTimeout(r, 100))])
  }
  return 0
}

// ---- verify -----------------------------------------------------------------------------

export async function verify(engine: Engine, out: Output, io: Io): Promise<number> {
  const plan = await engine.verifyPlan()
  const report: VerifyReport = { sessions: 0, events: 0, damaged: [] }
  const bar = out.json ? undefined : progressBar(io)
  const progress = (done: number) => {
    const total = Math.max(plan.events, done)
    if (bar) bar.show(done, total)
    else if (!out.json) io.stderr.write(`verified ${done}/${total} events\n`)
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
  bar?.end()
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
