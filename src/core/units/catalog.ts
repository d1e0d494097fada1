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
  /** The child's session id (for `'external'`: the id given to `recordExternal`). */
  id: sessionIdSchema,
  /** When the child was created (epoch ms). */
  createdAt: timeSchema,
  /** `'one-shot'`, `'continuable'`, `'external'`, or `'unknown'` (a historical fact whose mode was lost). */
  mode: z.enum(CATALOG_MODES),
  /** The child's label, if it has one. */
  label: z.optional(labelSchema),
  /** The seq of the parent's event that recorded it. */
  seq: countSchema,
})
/**
 * One child in a session's `subagentCatalog`: its `id`, `createdAt`, `mode` (`'one-shot'`,
 * `'continuable'`, `'external'` from `recordExternal`, or `'unknown'` for a historical fact
 * whose mode was lost), its `label` if it has one, and `seq`, the parent's event that
 * recorded it.
 *
 * @useDeclaredType
 */
export type CatalogEntry = z.infer<typeof catalogEntrySchema>

const stateSchema = z.strictObject({ inherited: countSchema, entries: chunkedListSchema(catalogEntrySchema) })
export interface CatalogState {
  inherited: number
  entries: ChunkedList<CatalogEntry>
}

export const catalogViewSchema = z.array(catalogEntrySchema)

export const subagentCatalogUnit = defineProjection<CatalogState, CatalogEntry[]>({
  key: 'subagentCatalog',
  types: [CATALOG],
  stateVersion: 1,
  stateSchema: stateSchema as unknown as z.ZodMiniType<CatalogState>,
  init: (_header, inherited) => ({ inherited, entries: ChunkedList.empty() }),
  apply(state, event) {
    // Facts copied into a fork are the original's children, not the fork's.
    if (event.type !== CATALOG || event.seq < state.inherited) return state
    const parsed = safeParse(catalogFactSchema, event.data)
    if (!parsed.success) {
      // Never skip a fact: a shortened list would be read as the truth.
      throw new SessionfoldError('CORRUPT_LOG', `catalog fact at seq ${event.seq} is invalid: ${parsed.error.issues.map((i) => i.message).join('; ')}`, {
        seq: event.seq,
      })
    }
    const { childId, childCreatedAt, mode, label } = parsed.data
    const entry: CatalogEntry =
      label === undefined
        ? { id: childId, createdAt: childCreatedAt, mode, seq: event.seq }
        : { id: childId, createdAt: childCreatedAt, mode, label, seq: event.seq }
    return { inherited: state.inherited, entries: state.entries.append(entry) }
  },
  view: { schema: catalogViewSchema, view: (s) => s.entries.toArray() },
})
