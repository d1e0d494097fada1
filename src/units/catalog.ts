// `subagentCatalog`: the children a session spawned, in the order their facts were appended.
import { z } from 'zod/mini'
import { ChunkedList } from '../chunked-list'
import { chunkedListSchema } from '../chunked-list-schema'
import { SessionfoldError } from '../errors'
import { CATALOG_MODES } from '../limits'
import { countSchema, safeParse, sessionIdSchema, timeSchema } from '../schemas'
import { defineProjection } from '../projection'
import { CATALOG, catalogFactSchema, labelSchema } from './payloads'

export const catalogEntrySchema = z.strictObject({
  id: sessionIdSchema,
  createdAt: timeSchema,
  mode: z.enum(CATALOG_MODES),
  label: z.optional(labelSchema),
  seq: countSchema,
})
export type CatalogEntry = z.infer<typeof catalogEntrySchema>

const stateSchema = z.strictObject({ inherited: countSchema, entries: chunkedListSchema(catalogEntrySchema) })
export interface CatalogState {
  inherited: number
  entries: ChunkedList<CatalogEntry>
}

export const catalogViewSchema = z.array(catalogEntrySchema)

export const subagentCatalogUnit = defineProjection<CatalogState, CatalogEntry[]>({
  key: 'subagentCatalog',
  stateVersion: 1,
  stateSchema: stateSchema as unknown as z.ZodMiniType<CatalogState>,
  init: (_header, inherited) => ({ inherited, entries: ChunkedList.empty() }),
  apply(state, event) {
    // Facts copied into a fork are the original's children, not the fork's.
    if (event.type !== CATALOG || event.seq < state.inherited) return state
    const parsed = safeParse(catalogFactSchema, event.data)
    if (!parsed.success) {
      // Never skip a fact: a shortened list would be read as the truth.
      throw new SessionfoldError('CORRUPT_LOG', `catalog fact at seq ${event.seq} is invalid: ${parsed.error.issues.map((i) => i.message).join('; ')}`, { seq: event.seq })
    }
    const { childId, childCreatedAt, mode, label } = parsed.data
    const entry: CatalogEntry = label === undefined
      ? { id: childId, createdAt: childCreatedAt, mode, seq: event.seq }
      : { id: childId, createdAt: childCreatedAt, mode, label, seq: event.seq }
    return { inherited: state.inherited, entries: state.entries.append(entry) }
  },
  view: { schema: catalogViewSchema, view: (s) => s.entries.toArray() },
})
