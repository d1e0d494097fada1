import type { ProjectionDefinition } from '../projection'
import { subagentCatalogUnit, type CatalogEntry } from './catalog'
import { subagentUnit, type SubagentView } from './subagent'
import { subagentTimingUnit, type TimingView } from './timing'

/** Registered in every engine, before the app's own units. */
export const BUILTIN_PROJECTIONS: readonly ProjectionDefinition[] = [subagentUnit, subagentCatalogUnit, subagentTimingUnit]

declare module '../projection' {
  interface ProjectionMap {
    subagent: SubagentView
    subagentCatalog: CatalogEntry[]
    subagentTiming: TimingView
  }
}

export { subagentCatalogUnit, subagentTimingUnit, subagentUnit }
export type { CatalogEntry, SubagentView, TimingView }
