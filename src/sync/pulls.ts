// What the loop (loop.ts) makes of the server's answers: a session's whole copy gathered from
// the pages of a pull, the conflicts a fork made from it resolved, and the live stream's
// server-sent events.
import type { ChangeEntry, ConflictFork, SyncConflict } from '../core/changes'
import { witnessOf, type SessionHeader, type SessionId } from '../core/model'
import type { PullAnswer } from './protocol'

/** The server's whole copy of session `id`, as one entry from seq 0 (undefined when it has none), from pulls of it alone. */
export async function serverCopy(pull: (cursor: string | null) => Promise<PullAnswer>, id: SessionId): Promise<ChangeEntry | undefined> {
  let entry: ChangeEntry | undefined
  let cursor: string | null = null // no cursor: the session sent whole, page by page
  for (;;) {
    const answer = await pull(cursor)
    for (const e of answer.batch.sessions) {
      if (e.header.id !== id) continue
      if (e.from === 0) entry = { header: e.header, from: 0, events: [...e.events] }
      else if (entry && e.from <= entry.events.length) entry.events.push(...e.events.slice(entry.events.length - e.from))
    }
    cursor = answer.cursor || null
    if (answer.done) return entry
  }
}

/** `conflicts` and those `found` that it does not list yet (a conflict is told once, until a fork resolves it). */
export function told(conflicts: readonly SyncConflict[], found: readonly SyncConflict[]): readonly SyncConflict[] {
  const all = [...conflicts]
  for (const c of found) if (!all.some((k) => k.id === c.id && k.seq === c.seq && k.reason === c.reason && !k.forkedAs)) all.push(c)
  return all.length === conflicts.length ? conflicts : all
}

/** `conflicts` with those of the session `header` names resolved by the fork `forkedAs` (one listed if none was: found before a reload). */
export function forkedIn(conflicts: readonly SyncConflict[], header: SessionHeader, { forkedAs, at }: Exclude<ConflictFork, string>): SyncConflict[] {
  const id = header.id
  const out = conflicts.map((c) => (c.id === id && !c.forkedAs ? { ...c, forkedAs } : c))
  if (!out.some((c) => c.forkedAs === forkedAs)) out.push({ id, seq: at, reason: 'event', source: witnessOf(header), target: witnessOf(header), forkedAs })
  return out
}

/** The query of a pull: after `cursor` (none: from the start), of `sessions` only when given, held up to `wait` ms. */
export function pullQuery(cursor: string | null, sessions: readonly SessionId[] | undefined, wait = 0): string {
  const q = new URLSearchParams()
  if (cursor) q.set('cursor', cursor)
  if (sessions) q.set('sessions', sessions.join(','))
  if (wait > 0) q.set('wait', String(wait))
  const s = q.toString()
  return s ? `?${s}` : ''
}

/** Server-sent events from a response body: `{ event, data }` per message. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder()
  const reader = body.getReader()
  let buffer = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        let event = 'message'
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim()
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
        }
        if (data.length > 0) yield { event, data: data.join('\n') }
      }
    }
  } finally {
    reader.releaseLock()
  }
}
