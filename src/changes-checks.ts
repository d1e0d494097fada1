// What the worker answers to changesSince and applyChanges, checked in the client before the
// app sees it (as frames.ts checks every other answer): a broken worker gives
// PROJECTIONS_UNAVAILABLE, never a batch that would carry wrong events to another store.
import { headerProblem, oneOf } from './frames'
import { isCount, isSessionId } from './limits'
import { assertPlainJson, isPlainObject } from './validate'

function cursorProblem(c: unknown): string | undefined {
  if (!isPlainObject(c) || c.v !== 1 || !isPlainObject(c.sessions) || (c.after !== undefined && !isSessionId(c.after))) return 'bad cursor'
  for (const [k, v] of Object.entries(c.sessions)) {
    if (!isSessionId(k) || !Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'number' || !isCount(v[1])) return `bad cursor entry for ${JSON.stringify(k)}`
  }
  return undefined
}

/** The reason an answer to changesSince is unacceptable, or undefined. */
export function changesProblem(c: unknown): string | undefined {
  if (!isPlainObject(c) || !isPlainObject(c.batch) || c.batch.v !== 1 || !Array.isArray(c.batch.sessions)) return 'bad batch'
  if (!isCount(c.pending) || typeof c.done !== 'boolean' || !Array.isArray(c.failed)) return 'bad changes'
  const cursor = cursorProblem(c.cursor) ?? (c.head === undefined ? undefined : cursorProblem(c.head))
  if (cursor) return cursor
  for (const entry of c.batch.sessions as unknown[]) {
    if (!isPlainObject(entry) || !isCount(entry.from) || !Array.isArray(entry.events)) return 'bad batch entry'
    const header = headerProblem(entry.header)
    if (header) return `bad header in the batch: ${header}`
    for (let i = 0; i < entry.events.length; i++) {
      const e: unknown = entry.events[i]
      if (!isPlainObject(e) || e.seq !== (entry.from as number) + i || typeof e.type !== 'string' || typeof e.time !== 'number') return `bad event in the batch at seq ${(entry.from as number) + i}`
      try {
        assertPlainJson(e.data, 'data')
      } catch {
        return `bad event data in the batch at seq ${(entry.from as number) + i}`
      }
    }
  }
  return undefined
}

/** The reason an answer to applyChanges is unacceptable, or undefined. */
export function applyResultProblem(r: unknown): string | undefined {
  if (!isPlainObject(r) || !isCount(r.copiedSessions) || !isCount(r.copiedEvents) || !Array.isArray(r.conflicts) || !Array.isArray(r.skipped)) return 'bad apply result'
  for (const c of r.conflicts as unknown[]) {
    if (!isPlainObject(c) || !isSessionId(c.id) || !isCount(c.seq) || (c.reason !== 'header' && c.reason !== 'event') || !isPlainObject(c.source) || !isPlainObject(c.target)) return 'bad conflict'
  }
  for (const s of r.skipped as unknown[]) {
    if (!isPlainObject(s) || !isSessionId(s.id) || !oneOf(['locked', 'gap', 'damaged'], s.reason) || typeof s.detail !== 'string') return 'bad skipped entry'
  }
  return undefined
}
