// The session list (`store.sessions(query)`): what a row shows, what a query may ask, and the
// query's rule, once for the client (which checks it before anything is sent) and the engine.
import { SessionfoldError } from './errors'
import { MAX_TAG_LENGTH, MAX_TITLE_LENGTH, isTag } from './limits'
import type { SessionId, SessionOrigin } from './model'
import { describe, isPlainObject } from './validate'

/** One row of {@link SessionList}: a session as the store-wide index knows it. */
export interface SessionSummary {
  /** The session's id. */
  id: SessionId
  /** How it came to be: `createSession`, `fork` or `spawn`. */
  origin: SessionOrigin
  /** The spawning parent of a subagent; null for roots and forks (a fork's source is its header's `forkedFrom`). */
  parent: SessionId | null
  /** Epoch ms, from its header. */
  createdAt: number
  /** As `sessionMeta` has it: the last title set, or null. */
  title: string | null
  /** As `sessionMeta` has it: the last tags set. */
  tags: string[]
  /** Events in the log. */
  length: number
  /** The `time` of the last event (`createdAt` while the log is empty). */
  lastEventAt: number
  /** Open for writing by some client of the store (this tab, another tab or process). */
  running: boolean
}

/** Which sessions {@link SessionList} shows, in which order. */
export interface SessionQuery {
  /** true (the default): sessions without a parent (roots and forks, not subagents); false: all. */
  roots?: boolean
  /** Only sessions carrying this tag. */
  tag?: string
  /** Only sessions whose title contains this text, compared case-insensitively. */
  search?: string
  /** 'activity' (the default): the latest `lastEventAt` first; 'created': the latest `createdAt` first. */
  order?: 'activity' | 'created'
  /** Rows per page: the first page, and each `more()` (default 50, at most 1,000). */
  limit?: number
}

/** A query with its defaults resolved. */
export interface ResolvedSessionQuery {
  roots: boolean
  tag: string | undefined
  search: string | undefined
  order: 'activity' | 'created'
  limit: number
}

export const DEFAULT_SESSIONS_LIMIT = 50
export const MAX_SESSIONS_LIMIT = 1000
/** Most rows a list holds after `more()`: a page at a time up to this. */
export const MAX_SESSIONS_ROWS = 10_000
const QUERY_KEYS = ['roots', 'tag', 'search', 'order', 'limit']

/** What is wrong with `query` as a session list's query, or undefined when nothing is. */
export function sessionQueryProblem(query: unknown): string | undefined {
  if (query === undefined) return undefined
  if (!isPlainObject(query)) return `must be an object, got ${describe(query)}`
  const extra = Object.keys(query).find((k) => !QUERY_KEYS.includes(k))
  if (extra !== undefined) return `has no option "${extra}" (it takes ${QUERY_KEYS.join(', ')})`
  const { roots, tag, search, order, limit } = query
  if (roots !== undefined && typeof roots !== 'boolean') return `roots must be a boolean, got ${describe(roots)}`
  if (tag !== undefined && !isTag(tag)) return `tag must be a string of 1-${MAX_TAG_LENGTH} characters, got ${describe(tag)}`
  if (search !== undefined && (typeof search !== 'string' || search.length > MAX_TITLE_LENGTH))
    return `search must be a string of at most ${MAX_TITLE_LENGTH} characters, got ${describe(search)}`
  if (order !== undefined && order !== 'activity' && order !== 'created') return `order must be 'activity' or 'created', got ${describe(order)}`
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SESSIONS_LIMIT))
    return `limit must be an integer in 1..${MAX_SESSIONS_LIMIT}, got ${describe(limit)}`
  return undefined
}

/** The query with its defaults; INVALID_ARGUMENT for a bad one. */
export function resolveSessionQuery(query: unknown): ResolvedSessionQuery {
  const problem = sessionQueryProblem(query)
  if (problem !== undefined) throw new SessionfoldError('INVALID_ARGUMENT', `sessions query ${problem}`)
  const q = (query ?? {}) as SessionQuery
  return {
    roots: q.roots ?? true,
    tag: q.tag,
    search: q.search === '' ? undefined : q.search,
    order: q.order ?? 'activity',
    limit: q.limit ?? DEFAULT_SESSIONS_LIMIT,
  }
}

/** Whether a row passes a query's filters (its roots/order choose the index list, not this). */
export function matchesQuery(row: Pick<SessionSummary, 'title' | 'tags'>, query: ResolvedSessionQuery): boolean {
  if (query.tag !== undefined && !row.tags.includes(query.tag)) return false
  if (query.search !== undefined && !(row.title ?? '').toLowerCase().includes(query.search.toLowerCase())) return false
  return true
}

/** One page of a list as the engine answers it: rows in order, and whether more follow. */
export interface SessionsPage {
  items: SessionSummary[]
  /** Where the next page starts (opaque), or null when nothing follows. */
  next: string | null
}
