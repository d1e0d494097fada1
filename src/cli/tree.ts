// `sessionfold tree <id> [--at N]`: the session's subagents, recursively, from parent-owned
// catalogs (the top one as of its first N events with --at). Read-only.
import type { SubagentListEntry } from '../core/children'
import type { SessionId } from '../core/model'
import type { Engine } from '../engine'
import type { Output } from './output'

export async function tree(engine: Engine, out: Output, id: SessionId, at?: number): Promise<number> {
  const rows = await engine.listChildren(id, at === undefined ? { recursive: true } : { recursive: true, at })
  const diagnostics = rows.filter((r) => r.kind === 'diagnostic').length
  if (out.json) {
    await out.value(rows)
    return 0
  }
  const info = await engine.reader.find(id)
  const lines = [
    `${id}  ${info?.header.origin ?? ''}${(await engine.locks.isHeld(id)) ? '  running' : ''}${at === undefined ? '' : `  (its children as of ${at} of ${info?.length ?? '?'} events)`}`,
  ]
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
