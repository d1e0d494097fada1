// `sessionfold ls`: every session of the store, newest first, with its event count; damaged
// headers are listed as such. Read-only.
import { isSessionfoldError } from '../src/errors'
import type { SessionHeader, SessionId } from '../src/model'
import type { Engine } from '../worker/engine'
import type { Output } from './output'

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
