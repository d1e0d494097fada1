// export and import. The format: one JSON value per line; a line
// `{"kind":"session","header":…,"length":n}` starts a session, and lines
// `{"kind":"event","session":id,"event":…}` follow it, in seq order from 0.
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { ApplyResult, ChangeEntry } from '../src/changes'
import { SessionfoldError } from '../src/errors'
import type { SessionEvent, SessionHeader, SessionId } from '../src/model'
import { DEFAULT_MAX_EVENT_BYTES, HEADER_VERSION } from '../src/limits'
import type { Engine } from '../worker/engine'
import { checkBatch, checkHeader } from '../worker/engine/change-batch'
import { progressBar, type Io, type Output } from './output'

const IMPORT_BATCH = 1000

export async function exportSessions(engine: Engine, out: Output, ids: SessionId[]): Promise<number> {
  // Every session is checked first: a missing one fails the export before anything is printed.
  const infos = []
  for (const id of ids) {
    const info = await engine.reader.find(id)
    if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" does not exist`, { sessionId: id })
    infos.push(info)
  }
  for (const { header, length } of infos) {
    await out.line(JSON.stringify({ kind: 'session', header, length }))
    for await (const page of engine.reader.pages(header.id, { from: 0, to: length })) {
      await out.line(page.map((event) => JSON.stringify({ kind: 'event', session: header.id, event })).join('\n'))
    }
  }
  return 0
}

/**
 * Reads the export twice: once to check every line (to a temporary copy, so stdin is read once
 * and memory stays bounded), once to apply it in batches. A bad line fails before any write.
 */
export async function importSessions(engine: Engine, out: Output, io: Io): Promise<number> {
  const tmp = await mkdtemp(join(tmpdir(), 'sessionfold-import-'))
  const copy = join(tmp, 'import.ndjson')
  try {
    const sink = createWriteStream(copy)
    let lineNo = 0
    let eventLines = 0
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
        check({ header: { version: HEADER_VERSION, id: current.id, createdAt: 0, seedLength: 0, delegationDepth: 0, origin: 'root' }, from: current.next, events: [v.event!] })
        current.next++
        eventLines++
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
    let applied = 0
    const bar = out.json ? undefined : progressBar(io)
    bar?.show(0, eventLines)
    const flush = async () => {
      if (pending.length === 0) return
      const r = await engine.applyChanges({ v: 1, sessions: pending })
      applied += pending.reduce((n, e) => n + e.events.length, 0)
      bar?.show(applied, eventLines)
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
    bar?.end()
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
