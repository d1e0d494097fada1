// `sessionfold ls`: every session of the store, newest first, with its origin, event count,
// parent and label; damaged headers are listed as such. Read-only.
import type { ReadableStorage } from '../engine/reader'
import { StoreReader } from '../engine/reader'
import { isSessionfoldError } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import { subagentUnit, type SubagentView } from '../core/units'
import type { Engine } from '../engine'
import type { Output } from './output'

type Row = {
  id: SessionId
  header?: SessionHeader
  events?: number
  /** The session's own identity (its last subagent/descriptor): null for roots and forks. */
  subagent?: SubagentView
  error?: { code: string; message: string }
}

/**
 * `identity` folds only the `subagent` unit (its checkpointed state, then the events after
 * it), so a label costs what a cold read of one small unit costs, not a fold of every unit.
 */
export async function ls(engine: Engine, out: Output, storage: ReadableStorage): Promise<number> {
  const identity = new StoreReader(storage, [subagentUnit])
  const rows: Row[] = []
  for await (const id of engine.reader.ids()) {
    try {
      const info = await engine.reader.find(id)
      if (!info) continue // deleted since it was listed
      const cold = await identity.coldRead(id)
      rows.push({ id, header: info.header, events: info.length, subagent: (cold.snapshot.values.subagent ?? null) as SubagentView })
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG', 'SESSION_NOT_FOUND')) throw err
      if (err.code === 'SESSION_NOT_FOUND') continue
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
  const table = rows.map((r) =>
    r.header
      ? [
          r.id,
          new Date(r.header.createdAt).toISOString(),
          r.header.origin,
          String(r.events),
          r.header.parentSession ?? r.header.forkedFrom ?? '',
          r.subagent?.label !== undefined ? JSON.stringify(r.subagent.label) : '',
          r.header.cwd ?? '',
        ]
      : [r.id, '-', 'DAMAGED', '-', '', '', r.error!.message],
  )
  await out.line(columns([['ID', 'CREATED', 'ORIGIN', 'EVENTS', 'PARENT', 'LABEL', 'CWD'], ...table]))
  await out.line(`${rows.length} session${rows.length === 1 ? '' : 's'}${damaged ? `, ${damaged} damaged` : ''}`)
  return damaged > 0 ? 1 : 0
}

/** Text columns padded to their widest cell (the last one is not padded). */
export function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}
