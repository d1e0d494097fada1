// Every bound and shape rule of the model, defined once. The client's hand-written checks
// (validate.ts, client/answer-checks.ts) and the worker's zod schemas (schemas.ts,
// units/payloads.ts) are both built from what is here, and test/contract/rules.test.ts
// requires that they give the same verdict for the same input.
//
// The client keeps hand-written checks, not zod/mini: zod/mini builds no Function (CSP-safe),
// but measured, its schemas for these rules add 7.2 kB min+gzip to a 11.4 kB client (budget 15 kB).
//
// Lengths are UTF-16 code units (`String.length`), what every hand check counts. zod's own
// `min`/`max` count code points past the bound, so the zod schemas use these predicates instead.

/** The longest session id. */
export const MAX_SESSION_ID_LENGTH = 128

/** A session id: 1-128 characters of `[A-Za-z0-9_-]` (safe in a file name and a URL). */
export const SESSION_ID_PATTERN = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_SESSION_ID_LENGTH}}$`)

/** The longest projection key. */
export const MAX_PROJECTION_KEY_LENGTH = 64

/** A projection key: 1-64 characters of `[A-Za-z0-9_.-]`, starting with a letter (so never `__proto__`). */
export const PROJECTION_KEY_PATTERN = new RegExp(`^[A-Za-z][A-Za-z0-9_.-]{0,${MAX_PROJECTION_KEY_LENGTH - 1}}$`)

/** The longest label of a spawned or external child. */
export const MAX_LABEL_LENGTH = 256

/** The longest working directory a header records. */
export const MAX_CWD_LENGTH = 4096

/** The longest event type. */
export const MAX_EVENT_TYPE_LENGTH = 256

/** Default limit of one encoded event: 1 MiB of UTF-8 JSON. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024

/** Deeper data is refused rather than risking a stack overflow while encoding or folding. */
export const MAX_JSON_DEPTH = 512

/** The one version of a session header (and of its lifecycle witness). */
export const HEADER_VERSION = 1

/** How a session came to be: created, forked from another, or spawned by a parent. */
export const SESSION_ORIGINS = ['root', 'fork', 'subagent'] as const
/**
 * How a session came to be: `'root'` (createSession), `'fork'` (fork) or `'subagent'` (spawn).
 *
 * @useDeclaredType
 */
export type SessionOrigin = (typeof SESSION_ORIGINS)[number]

/** True for 1-128 characters of `[A-Za-z0-9_-]`. */
export const isSessionId = (v: unknown): v is string => typeof v === 'string' && SESSION_ID_PATTERN.test(v)

/** True for a projection key. */
export const isProjectionKey = (v: unknown): v is string => typeof v === 'string' && PROJECTION_KEY_PATTERN.test(v)

/** True for a string of 1-MAX_LABEL_LENGTH characters. */
export const isLabel = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= MAX_LABEL_LENGTH

/** True for a string of at most MAX_CWD_LENGTH characters (empty included). */
export const isCwd = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_CWD_LENGTH

/** True for a string of 1-MAX_EVENT_TYPE_LENGTH characters. */
export const isEventType = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= MAX_EVENT_TYPE_LENGTH

/** True for milliseconds, a time (an event's `time`, a header's `createdAt`) or a duration: a finite number >= 0. */
export const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0

/**
 * True for the version an event stores (`v`, DESIGN §19): a safe integer >= 2. Version 1 is
 * stored as no `v`, so an event has one encoding and its chain one text.
 */
export const isEventVersion = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 2

/** True for a count or a seq: a safe integer >= 0. */
export const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0

/** The header fields the origin rules read. */
export interface OriginFields {
  origin: SessionOrigin
  parentSession?: unknown
  forkedFrom?: unknown
  seedLength: number
  delegationDepth: number
}

/**
 * Which origin rules a header breaks (empty when none): the origin decides which links a header
 * carries, and anything else is not a header we wrote.
 */
export function headerOriginProblems(h: OriginFields): string[] {
  const problems: string[] = []
  if (h.origin === 'subagent' && h.parentSession === undefined) problems.push('a subagent needs parentSession')
  if (h.origin !== 'subagent' && h.parentSession !== undefined) problems.push('only a subagent has parentSession')
  if (h.origin === 'fork' && h.forkedFrom === undefined) problems.push('a fork needs forkedFrom')
  if (h.origin !== 'fork' && h.forkedFrom !== undefined) problems.push('only a fork has forkedFrom')
  if (h.origin !== 'fork' && h.seedLength !== 0) problems.push('only a fork has seed events')
  if (h.origin === 'root' && h.delegationDepth !== 0) problems.push('a root has delegationDepth 0')
  return problems
}

/** Modes a spawned child runs in (its descriptor's mode). */
export const SPAWN_MODES = ['one-shot', 'continuable'] as const
export type SpawnMode = (typeof SPAWN_MODES)[number]

/** Modes a catalog fact can carry. */
export const CATALOG_MODES = ['one-shot', 'continuable', 'unknown', 'external'] as const
export type CatalogMode = (typeof CATALOG_MODES)[number]

/** Payload versions of a catalog fact that are read. */
export const CATALOG_VERSIONS = [0, 1, 2] as const
export type CatalogVersion = (typeof CATALOG_VERSIONS)[number]

/** The catalog fact version written now. */
export const CATALOG_VERSION = 2 satisfies CatalogVersion

/** The descriptor version, the only one written and read. */
export const DESCRIPTOR_VERSION = 2

/** Modes each catalog payload version may carry: v1 added `unknown`, v2 added `external`. */
export const MODES_BY_VERSION: Readonly<Record<CatalogVersion, readonly CatalogMode[]>> = {
  0: ['one-shot', 'continuable'],
  1: ['one-shot', 'continuable', 'unknown'],
  2: ['one-shot', 'continuable', 'unknown', 'external'],
}

/** Why a child's mode and label do not go together (a continuable child is addressed by its label, so it must have one), or undefined. */
export function childLabelProblem(f: { mode: unknown; label?: unknown }): string | undefined {
  return f.mode === 'continuable' && f.label === undefined ? 'a continuable child needs a label' : undefined
}

/** Why a catalog fact's mode and label break its payload version's rules, or undefined. */
export function catalogFactProblem(f: { v: CatalogVersion; mode: CatalogMode; label?: unknown }): string | undefined {
  if (!MODES_BY_VERSION[f.v].includes(f.mode)) return `mode "${f.mode}" is not in payload version ${f.v}`
  return childLabelProblem(f)
}

/**
 * A PostgreSQL store's schema name, used as it is in SQL (quoted): lower-case letters, digits
 * and _, as PostgreSQL folds unquoted names, at most 51 characters (as published; PostgreSQL
 * allows 63). Checked by openStore, the CLI, the adapter, its locks and its growth channel.
 */
export const PG_SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,50}$/

/** Sessions in one page of `listSessions`, by default and at most. */
export const DEFAULT_LIST_LIMIT = 100
export const MAX_LIST_LIMIT = 10_000

/** The reserved event that sets a session's metadata (its title, its tags): see the `sessionMeta` unit. */
export const META_EVENT = 'session/meta'
/** The longest session title, in UTF-16 units. */
export const MAX_TITLE_LENGTH = 200
/** The most tags a session carries, and the longest tag (a tag has at least one character). */
export const MAX_TAGS = 20
export const MAX_TAG_LENGTH = 64

/** True for a title: a string of at most MAX_TITLE_LENGTH characters (empty included). */
export const isTitle = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_TITLE_LENGTH

/** True for a tag: a string of 1-MAX_TAG_LENGTH characters. */
export const isTag = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= MAX_TAG_LENGTH

/** Why `tags` is not a session's tag list (at most MAX_TAGS tags, each isTag, none twice), or undefined. */
export function tagsProblem(tags: readonly unknown[]): string | undefined {
  if (tags.length > MAX_TAGS) return `at most ${MAX_TAGS} tags, got ${tags.length}`
  if (tags.some((t) => !isTag(t))) return `a tag is a string of 1-${MAX_TAG_LENGTH} characters`
  if (new Set(tags).size !== tags.length) return 'a tag is given twice'
  return undefined
}

/**
 * Why `v` is not the data of a `session/meta` event, or undefined: an object with `title` (a
 * title, or null to clear it) and/or `tags` (replacing the last ones), at least one of them.
 */
export function metaProblem(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.getPrototypeOf(v) !== Object.prototype) return 'must be an object'
  const o = v as Record<string, unknown>
  const keys = Object.keys(o)
  const unknown = keys.find((k) => k !== 'title' && k !== 'tags')
  if (unknown !== undefined) return `has an unknown field "${unknown}"`
  // A field given as undefined is not given (it does not survive JSON either).
  if (o.title === undefined && o.tags === undefined) return 'needs title or tags'
  if (o.title !== undefined && o.title !== null && !isTitle(o.title)) return `title must be null or a string of at most ${MAX_TITLE_LENGTH} characters`
  if (o.tags !== undefined) return Array.isArray(o.tags) ? tagsProblem(o.tags) : 'tags must be an array'
  return undefined
}
