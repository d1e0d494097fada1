// export and import. The format: one JSON value per line; a line
// `{"kind":"session","header":…,"length":n}` starts a session, and lines
// `{"kind":"event","session":id,"event":…}` follow it, in seq order from 0; the last line is
// `{"kind":"end","sessions":n,"events":m}`, so that import can tell a whole export from one
// cut off at a line boundary. Parents come before their children.
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { SessionInfo } from '../storage/types'
import type { ApplyResult, ChangeEntry } from '../core/changes'
import { CHAIN_ZERO, ChainState, eventJson } from '../core/chain'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionEvent, SessionHeader, SessionId } from '../core/model'
import { DEFAULT_MAX_EVENT_BYTES, HEADER_VERSION } from '../core/limits'
import { isPlainObject } from '../core/validate'
import type { Engine } from '../engine'
import { checkBatch, checkHeader } from '../engine/change-batch'
import { descendants, parentsFirst } from '../engine/tree'
import { progressBar, type Io, type Output } from './output'

const IMPORT_BATCH = 1000

/**
 * `export [<id>...] [--tree]`. Named sessions are all checked before anything is printed (a
 * missing or damaged one fails the export). With no id, every session; with --tree, the
 * descendants too. Sessions that cannot be read there are left out and reported (exit 1).
 */
export async function exportSessions(engine: Engine, out: Output, ids: SessionId[], tree: boolean): Promise<number> {
  const chosen = new Map<SessionId, SessionInfo>()
  let problems = 0
  if (ids.length === 0) {
    for await (const id of engine.reader.ids()) {
      try {
        const info = await engine.reader.find(id)
        if (info) chosen.set(id, info)
      } catch (err) {
        if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
        out.warn(err.code, `${where(id)} is damaged and was not exported: ${err.message}`)
        problems++
      }
    }
  } else {
    for (const id of ids) {
      const info = await engine.reader.find(id)
      if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" does not exist`, { sessionId: id })
      chosen.set(id, info)
    }
    if (tree) {
      for (const id of ids) {
        const found = await descendants(engine, id)
        for (const info of found.infos) if (!chosen.has(info.header.id)) chosen.set(info.header.id, info)
        for (const p of found.problems) out.warn('CORRUPT_LOG', `${p.message}; it was not exported`)
        problems += found.problems.length
      }
    }
  }
  let events = 0
  for (const { header, length } of parentsFirst([...chosen.values()])) {
    await out.line(JSON.stringify({ kind: 'session', header, length }))
    for await (const page of engine.reader.pages(header.id, { from: 0, to: length })) {
      await out.line(page.map((event) => JSON.stringify({ kind: 'event', session: header.id, event })).join('\n'))
      events += page.length
    }
  }
  await out.line(JSON.stringify({ kind: 'end', sessions: chosen.size, events }))
  return problems > 0 ? 1 : 0
}

/** An import checked whole: a copy of its lines in a temporary file, and what it holds. */
export interface CheckedImport {
  file: string
  sessions: number
  events: number
  dispose(): Promise<void>
}

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/**
 * Reads an export from stdin and checks every line of it, before anything is created or
 * written (the store is not even opened): a bad line, garbage, or a file cut off anywhere is
 * INVALID_ARGUMENT. The lines go to a temporary copy, so that stdin is read once and memory
 * stays bounded; applyImport reads them from there.
 */
export async function checkImport(io: Io): Promise<CheckedImport> {
  const tmp = await mkdtemp(join(tmpdir(), 'sessionfold-import-'))
  const file = join(tmp, 'import.ndjson')
  const sink = createWriteStream(file)
  // Its failure is the import's (a full disk, say), thrown by the end below, never an uncaught 'error'.
  let failed: Error | undefined
  sink.on('error', (err) => (failed ??= err))
  const dispose = async () => {
    // A refusal can come before the copy's file was even opened: it is closed first, so that its
    // open does not fail on the folder removed under it.
    if (!sink.closed) await new Promise<void>((resolve) => sink.destroy().once('close', () => resolve()))
    await rm(tmp, { recursive: true, force: true })
  }
  try {
    let lineNo = 0
    let eventLines = 0
    let ended = false
    const seen = new Set<SessionId>()
    let current: { id: SessionId; next: number; length: number } | undefined
    const at = () => `line ${lineNo} of the import`
    const check = (entry: ChangeEntry) => {
      try {
        checkBatch({ v: 1, sessions: [entry] }, DEFAULT_MAX_EVENT_BYTES) // what applyChanges will allow
      } catch (err) {
        throw bad(`${at()}: ${(err as Error).message}`)
      }
    }
    const sessionDone = () => {
      if (current && current.next !== current.length) {
        throw bad(`the import ends ${where(current.id)} after ${current.next} of its ${current.length} events (${at()})`)
      }
    }
    for await (const line of createInterface({ input: io.stdin, crlfDelay: Infinity })) {
      lineNo++
      if (line.trim() === '') continue
      if (ended) throw bad(`${at()} comes after the end line`)
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        throw bad(`${at()} is not JSON${lineNo === 1 ? ' (is this an export made by sessionfold export?)' : ''}`)
      }
      const v = (isPlainObject(value) ? value : {}) as {
        kind?: unknown
        header?: SessionHeader
        length?: unknown
        session?: unknown
        event?: SessionEvent
        sessions?: unknown
        events?: unknown
      }
      if (v.kind === 'session') {
        sessionDone()
        try {
          checkHeader(v.header, 'the session line')
        } catch (err) {
          throw bad(`${at()}: ${(err as Error).message}`)
        }
        if (!Number.isSafeInteger(v.length) || (v.length as number) < v.header!.seedLength) throw bad(`${at()}: length must be an integer >= the seed length`)
        if (seen.has(v.header!.id)) throw bad(`${at()} starts ${where(v.header!.id)} a second time`)
        seen.add(v.header!.id)
        current = { id: v.header!.id, next: 0, length: v.length as number }
      } else if (v.kind === 'event') {
        if (!current || v.session !== current.id) throw bad(`${at()}: an event outside its session's block`)
        // The event alone is checked here (the witness stands in: applyImport computes the real one).
        check({
          header: { version: HEADER_VERSION, id: current.id, createdAt: 0, seedLength: 0, delegationDepth: 0, origin: 'root' },
          from: current.next,
          events: [v.event!],
          chain: CHAIN_ZERO,
        })
        current.next++
        eventLines++
      } else if (v.kind === 'end') {
        sessionDone()
        if (v.sessions !== seen.size || v.events !== eventLines) {
          throw bad(
            `${at()}: the end line counts ${String(v.sessions)} sessions and ${String(v.events)} events, the import holds ${seen.size} and ${eventLines}`,
          )
        }
        ended = true
      } else {
        throw bad(`${at()} is neither a session, an event nor the end line`)
      }
      if (failed) throw failed
      if (!sink.write(`${line}\n`)) await new Promise<void>((r) => sink.once('drain', () => r()).once('error', () => r()))
    }
    await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err || failed ? reject(err ?? failed) : resolve())))
    if (!ended) {
      sessionDone()
      throw bad(
        seen.size === 0
          ? 'the import is empty: it needs an export made by sessionfold export (which ends with an end line)'
          : `the import stops at line ${lineNo} without the end line that export writes last: the file is cut off`,
      )
    }
    return { file, sessions: seen.size, events: eventLines, dispose }
  } catch (err) {
    await dispose()
    throw err
  }
}

/**
 * Applies a checked import in batches, with a progress bar on a terminal; exit 1 on conflicts
 * or skips. The store is opened (`open`, which creates it where there is none) only for a
 * first batch to write: an export of no session leaves no store behind.
 */
export async function applyImport(open: () => Engine | Promise<Engine>, out: Output, io: Io, checked: CheckedImport): Promise<number> {
  const eventLines = checked.events
  const total: ApplyResult = { copiedSessions: 0, copiedEvents: 0, deletedSessions: 0, conflicts: [], skipped: [] }
  let entry: ChangeEntry | undefined
  let chain = new ChainState()
  let batchEvents = 0
  let pending: ChangeEntry[] = []
  let applied = 0
  const bar = out.json ? undefined : progressBar(io)
  bar?.show(0, eventLines)
  const flush = async () => {
    if (pending.length === 0) return
    const r = await (await open()).applyChanges({ v: 1, sessions: pending })
    applied += pending.reduce((n, e) => n + e.events.length, 0)
    bar?.show(applied, eventLines)
    total.copiedSessions += r.copiedSessions
    total.copiedEvents += r.copiedEvents
    total.conflicts.push(...r.conflicts)
    total.skipped.push(...r.skipped)
    pending = []
    batchEvents = 0
  }
  for await (const line of createInterface({ input: createReadStream(checked.file), crlfDelay: Infinity })) {
    if (line.trim() === '') continue
    const v = JSON.parse(line) as { kind: 'session'; header: SessionHeader } | { kind: 'event'; event: SessionEvent } | { kind: 'end' }
    if (v.kind === 'end') break
    if (v.kind === 'session') {
      entry = { header: v.header, from: 0, events: [] }
      chain = new ChainState()
      pending.push(entry)
    } else {
      // A fork's seed stays in one entry: the store creates a fork with its seed at once.
      if (batchEvents >= IMPORT_BATCH && v.event.seq >= entry!.header.seedLength) {
        const { header } = entry!
        await flush()
        // Its witness: the chain over the events before it, so that it continues only the
        // history the first entries were compared with (a conflict there stops it too).
        entry = { header, from: v.event.seq, events: [], chain: chain.value }
        pending.push(entry)
      }
      entry!.events.push(v.event)
      chain.push(eventJson(v.event))
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
    const lines = [
      `imported ${total.copiedSessions} new session${total.copiedSessions === 1 ? '' : 's'}, ${total.copiedEvents} event${total.copiedEvents === 1 ? '' : 's'}`,
    ]
    for (const c of total.conflicts)
      lines.push(`  conflict  ${c.id}  ${c.reason === 'header' ? 'another session with this id is here' : `events differ at seq ${c.seq}`}; left as it was`)
    for (const s of total.skipped) lines.push(`  skipped   ${s.id}  ${s.reason}: ${s.detail}`)
    await out.line(lines.join('\n'))
  }
  return problems > 0 ? 1 : 0
}
