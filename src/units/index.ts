import type { ProjectionDefinition } from '../projection'
import { subagentCatalogUnit, type CatalogEntry } from './catalog'
import { subagentUnit, type SubagentView } from './subagent'
import { subagentTimingUnit, type TimingView } from './timing'

/** Registered in every engine, before the app's own units. */
export const BUILTIN_PROJECTIONS: readonly ProjectionDefinition[] = [subagentUnit, subagentCatalogUnit, subagentTimingUnit]

declare module '../projection' {
  interface ProjectionMap {
    /** The session's own identity as a subagent (`null` for roots, forks and before a descriptor): a {@link SubagentView}. */
    subagent: SubagentView
    /** The children this session spawned or recorded, in the order of their catalog facts: {@link CatalogEntry} items. */
    subagentCatalog: CatalogEntry[]
    /** How many turns ran and how long the finished ones took: a {@link TimingView}. */
    subagentTiming: TimingView
  }
}

export { subagentCatalogUnit, subagentTimingUnit, subagentUnit }
export type { CatalogEntry, SubagentView, TimingView }
