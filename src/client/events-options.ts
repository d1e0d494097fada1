// The options of `events()` (session.ts), checked before anything is read: INVALID_ARGUMENT
// naming the session for anything else.
import { SessionfoldError, where } from '../core/errors'
import { isEventType } from '../core/limits'
import type { SessionId } from '../core/model'
import { assertOptions, describe } from '../core/validate'

/** What `events()` reads: `types` as a set (undefined: every type). */
export interface EventsRead {
  from: number
  to: number | undefined
  signal: AbortSignal | undefined
  follow: boolean
  types: Set<string> | undefined
}

/** `options` of `events()` on session `id` (a view as of `at`, if it is one), checked. */
export function eventsOptions(
  options: { from?: number; to?: number; follow?: boolean; signal?: AbortSignal; types?: readonly string[] },
  id: SessionId,
  at: number | undefined,
): EventsRead {
  const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `events of ${where(id)}: ${why}`, { sessionId: id })
  assertOptions(options, 'events', ['from', 'to', 'follow', 'signal', 'types'], id)
  const { from = 0, to, signal, follow = false } = options
  if (options.types !== undefined && (!Array.isArray(options.types) || !options.types.every(isEventType)))
    throw bad(`types must be a list of event types, got ${describe(options.types)}`)
  if (typeof follow !== 'boolean') throw bad(`follow must be true or false, got ${describe(follow)}`)
  if (follow && to !== undefined) throw bad('follow reads on past the end, so it takes no to')
  if (follow && at !== undefined) throw bad('a view as of a point never grows, so it cannot follow')
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new SessionfoldError('INVALID_ARGUMENT', `events signal for ${where(id)} must be an AbortSignal`, { sessionId: id })
  for (const [k, v] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)) throw bad(`${k} must be an integer >= 0, got ${describe(v)}`)
  }
  return { from, to, signal, follow, types: options.types === undefined ? undefined : new Set(options.types) }
}
