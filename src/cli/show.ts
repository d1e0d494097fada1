// `sessionfold show <id> [--at N]`: a session's header, counts, every projection value and its
// faults, from a cold read (as of its first N events with --at). Read-only. For people, the built-in values are rendered as text (the
// identity and timing in words, the catalog as rows); --json prints them as they are.
import type { SessionId } from '../core/model'
import type { CatalogEntry, SubagentView, TimingView } from '../core/units'
import type { Engine } from '../engine'
import { columns } from './ls'
import type { Output } from './output'

export async function show(engine: Engine, out: Output, id: SessionId, at?: number): Promise<number> {
  const cold = at === undefined ? await engine.coldRead(id) : await engine.coldReadAt(id, at)
  const length = at === undefined ? cold.length : (await engine.reader.info(id)).length
  const faults = cold.slots.filter((s) => s.fault).map((s) => ({ key: s.def.key, fault: s.fault!, reason: s.faultReason ?? '' }))
  const values = cold.snapshot.values as Record<string, unknown>
  const catalog = values.subagentCatalog
  const running = await engine.locks.isHeld(id)
  const report = {
    header: cold.header,
    events: cold.length,
    ...(at === undefined ? {} : { at, length }),
    children: Array.isArray(catalog) ? catalog.length : null,
    activity: running ? 'running' : 'inactive',
    values,
    faults,
  }
  if (out.json) {
    await out.value(report)
    return 0
  }
  const h = cold.header
  const faulted = new Set(faults.map((f) => f.key))
  const lines = [
    `session   ${h.id}`,
    `created   ${time(h.createdAt)}`,
    `origin    ${h.origin}${h.parentSession ? ` of ${h.parentSession}` : ''}${h.forkedFrom ? ` from ${h.forkedFrom} (${h.seedLength} seed events)` : ''}`,
    `depth     ${h.delegationDepth}`,
    ...(h.cwd !== undefined ? [`cwd       ${h.cwd}`] : []),
    at === undefined ? `events    ${cold.length}` : `events    ${cold.length} of ${length}: as it was after event seq ${at - 1}`,
    `activity  ${report.activity}${at === undefined ? '' : ' (now)'}`,
    `identity  ${faulted.has('subagent') ? 'unknown (faulted)' : identity(values.subagent as SubagentView | undefined)}`,
    `timing    ${faulted.has('subagentTiming') ? 'unknown (faulted)' : timing(values.subagentTiming as TimingView | undefined)}`,
    `children  ${report.children ?? 'unknown (catalog faulted)'}`,
  ]
  if (Array.isArray(catalog) && catalog.length > 0) {
    const rows = (catalog as CatalogEntry[]).map((c) => [c.id, c.mode, c.label !== undefined ? JSON.stringify(c.label) : '', time(c.createdAt)])
    lines.push(indent(columns([['ID', 'MODE', 'LABEL', 'CREATED'], ...rows])))
  }
  // Values of units this command does not know how to render (none but the built-in ones are
  // registered here today): as indented JSON, one block per key.
  const others = Object.entries(values).filter(([k]) => !BUILT_IN.has(k))
  if (others.length > 0) {
    lines.push('', 'other projections')
    for (const [k, v] of others) lines.push(`  ${k}:`, indent(JSON.stringify(v, null, 2), 4))
  }
  if (faults.length > 0) lines.push('', 'faults', ...faults.map((f) => `  ${f.key}: ${f.fault}${f.reason ? ` (${f.reason})` : ''}`))
  else lines.push('faults    none')
  await out.line(lines.join('\n'))
  return 0
}

const BUILT_IN = new Set(['subagent', 'subagentCatalog', 'subagentTiming'])

const time = (ms: number) => new Date(ms).toISOString()

const indent = (text: string, by = 2) =>
  text
    .split('\n')
    .map((l) => `${' '.repeat(by)}${l}`)
    .join('\n')

function identity(v: SubagentView | undefined): string {
  if (!v) return 'none (not a subagent, or no descriptor of its own)'
  return `${v.mode}${v.label !== undefined ? ` ${JSON.stringify(v.label)}` : ''} (descriptor at seq ${v.seq})`
}

function timing(v: TimingView | undefined): string {
  if (!v) return 'none'
  const turns = `${v.turns} turn${v.turns === 1 ? '' : 's'}, ${duration(v.settledMs)} in settled turns`
  return v.runningSince === null ? `${turns}; no turn running` : `${turns}; a turn running since ${time(v.runningSince)}`
}

/** 850 ms, 12.3 s, 4 min 05 s, 2 h 03 min. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
  const m = Math.round(s / 60)
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`
}
