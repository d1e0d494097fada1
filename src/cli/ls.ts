// `sessionfold ls`: every session of the store (or those a query of store.sessions() takes),
// newest first, with its origin, event count, title, parent and label; damaged headers are
// listed as such. Read-only: it reads every session, not the index (which it may not write).
import type { ReadableStorage } from '../engine/reader'
import { StoreReader } from '../engine/reader'
import { isSessionfoldError } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import { sessionMetaUnit, subagentUnit, type SessionMetaView, type SubagentView } from '../core/units'
import { matchesQuery, resolveSessionQuery } from '../core/session-list'
import type { Engine } from '../engine'
import type { Output } from './output'

type Row = {
  id: SessionId
  header?: SessionHeader
  events?: number
  /** The session's own identity (its last subagent/descriptor): null for roots and forks. */
  subagent?: SubagentView
  title?: string | null
  tags?: string[]
  lastEventAt?: number
  error?: { code: string; message: string }
}

/**
 * `identity` folds only the `subagent` unit (its checkpointed state, then the events after
 * it), so a label costs what a cold read of one small unit costs, not a fold of every unit.
 */
export async function ls(engine: Engine, out: Output, storage: ReadableStorage, query: Record<string, unknown> = {}): Promise<number> {
  const identity = new StoreReader(storage, [subagentUnit, sessionMetaUnit])
  const asked = Object.keys(query).length > 0
  const q = resolveSessionQuery({ roots: false, order: 'created', limit: 1000, ...query })
  let rows: Row[] = []
  for await (const id of engine.reader.ids()) {
    try {
      const info = await engine.reader.find(id)
      if (!info) continue // deleted since it was listed
      const cold = await identity.coldRead(id)
      const meta = (cold.snapshot.values.sessionMeta ?? { title: null, tags: [] }) as SessionMetaView
      const last = info.length > 0 ? (await engine.reader.page(id, info.length - 1, info.length)).events[0]?.time : undefined
      const subagent = (cold.snapshot.values.subagent ?? null) as SubagentView
      rows.push({ id, header: info.header, events: info.length, subagent, ...meta, lastEventAt: last ?? info.header.createdAt })
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG', 'SESSION_NOT_FOUND')) throw err
      if (err.code === 'SESSION_NOT_FOUND') continue
      rows.push({ id, error: { code: err.code, message: err.message } })
    }
  }
  const time = (r: Row) => (q.order === 'created' ? r.header?.createdAt : r.lastEventAt) ?? Infinity
  rows.sort((a, b) => time(b) - time(a) || (a.id < b.id ? -1 : 1))
  if (asked) {
    const taken = (r: Row) => r.header && (!q.roots || !r.header.parentSession) && matchesQuery({ title: r.title ?? null, tags: r.tags ?? [] }, q)
    rows = rows.filter(taken).slice(0, (query.limit as number | undefined) ?? Number.POSITIVE_INFINITY)
  }
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
          r.title ? JSON.stringify(r.title) : '',
          r.header.parentSession ?? r.header.forkedFrom ?? '',
          r.subagent?.label !== undefined ? JSON.stringify(r.subagent.label) : '',
          r.header.cwd ?? '',
        ]
      : [r.id, '-', 'DAMAGED', '-', '', '', '', r.error!.message],
  )
  await out.line(columns([['ID', 'CREATED', 'ORIGIN', 'EVENTS', 'TITLE', 'PARENT', 'LABEL', 'CWD'], ...table]))
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
