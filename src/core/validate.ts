// The client's hand-written checks of what an app passes in, and the event encoding. The rules
// they apply are in limits.ts, shared with the worker's zod schemas.
import { SessionfoldError, where } from './errors'
import {
  DEFAULT_MAX_EVENT_BYTES,
  MAX_EVENT_TYPE_LENGTH,
  MAX_JSON_DEPTH,
  MAX_SESSION_ID_LENGTH,
  isEventType,
  isEventVersion,
  isSessionId,
  isTime,
  META_EVENT,
  metaProblem,
} from './limits'
import type { Json, SessionEvent, SessionId } from './model'

// For importers not yet moved to limits.ts.

/** Shows a caller's value in a message without dumping it. */
export function describe(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value
    return JSON.stringify(shown)
  }
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'symbol' || typeof value === 'function') return typeof value
  if (value === null || typeof value !== 'object') return String(value)
  return Array.isArray(value) ? 'an array' : (value.constructor?.name ?? 'an object')
}

/** Throws INVALID_ARGUMENT unless `id` is a session id (limits.ts: isSessionId). */
export function assertSessionId(id: unknown, what = 'session id'): asserts id is SessionId {
  if (!isSessionId(id)) {
    throw new SessionfoldError('INVALID_ARGUMENT', `${what} ${describe(id)} is not 1-${MAX_SESSION_ID_LENGTH} characters of [A-Za-z0-9_-]`)
  }
}

/** A zod 4 schema, classic or mini: both carry zod's core internals, `_zod.run` among them (defineProjection, defineEvent). */
export const isZodSchema = (s: unknown): boolean => typeof (s as { _zod?: { run?: unknown } } | undefined)?._zod?.run === 'function'

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * Throws INVALID_ARGUMENT unless `value` is plain JSON: null, booleans, finite numbers,
 * strings, dense arrays and plain objects, without cycles. `JSON.stringify` would silently
 * drop or convert the rest (undefined, functions, Date, Map, NaN), so stored data would
 * not be what the caller passed.
 */
export function assertPlainJson(value: unknown, context: string): asserts value is Json {
  const problem = nonJsonProblem(value)
  if (problem !== undefined) {
    throw new SessionfoldError('INVALID_ARGUMENT', `${context} is not plain JSON: ${problem}`)
  }
}

/** What makes `value` not plain JSON (see assertPlainJson), or undefined when it is. */
export function nonJsonProblem(value: unknown): string | undefined {
  // The walk that names where the problem is builds a path per key: only once there is one.
  // Both walks apply the same rules; should they ever differ, the stricter verdict stands.
  return isPlainJson(value, []) ? undefined : (findNonJson(value, [], '') ?? 'a value that is not plain JSON')
}

/** The same rules as findNonJson, without building paths: the common case, per event. */
function isPlainJson(value: unknown, ancestors: object[]): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(value)
    case 'object':
      break
    default:
      return false
  }
  if (value === null) return true
  if (ancestors.includes(value) || ancestors.length >= MAX_JSON_DEPTH) return false
  ancestors.push(value)
  try {
    if (Array.isArray(value)) {
      if (Object.getPrototypeOf(value) !== Array.prototype) return false
      for (let i = 0; i < value.length; i++) if (!(i in value) || !isPlainJson(value[i], ancestors)) return false
      return true
    }
    if (!isPlainObject(value) || Object.getOwnPropertySymbols(value).length > 0) return false
    for (const key in value) if (!isPlainJson(value[key], ancestors)) return false
    return true
  } finally {
    ancestors.pop()
  }
}

function findNonJson(value: unknown, ancestors: object[], path: string): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined
    case 'number':
      return Number.isFinite(value) ? undefined : `${value} at ${path || 'the top'}`
    case 'object':
      break
    default:
      return `${describe(value)} at ${path || 'the top'}`
  }
  if (value === null) return undefined
  if (ancestors.includes(value)) return `a cycle at ${path || 'the top'}`
  if (ancestors.length >= MAX_JSON_DEPTH) return `nesting deeper than ${MAX_JSON_DEPTH} at ${path}`
  ancestors.push(value)
  try {
    if (Array.isArray(value)) {
      if (Object.getPrototypeOf(value) !== Array.prototype) return `${describe(value)} at ${path || 'the top'}`
      for (let i = 0; i < value.length; i++) {
        if (!(i in value)) return `a hole at ${path}[${i}]`
        const p = findNonJson(value[i], ancestors, `${path}[${i}]`)
        if (p !== undefined) return p
      }
      return undefined
    }
    if (!isPlainObject(value)) return `${describe(value)} at ${path || 'the top'}`
    if (Object.getOwnPropertySymbols(value).length > 0) return `a symbol key at ${path || 'the top'}`
    for (const key of Object.keys(value)) {
      const p = findNonJson(value[key], ancestors, `${path}.${key}`)
      if (p !== undefined) return p
    }
    return undefined
  } finally {
    ancestors.pop()
  }
}

/**
 * Throws INVALID_ARGUMENT unless `options` is undefined or a plain object with only the given
 * keys, each undefined or plain JSON (`signal` excepted: the caller checks it; and a function where
 * its key is one of `functions`: options that stay in the caller's thread). The engine checks
 * each value's meaning; this check makes sure it sees exactly what the caller passed in both
 * worker modes: a class instance, a function or a typo'd key (`expectSeq`) is refused here,
 * not cloned into something else, failed with a DataCloneError or silently ignored.
 */
export function assertOptions(options: unknown, what: string, keys: readonly string[], sessionId?: SessionId, functions: readonly string[] = []): void {
  const at = sessionId === undefined ? '' : ` for ${where(sessionId)}`
  const fail = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `${what} options${at} ${why}`, sessionId === undefined ? {} : { sessionId })
  if (options === undefined) return
  if (!isPlainObject(options)) throw fail(`must be an object, got ${describe(options)}`)
  try {
    if (Object.getOwnPropertySymbols(options).length > 0) throw fail('have a symbol key')
    for (const key of Object.keys(options)) {
      if (!keys.includes(key)) throw fail(`have an unknown field ${describe(key)}`)
      const value = options[key]
      if (value === undefined || key === 'signal' || (typeof value === 'function' && functions.includes(key))) continue
      const problem = findNonJson(value, [], `.${key}`)
      if (problem !== undefined) throw fail(`are not plain JSON: ${problem}`)
    }
  } catch (err) {
    // A getter or proxy trap of the caller's that throws: the options are unusable.
    throw err instanceof SessionfoldError ? err : fail(`cannot be read: ${(err as Error)?.message ?? String(err)}`)
  }
}

/** An event ready for storage: the event and its JSON encoding, made once. */
export interface EncodedEvent {
  /** The event, with its seq. */
  readonly event: SessionEvent
  /** `JSON.stringify(event)` with keys in the order seq, type, time, v (when the event has a version), data. */
  readonly json: string
}

/** An event as an app appends it: the store gives it its `seq` (and its `time`, unless given). */
export interface EventInput {
  /** 1-256 characters; `subagent/…` and `turn/…` types have meanings of their own (see the contract). */
  type: string
  /** Plain JSON (default `null`): no functions, `undefined`, NaN, BigInt, cycles, Date, Map… */
  data?: Json
  /** Epoch ms; defaults to now. */
  time?: number
}

/**
 * Validates one app-supplied event and encodes it without its seq, as the JSON body
 * `{"type":…,"time":…,"data":…}`: what crosses the worker boundary. INVALID_ARGUMENT for a bad
 * shape or non-JSON data, EVENT_TOO_LARGE when even the body is over `maxBytes`.
 */
export function encodeEventBody(input: unknown, sessionId: SessionId, options: { maxBytes?: number; now?: number; seq?: number } = {}): string {
  const { seq } = options
  // Messages (and the closures that make them) are made only for an error: this runs for every event an app appends.
  if (!isPlainObject(input)) throw badEvent(sessionId, seq, (at) => `event for ${at} must be an object, got ${describe(input)}`)
  for (const key of Object.keys(input)) {
    if (key !== 'type' && key !== 'data' && key !== 'time') throw badEvent(sessionId, seq, (at) => `event for ${at} has an unknown field ${describe(key)}`)
  }
  let fields: Partial<EventInput>
  try {
    fields = { ...(input as Partial<EventInput>) } // each field read once: a getter cannot answer twice
  } catch (err) {
    throw unreadableEvent(sessionId, seq, 'event', err)
  }
  const { type, data = null, time = options.now ?? Date.now() } = fields
  if (!isEventType(type))
    throw badEvent(sessionId, seq, (at) => `event type for ${at} must be a string of 1-${MAX_EVENT_TYPE_LENGTH} characters, got ${describe(type)}`)
  if (!isTime(time)) throw badEvent(sessionId, seq, (at) => `event time for ${at} must be a finite number >= 0, got ${describe(time)}`)
  let problem: string | undefined
  try {
    problem = nonJsonProblem(data)
  } catch (err) {
    // A getter or proxy trap of the caller's that throws: the data cannot be read, so it is not JSON.
    throw unreadableEvent(sessionId, seq, 'event data', err)
  }
  if (problem !== undefined) throw badEvent(sessionId, seq, (at) => `event data for ${at} is not plain JSON: ${problem}`)
  // A reserved event sets what the built-in units show: its data is checked like any option.
  if (type === META_EVENT) {
    const meta = metaProblem(data)
    if (meta !== undefined) throw badEvent(sessionId, seq, (at) => `${META_EVENT} data for ${at} ${meta}`)
  }
  let body: string
  try {
    body = JSON.stringify({ type, time, data })
  } catch (err) {
    // Data that changed while it was read (a getter or proxy answering differently the second time).
    throw badEvent(sessionId, seq, (at) => `event data for ${at} is not plain JSON: ${(err as Error)?.message ?? String(err)}`)
  }
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_EVENT_BYTES
  if (!fitsUtf8(body, maxBytes)) throw tooLarge(sessionId, seq, maxBytes)
  return body
}

function badEvent(sessionId: SessionId, seq: number | undefined, why: (at: string) => string): SessionfoldError {
  return new SessionfoldError('INVALID_ARGUMENT', why(where(sessionId, seq)), { sessionId, seq })
}

function unreadableEvent(sessionId: SessionId, seq: number | undefined, what: string, err: unknown): SessionfoldError {
  return badEvent(sessionId, seq, (at) => `${what} for ${at} cannot be read: ${(err as Error)?.message ?? String(err)}`)
}

/**
 * The stored form of an event body with its seq: the JSON with `"seq"` first, and the event
 * parsed back from that JSON (what a cold read will see, and a copy the caller cannot touch).
 * The body is checked again here, so a host can take bodies from an untrusted side.
 */
export function eventFromBody(body: string, seq: number, sessionId: SessionId, maxBytes = DEFAULT_MAX_EVENT_BYTES): EncodedEvent {
  // One line, as JSON.stringify writes it: stored JSON is joined by line breaks (a frame of the
  // codec, PostgreSQL's append_group), so a body with a raw line break between its tokens (JSON
  // that parses, from a host that does not use encodeEventBody) would come back cut in two.
  if (typeof body !== 'string' || body[0] !== '{' || body.includes('\n')) {
    throw new SessionfoldError('INVALID_ARGUMENT', `event for ${where(sessionId, seq)} is not an encoded event body`, { sessionId, seq })
  }
  const json = `{"seq":${seq},${body.slice(1)}`
  if (!fitsUtf8(json, maxBytes)) throw tooLarge(sessionId, seq, maxBytes)
  let event: SessionEvent
  try {
    event = JSON.parse(json) as SessionEvent
  } catch {
    throw new SessionfoldError('INVALID_ARGUMENT', `event for ${where(sessionId, seq)} is not valid JSON`, { sessionId, seq })
  }
  const keys = Object.keys(event)
  // A version (DESIGN §19) sits between time and data: `v`, 2 or more.
  const versioned = keys.length === 5 && keys[3] === 'v' && isEventVersion(event.v)
  if (
    keys.length !== (versioned ? 5 : 4) ||
    keys[0] !== 'seq' ||
    keys[1] !== 'type' ||
    keys[2] !== 'time' ||
    keys[versioned ? 4 : 3] !== 'data' ||
    event.seq !== seq ||
    !isEventType(event.type) ||
    !isTime(event.time)
  ) {
    throw new SessionfoldError('INVALID_ARGUMENT', `event for ${where(sessionId, seq)} is malformed`, { sessionId, seq })
  }
  // The chain (src/core/chain.ts) steps over this text as it is, and every copy of the event (a reader,
  // another store after a sync) over JSON.stringify of its values: encodeEventBody's bodies are
  // that text. Checking it here would cost a stringify per event (about 12 % of an append of 100);
  // a body written otherwise only makes its session's chain disagree with its copies (sync then
  // reports a conflict, never splices), so it is left to the client that makes every body.
  return { event, json }
}

/**
 * Where an event's text as encodeEvent writes it (`{"seq":<seq>,…`) goes on after its seq: the
 * index just past the digits, or -1 when it does not start so. Makes no string of the text (its
 * readers run it once a record).
 */
export function seqEnd(text: string, seq: number): number {
  const digits = String(seq)
  return text.startsWith('{"seq":') && text.startsWith(digits, 7) ? 7 + digits.length : -1
}

/** Validates one app-supplied event and encodes it with its seq (body, then seq). */
export function encodeEventInput(input: unknown, seq: number, sessionId: SessionId, options: { maxBytes?: number; now?: number } = {}): EncodedEvent {
  return eventFromBody(encodeEventBody(input, sessionId, { ...options, seq }), seq, sessionId, options.maxBytes)
}

function tooLarge(sessionId: SessionId, seq: number | undefined, maxBytes: number): SessionfoldError {
  return new SessionfoldError('EVENT_TOO_LARGE', `event for ${where(sessionId, seq)} encodes to more than ${maxBytes} bytes`, { sessionId, seq })
}

/** Encodes an event that is already known to be well-formed, enforcing the size limit. */
export function encodeEvent(event: SessionEvent, sessionId: SessionId, maxBytes = DEFAULT_MAX_EVENT_BYTES): EncodedEvent {
  const ordered: SessionEvent =
    event.v === undefined
      ? { seq: event.seq, type: event.type, time: event.time, data: event.data }
      : { seq: event.seq, type: event.type, time: event.time, v: event.v, data: event.data }
  const json = JSON.stringify(ordered)
  if (!fitsUtf8(json, maxBytes)) throw tooLarge(sessionId, event.seq, maxBytes)
  return { event: ordered, json }
}

/**
 * Whether `s` encodes to at most `limit` UTF-8 bytes. A UTF-16 unit is at most 3 bytes, so a
 * string of up to a third of the limit is decided without reading it: every event of ordinary
 * size, on both sides of the worker.
 */
export function fitsUtf8(s: string, limit: number): boolean {
  return s.length * 3 <= limit || utf8Length(s, limit) <= limit
}

/**
 * UTF-8 length of `s`, exact up to `limit` (past it, any number over the limit).
 * Every UTF-16 unit is 1-3 bytes, so most strings are decided without a loop.
 */
export function utf8Length(s: string, limit = Infinity): number {
  if (s.length > limit) return s.length
  let bytes = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
    if (bytes > limit) return bytes
  }
  return bytes
}

/**
 * The `title` and `tags` given to createSession, spawn or setMeta, checked by the rules of a
 * `session/meta` event (a null title, which clears one, only where `clears`); INVALID_ARGUMENT
 * naming `what` and the session otherwise. Returns the event's data, or undefined when neither
 * is given.
 */
export function metaOf(options: { title?: unknown; tags?: unknown }, what: string, sessionId?: SessionId, clears = false): Json | undefined {
  const { title, tags } = options
  if (title === undefined && tags === undefined) return undefined
  const of = sessionId === undefined ? what : `${what} for ${where(sessionId)}`
  if (title === null && !clears)
    throw new SessionfoldError('INVALID_ARGUMENT', `title of ${of} must be a string, got null`, sessionId ? { sessionId } : undefined)
  const data = { ...(title === undefined ? {} : { title }), ...(tags === undefined ? {} : { tags }) } as { [key: string]: Json }
  const problem = metaProblem(data)
  if (problem !== undefined) throw new SessionfoldError('INVALID_ARGUMENT', `${of}: ${problem}`, sessionId ? { sessionId } : undefined)
  return data
}
