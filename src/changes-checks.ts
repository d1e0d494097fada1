// What the worker answers to changesSince and applyChanges, checked in the client before the
// app sees it (as frames.ts checks every other answer): a broken worker gives
// PROJECTIONS_UNAVAILABLE, never a batch that would carry wrong events to another store.
import { headerProblem, nat } from './frames'
import { SESSION_ID_PATTERN } from './model'
import { assertPlainJson, isPlainObject } from './validate'

const id = (v: unknown) => typeof v === 'string' && SESSION_ID_PATTERN.test(v)

function cursorProblem(c: unknown): string | undefined {
  if (!isPlainObject(c) || c.v !== 1 || !isPlainObject(c.sessions) || (c.after !== undefined && !id(c.after))) return 'bad cursor'
  for (const [k, v] of Object.entries(c.sessions)) {
    if (!id(k) || !Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'number' || !nat(v[1])) return `bad cursor entry for ${JSON.stringify(k)}`
  }
  return undefined
}

/** The reason an answer to changesSince is unacceptable, or undefined. */
export function changesProblem(c: unknown): string | undefined {
  if (!isPlainObject(c) || !isPlainObject(c.batch) || c.batch.v !== 1 || !Array.isArray(c.batch.sessions)) return 'bad batch'
  if (!nat(c.pending) || typeof c.done !== 'boolean' || !Array.isArray(c.failed)) return 'bad changes'
  const cursor = cursorProblem(c.cursor) ?? (c.head === undefined ? undefined : cursorProblem(c.head))
  if (cursor) return cursor
  for (const entry of c.batch.sessions as unknown[]) {
    if (!isPlainObject(entry) || !nat(entry.from) || !Array.isArray(entry.events)) return 'bad batch entry'
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
  if (!isPlainObject(r) || !nat(r.copiedSessions) || !nat(r.copiedEvents) || !Array.isArray(r.conflicts) || !Array.isArray(r.skipped)) return 'bad apply result'
  for (const c of r.conflicts as unknown[]) {
    if (!isPlainObject(c) || !id(c.id) || !nat(c.seq) || (c.reason !== 'header' && c.reason !== 'event') || !isPlainObject(c.source) || !isPlainObject(c.target)) return 'bad conflict'
  }
  for (const s of r.skipped as unknown[]) {
    if (!isPlainObject(s) || !id(s.id) || !['locked', 'gap', 'damaged'].includes(s.reason as string) || typeof s.detail !== 'string') return 'bad skipped entry'
  }
  return undefined
}
