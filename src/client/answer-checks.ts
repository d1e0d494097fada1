// Every answer of the worker is checked before the app sees it (a broken or hostile worker
// gives PROJECTIONS_UNAVAILABLE, never values of the wrong shape): pushed frames (the envelope
// strictly, the built-in values against their view shapes, any app value as plain JSON),
// handles, pages of events, child rows, verify steps, and the batches of store-to-store sync. Hand-written
// rather than zod, so the client loads no zod (its object schemas probe `new Function`, which a
// strict Content-Security-Policy reports) and stays small; the rules they apply are in limits.ts.
import {
  CATALOG_MODES,
  HEADER_VERSION,
  SESSION_ORIGINS,
  SPAWN_MODES,
  headerOriginProblems,
  isCount,
  isCwd,
  isEventVersion,
  isLabel,
  isProjectionKey,
  isSessionId,
  isTime,
  isTitle,
  tagsProblem,
  type OriginFields,
} from '../core/limits'
import type { ProjectionSnapshot } from '../core/projection'
import type { Frame, HandleInfo } from '../core/protocol'
import { assertPlainJson, isPlainObject } from '../core/validate'

/** True when `v` is one of `values`. */
const oneOf = (values: readonly unknown[], v: unknown) => values.includes(v)
const optional = (check: (v: unknown) => boolean) => (v: unknown) => v === undefined || check(v)
const label = optional(isLabel)
const only = (o: Record<string, unknown>, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k))

// A faulted unit's value is null, so every built-in view may be null.
function subagent(v: unknown): boolean {
  if (v === null) return true
  if (!isPlainObject(v) || !only(v, ['mode', 'label', 'seq'])) return false
  return oneOf(SPAWN_MODES, v.mode) && label(v.label) && isCount(v.seq)
}

function catalogEntry(e: unknown): boolean {
  return (
    isPlainObject(e) &&
    only(e, ['id', 'createdAt', 'mode', 'label', 'seq']) &&
    isSessionId(e.id) &&
    isTime(e.createdAt) &&
    oneOf(CATALOG_MODES, e.mode) &&
    label(e.label) &&
    isCount(e.seq)
  )
}

function catalog(v: unknown): boolean {
  return v === null || (Array.isArray(v) && v.every(catalogEntry))
}

function timing(v: unknown): boolean {
  if (v === null) return true
  return (
    isPlainObject(v) &&
    only(v, ['turns', 'settledMs', 'runningSince']) &&
    isCount(v.turns) &&
    isTime(v.settledMs) &&
    (v.runningSince === null || (typeof v.runningSince === 'number' && Number.isFinite(v.runningSince)))
  )
}

function sessionMeta(v: unknown): boolean {
  if (v === null) return true
  return isPlainObject(v) && only(v, ['title', 'tags']) && (v.title === null || isTitle(v.title)) && Array.isArray(v.tags) && tagsProblem(v.tags) === undefined
}

const BUILTIN_VIEWS: Record<string, (v: unknown) => boolean> = { subagent, subagentCatalog: catalog, subagentTiming: timing, sessionMeta }
/** The item check of the built-in views that are lists. */
const BUILTIN_ITEMS: Record<string, (v: unknown) => boolean> = { subagentCatalog: catalogEntry }

/** The reason `value` cannot be the value of `key` (its view shape, then plain JSON), or undefined. */
function valueProblem(key: string, value: unknown, check: ((v: unknown) => boolean) | undefined, what: string): string | undefined {
  if (!isProjectionKey(key)) return 'bad projection key'
  if (check && !check(value)) return `${what} of ${key} fails its view shape`
  try {
    assertPlainJson(value, key)
  } catch {
    return `${what} of ${key} is not plain JSON`
  }
  return undefined
}

/** The reason a frame is unacceptable, or undefined when it is fine. */
export function frameProblem(frame: unknown): string | undefined {
  if (!isPlainObject(frame)) return 'not an object'
  const { n, sessionId, seq, values, faults } = frame as Partial<Frame>
  if (!isCount(n)) return 'bad n'
  if (!isSessionId(sessionId)) return 'bad sessionId'
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < -1) return 'bad seq'
  if (!isPlainObject(values) || !isPlainObject(faults)) return 'bad values or faults'
  // Keys are projection keys (never `__proto__`); `valueOf` and the like are app keys, not built-in views.
  for (const [key, fault] of Object.entries(faults)) if (!isProjectionKey(key) || fault !== 'corrupt') return `bad fault for ${key}`
  for (const [key, value] of Object.entries(values)) {
    const problem = valueProblem(key, value, Object.hasOwn(BUILTIN_VIEWS, key) ? BUILTIN_VIEWS[key] : undefined, 'value')
    if (problem) return problem
  }
  const { gone } = frame as Partial<Frame>
  if (gone !== undefined && (!isPlainObject(gone) || gone.code !== 'SESSION_NOT_FOUND' || typeof gone.message !== 'string' || gone.message.length > 1000))
    return 'bad gone'
  const { reset } = frame as Partial<Frame>
  if (reset !== undefined && reset !== true) return 'bad reset'
  const { grown } = frame as Partial<Frame>
  if (grown === undefined) return undefined
  if (!isPlainObject(grown)) return 'bad grown values'
  // A list that only grew: its new items alone are checked, as items of the list's shape.
  for (const [key, growth] of Object.entries(grown)) {
    if (Object.hasOwn(values, key)) return `${key} both set and grown`
    if (!isPlainObject(growth) || !only(growth, ['from', 'items']) || !isCount(growth.from) || !Array.isArray(growth.items) || growth.items.length === 0)
      return `bad growth of ${key}`
    const item = Object.hasOwn(BUILTIN_ITEMS, key) ? BUILTIN_ITEMS[key] : Object.hasOwn(BUILTIN_VIEWS, key) ? () => false : undefined
    const problem = valueProblem(key, growth.items, item && ((items) => (items as unknown[]).every(item)), 'new items')
    if (problem) return problem
  }
  return undefined
}

const link = optional(isSessionId)

/** The reason a session header from the worker is unacceptable (the rules of sessionHeaderSchema), or undefined. */
export function headerProblem(h: unknown): string | undefined {
  if (!isPlainObject(h)) return 'not an object'
  if (!only(h, ['version', 'id', 'createdAt', 'cwd', 'parentSession', 'seedLength', 'delegationDepth', 'origin', 'forkedFrom'])) return 'unknown field'
  if (h.version !== HEADER_VERSION || !isSessionId(h.id) || !isTime(h.createdAt) || !isCount(h.seedLength) || !isCount(h.delegationDepth)) return 'bad field'
  if (!optional(isCwd)(h.cwd)) return 'bad cwd'
  if (!oneOf(SESSION_ORIGINS, h.origin)) return 'bad origin'
  if (!link(h.parentSession) || !link(h.forkedFrom)) return 'bad link'
  return headerOriginProblems(h as unknown as OriginFields)[0]
}

/** The reason a handle the worker opened is unacceptable (its header, then its values), or undefined. */
export function handleProblem(info: unknown): string | undefined {
  if (!isPlainObject(info)) return 'not an object'
  const { handle, header, snapshot, parentSeq, followed, at } = info as Partial<HandleInfo>
  if (!isCount(handle) || !optional(isCount)(parentSeq) || !optional(isCount)(at) || !(followed === undefined || typeof followed === 'boolean'))
    return 'bad handle'
  const h = headerProblem(header)
  if (h) return `header: ${h}`
  if (!isPlainObject(snapshot)) return 'bad snapshot'
  const { asOfSeq, values, faults } = snapshot as Partial<ProjectionSnapshot>
  return frameProblem({ n: 1, sessionId: header!.id, seq: asOfSeq, values, faults })
}

/** The reason an append's result from the worker is unacceptable, or undefined. */
export function appendResultProblem(r: unknown): string | undefined {
  if (!isPlainObject(r) || !only(r, ['firstSeq', 'lastSeq']) || !isCount(r.firstSeq) || !isCount(r.lastSeq) || (r.lastSeq as number) < (r.firstSeq as number))
    return 'bad append result'
  return undefined
}

/** The reason a page of events from the worker is unacceptable (they must continue at `from`), or undefined. */
export function eventsPageProblem(page: unknown, from: number): string | undefined {
  if (!isPlainObject(page) || !Array.isArray(page.events) || !isCount(page.to)) return 'bad page'
  for (let i = 0; i < page.events.length; i++) {
    const e: unknown = page.events[i]
    if (
      !isPlainObject(e) ||
      !only(e, ['seq', 'type', 'time', 'v', 'data']) ||
      e.seq !== from + i ||
      typeof e.type !== 'string' ||
      !isTime(e.time) ||
      (e.v !== undefined && !isEventVersion(e.v))
    )
      return `bad event at seq ${from + i}`
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
  if (!isPlainObject(r) || !isSessionId(r.id) || !isSessionId(r.parentId) || !isCount(r.depth)) return 'bad row'
  if (r.kind === 'diagnostic') {
    return only(r, ['kind', 'id', 'parentId', 'depth', 'reason']) && oneOf(['corrupt', 'unsupported', 'unavailable'], r.reason)
      ? undefined
      : 'bad diagnostic row'
  }
  if (r.kind !== 'child' || !only(r, ['kind', 'id', 'parentId', 'depth', 'createdAt', 'activity', 'hasChildren', 'mode', 'label'])) return 'bad row'
  // A fact of mode 'unknown' is listed as a diagnostic row, never as a child.
  return isTime(r.createdAt) &&
    (r.activity === 'running' || r.activity === 'inactive') &&
    typeof r.hasChildren === 'boolean' &&
    r.mode !== 'unknown' &&
    oneOf(CATALOG_MODES, r.mode) &&
    label(r.label)
    ? undefined
    : 'bad child row'
}

/** Why verify's plan from the worker is unacceptable, or undefined. */
export function verifyPlanProblem(plan: unknown): string | undefined {
  return isPlainObject(plan) && isCount(plan.sessions) && isCount(plan.events) ? undefined : 'not { sessions, events }'
}

/** Why a verify step from the worker is unacceptable, or undefined. */
export function verifyStepProblem(step: unknown): string | undefined {
  if (!isPlainObject(step) || !isCount(step.sessions) || !isCount(step.events)) return 'bad counts'
  if (!(step.next === null || isSessionId(step.next))) return 'bad next'
  if (!Array.isArray(step.damaged)) return 'damaged is not an array'
  const bad = step.damaged.find(
    (d: unknown) =>
      !(
        isPlainObject(d) &&
        isSessionId(d.id) &&
        (d.code === 'CORRUPT_LOG' || d.code === 'CORRUPT_CHECKPOINT') &&
        typeof d.detail === 'string' &&
        Object.keys(d).length === 3
      ),
  )
  return bad === undefined ? undefined : 'a damaged entry is not { id, code, detail }'
}

/** A tombstones' place in a cursor: `{ after? }`. */
const deletedPlace = (d: unknown) => isPlainObject(d) && (d.after === undefined || isSessionId(d.after))

const isTombstone = (t: unknown) => isPlainObject(t) && isSessionId(t.id) && isTime(t.createdAt) && isTime(t.deletedAt)

function cursorProblem(c: unknown): string | undefined {
  if (isPlainObject(c) && c.v === 2) {
    const ok =
      typeof c.feed === 'string' &&
      typeof c.at === 'string' &&
      (c.walk === undefined ||
        (isPlainObject(c.walk) &&
          (c.walk.after === undefined || isSessionId(c.walk.after)) &&
          (c.walk.deleted === undefined || deletedPlace(c.walk.deleted)))) &&
      (c.part === undefined || (Array.isArray(c.part) && c.part.length === 3 && isSessionId(c.part[0]) && typeof c.part[1] === 'number' && isCount(c.part[2])))
    return ok ? undefined : 'bad cursor'
  }
  if (!isPlainObject(c) || c.v !== 1 || !isPlainObject(c.sessions) || (c.after !== undefined && !isSessionId(c.after))) return 'bad cursor'
  if (c.deleted !== undefined && c.deleted !== 'sent' && !deletedPlace(c.deleted)) return 'bad cursor'
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
  if (c.batch.deleted !== undefined && (!Array.isArray(c.batch.deleted) || !c.batch.deleted.every(isTombstone))) return 'bad tombstone in the batch'
  for (const entry of c.batch.sessions as unknown[]) {
    if (!isPlainObject(entry) || !isCount(entry.from) || !Array.isArray(entry.events)) return 'bad batch entry'
    const header = headerProblem(entry.header)
    if (header) return `bad header in the batch: ${header}`
    for (let i = 0; i < entry.events.length; i++) {
      const e: unknown = entry.events[i]
      if (!isPlainObject(e) || e.seq !== (entry.from as number) + i || typeof e.type !== 'string' || typeof e.time !== 'number')
        return `bad event in the batch at seq ${(entry.from as number) + i}`
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
  if (
    !isPlainObject(r) ||
    !isCount(r.copiedSessions) ||
    !isCount(r.copiedEvents) ||
    !isCount(r.deletedSessions) ||
    !Array.isArray(r.conflicts) ||
    !Array.isArray(r.skipped)
  )
    return 'bad apply result'
  for (const c of r.conflicts as unknown[]) {
    if (
      !isPlainObject(c) ||
      !isSessionId(c.id) ||
      !isCount(c.seq) ||
      (c.reason !== 'header' && c.reason !== 'event') ||
      !isPlainObject(c.source) ||
      !isPlainObject(c.target)
    )
      return 'bad conflict'
  }
  for (const s of r.skipped as unknown[]) {
    if (
      !isPlainObject(s) ||
      !isSessionId(s.id) ||
      !oneOf(['locked', 'gap', 'damaged', 'deleted'], s.reason) ||
      typeof s.detail !== 'string' ||
      (s.tombstone !== undefined && !isTombstone(s.tombstone))
    )
      return 'bad skipped entry'
  }
  return undefined
}

const SUMMARY_KEYS = ['id', 'origin', 'parent', 'createdAt', 'title', 'tags', 'length', 'lastEventAt', 'running']

/** What is wrong with a page of the session list, or undefined. */
export function sessionsPageProblem(page: unknown): string | undefined {
  if (!isPlainObject(page) || !Array.isArray(page.items) || !(page.next === null || typeof page.next === 'string')) return 'not a page of rows'
  const bad = page.items.findIndex(
    (r: unknown) =>
      !isPlainObject(r) ||
      !only(r, SUMMARY_KEYS) ||
      !isSessionId(r.id) ||
      !oneOf(SESSION_ORIGINS, r.origin) ||
      !(r.parent === null || isSessionId(r.parent)) ||
      !isTime(r.createdAt) ||
      !isTime(r.lastEventAt) ||
      !isCount(r.length) ||
      typeof r.running !== 'boolean' ||
      !sessionMeta({ title: r.title, tags: r.tags }),
  )
  return bad < 0 ? undefined : `row ${bad} is not a session summary`
}
