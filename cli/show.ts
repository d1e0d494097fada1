// `sessionfold show <id>`: a session's header, counts, every projection value and its faults,
// from a cold read. Read-only.
import type { SessionId } from '../src/model'
import type { Engine } from '../worker/engine'
import type { Output } from './output'

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
