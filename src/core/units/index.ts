import type { ProjectionDefinition } from '../projection'
import { subagentCatalogUnit, type CatalogEntry } from './catalog'
import { sessionMetaUnit, type SessionMetaView } from './meta'
import { subagentUnit, type SubagentView } from './subagent'
import { subagentTimingUnit, type TimingView } from './timing'

/**
 * Views by key: what `get`, `subscribe` and `snapshot()` give for each key. The built-in
 * keys are declared here, on the interface itself, not merged in from another file: the
 * bundled .d.ts and .d.cts then carry them whole, whatever moduleResolution reads them
 * (a `declare module` of one of our own files resolves in some modes and not in others).
 *
 * Apps add their own keys by declaration merging, from any module of theirs (a file that
 * imports or exports something: in a file with neither, `declare module` would declare a new
 * module that hides the package's types):
 *
 * @example
 * export {} // or any import or export: it makes this file a module
 *
 * declare module 'sessionfold' {
 *   interface ProjectionMap { tokenCount: { total: number; turns: number } }
 * }
 */
export interface ProjectionMap {
  /** The session's own identity as a subagent (`null` for roots, forks and before a descriptor): a {@link SubagentView}. */
  subagent: SubagentView
  /** The children this session spawned or recorded, in the order of their catalog facts: {@link CatalogEntry} items. */
  subagentCatalog: CatalogEntry[]
  /** How many turns ran and how long the finished ones took: a {@link TimingView}. */
  subagentTiming: TimingView
  /** The session's title and tags (`createSession`, `spawn`, `setMeta`): a {@link SessionMetaView}. */
  sessionMeta: SessionMetaView
}

type BuiltinKey = 'subagent' | 'subagentCatalog' | 'subagentTiming' | 'sessionMeta'

/** The built-in units by key: tsc checks each one's view type against its ProjectionMap entry. */
// biome-ignore lint/suspicious/noExplicitAny: each unit's state type is its own; the view type is the one checked
const BUILTIN: { readonly [K in BuiltinKey]: ProjectionDefinition<any, ProjectionMap[K]> } = {
  subagent: subagentUnit,
  subagentCatalog: subagentCatalogUnit,
  subagentTiming: subagentTimingUnit,
  sessionMeta: sessionMetaUnit,
}

/** Registered in every engine, before the app's own units. */
export const BUILTIN_PROJECTIONS: readonly ProjectionDefinition[] = Object.values(BUILTIN)

export { sessionMetaUnit, subagentCatalogUnit, subagentTimingUnit, subagentUnit }
export type { CatalogEntry, SessionMetaView, SubagentView, TimingView }
