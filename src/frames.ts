// Frames from the worker are checked before the app sees them: the envelope strictly, the
// built-in values against their view shapes, and any app value as plain JSON. Hand-written
// rather than zod, so the client loads no zod (its object schemas probe `new Function`, which a
// strict Content-Security-Policy reports) and stays small.
import { SESSION_ID_PATTERN } from './model'
import { PROJECTION_KEY_PATTERN } from './projection'
import type { ProjectionSnapshot } from './projection'
import type { Frame, HandleInfo } from './protocol'
import { assertPlainJson, isPlainObject } from './validate'

export const nat = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
const time = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0
const label = (v: unknown) => v === undefined || (typeof v === 'string' && v.length >= 1 && v.length <= 256)
const only = (o: Record<string, unknown>, keys: string[]) => Object.keys(o).every((k) => keys.includes(k))

function subagent(v: unknown): boolean {
  if (v === null) return true
  if (!isPlainObject(v) || !only(v, ['mode', 'label', 'seq'])) return false
  return (v.mode === 'one-shot' || v.mode === 'continuable') && label(v.label) && nat(v.seq)
}

function catalog(v: unknown): boolean {
  if (v === null) return true
  return Array.isArray(v) && v.every((e) =>
    isPlainObject(e) && only(e, ['id', 'createdAt', 'mode', 'label', 'seq']) &&
    typeof e.id === 'string' && SESSION_ID_PATTERN.test(e.id) && time(e.createdAt) &&
    ['one-shot', 'continuable', 'unknown', 'external'].includes(e.mode as string) && label(e.label) && nat(e.seq))
}

function timing(v: unknown): boolean {
  if (v === null) return true
  return isPlainObject(v) && only(v, ['turns', 'settledMs', 'runningSince']) && nat(v.turns) && time(v.settledMs) &&
    (v.runningSince === null || (typeof v.runningSince === 'number' && Number.isFinite(v.runningSince)))
}

const BUILTIN_VIEWS: Record<string, (v: unknown) => boolean> = { subagent, subagentCatalog: catalog, subagentTiming: timing }

/** The reason a frame is unacceptable, or undefined when it is fine. */
export function frameProblem(frame: unknown): string | undefined {
  if (!isPlainObject(frame)) return 'not an object'
  const { sessionId, seq, values, faults } = frame as Partial<Frame>
  if (typeof sessionId !== 'string' || !SESSION_ID_PATTERN.test(sessionId)) return 'bad sessionId'
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < -1) return 'bad seq'
  if (!isPlainObject(values) || !isPlainObject(faults)) return 'bad values or faults'
  // Keys are projection keys (never `__proto__`); `valueOf` and the like are app keys, not built-in views.
  for (const [key, fault] of Object.entries(faults)) if (!PROJECTION_KEY_PATTERN.test(key) || fault !== 'corrupt') return `bad fault for ${key}`
  for (const [key, value] of Object.entries(values)) {
    if (!PROJECTION_KEY_PATTERN.test(key)) return 'bad projection key'
    const check = Object.hasOwn(BUILTIN_VIEWS, key) ? BUILTIN_VIEWS[key] : undefined
    if (check && !check(value)) return `value of ${key} fails its view shape`
    try {
      assertPlainJson(value, key)
    } catch {
      return `value of ${key} is not plain JSON`
    }
  }
  return undefined
}

const sessionId = (v: unknown) => typeof v === 'string' && SESSION_ID_PATTERN.test(v)

/** The reason a session header from the worker is unacceptable (the rules of sessionHeaderSchema), or undefined. */
export function headerProblem(h: unknown): string | undefined {
  if (!isPlainObject(h)) return 'not an object'
  if (!only(h, ['version', 'id', 'createdAt', 'cwd', 'parentSession', 'seedLength', 'delegationDepth', 'origin', 'forkedFrom'])) return 'unknown field'
  if (h.version !== 1 || !sessionId(h.id) || !time(h.createdAt) || !nat(h.seedLength) || !nat(h.delegationDepth)) return 'bad field'
  if (h.cwd !== undefined && (typeof h.cwd !== 'string' || h.cwd.length > 4096)) return 'bad cwd'
  if (h.origin !== 'root' && h.origin !== 'fork' && h.origin !== 'subagent') return 'bad origin'
  if ((h.origin === 'subagent') !== sessionId(h.parentSession) || (h.origin !== 'subagent' && h.parentSession !== undefined)) return 'bad parentSession'
  if ((h.origin === 'fork') !== sessionId(h.forkedFrom) || (h.origin !== 'fork' && h.forkedFrom !== undefined)) return 'bad forkedFrom'
  if ((h.origin !== 'fork' && h.seedLength !== 0) || (h.origin === 'root' && h.delegationDepth !== 0)) return 'inconsistent origin'
  return undefined
}

/** The reason a handle the worker opened is unacceptable (its header, then its values), or undefined. */
export function handleProblem(info: unknown): string | undefined {
  if (!isPlainObject(info)) return 'not an object'
  const { handle, header, snapshot, parentSeq } = info as Partial<HandleInfo>
  if (!nat(handle) || (parentSeq !== undefined && !nat(parentSeq))) return 'bad handle'
  const h = headerProblem(header)
  if (h) return `header: ${h}`
  if (!isPlainObject(snapshot)) return 'bad snapshot'
  const { asOfSeq, values, faults } = snapshot as Partial<ProjectionSnapshot>
  return frameProblem({ sessionId: header!.id, seq: asOfSeq, values, faults })
}

/** The reason an append's result from the worker is unacceptable, or undefined. */
export function appendResultProblem(r: unknown): string | undefined {
  if (!isPlainObject(r) || !only(r, ['firstSeq', 'lastSeq']) || !nat(r.firstSeq) || !nat(r.lastSeq) || (r.lastSeq as number) < (r.firstSeq as number)) return 'bad append result'
  return undefined
}

/** The reason a page of events from the worker is unacceptable (they must continue at `from`), or undefined. */
export function eventsPageProblem(page: unknown, from: number): string | undefined {
  if (!isPlainObject(page) || !Array.isArray(page.events) || !nat(page.to)) return 'bad page'
  for (let i = 0; i < page.events.length; i++) {
    const e: unknown = page.events[i]
    if (!isPlainObject(e) || !only(e, ['seq', 'type', 'time', 'data']) || e.seq !== from + i || typeof e.type !== 'string' || !time(e.time)) return `bad event at seq ${from + i}`
    try {
      assertPlainJson(e.data, 'data')
    } catch {
      return `data of seq ${from + i} is not plain JSON`
    }
  }
  return undefined
}

/** The reason a listChildren row from the worker is unacceptable, or undefined. */
export function childRowProblem(r: unknown): string | undefined {
  if (!isPlainObject(r) || !sessionId(r.id) || !sessionId(r.parentId) || !nat(r.depth)) return 'bad row'
  if (r.kind === 'diagnostic') {
    return only(r, ['kind', 'id', 'parentId', 'depth', 'reason']) && ['corrupt', 'unsupported', 'unavailable'].includes(r.reason as string) ? undefined : 'bad diagnostic row'
  }
  if (r.kind !== 'child' || !only(r, ['kind', 'id', 'parentId', 'depth', 'createdAt', 'activity', 'hasChildren', 'mode', 'label'])) return 'bad row'
  return time(r.createdAt) && (r.activity === 'running' || r.activity === 'inactive') && typeof r.hasChildren === 'boolean' &&
    ['one-shot', 'continuable', 'external'].includes(r.mode as string) && label(r.label) ? undefined : 'bad child row'
}

/** Why verify's plan from the worker is unacceptable, or undefined. */
export function verifyPlanProblem(plan: unknown): string | undefined {
  return isPlainObject(plan) && nat(plan.sessions) && nat(plan.events) ? undefined : 'not { sessions, events }'
}

/** Why a verify step from the worker is unacceptable, or undefined. */
export function verifyStepProblem(step: unknown): string | undefined {
  if (!isPlainObject(step) || !nat(step.sessions) || !nat(step.events)) return 'bad counts'
  if (!(step.next === null || (typeof step.next === 'string' && SESSION_ID_PATTERN.test(step.next)))) return 'bad next'
  if (!Array.isArray(step.damaged)) return 'damaged is not an array'
  const bad = step.damaged.find((d: unknown) => !(isPlainObject(d) && typeof d.id === 'string' && SESSION_ID_PATTERN.test(d.id) &&
    (d.code === 'CORRUPT_LOG' || d.code === 'CORRUPT_CHECKPOINT') && typeof d.detail === 'string' && Object.keys(d).length === 3))
  return bad === undefined ? undefined : 'a damaged entry is not { id, code, detail }'
}
