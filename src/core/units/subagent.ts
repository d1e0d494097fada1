// `subagent`: the session's own identity, last-wins over its own descriptors.
import { z } from 'zod/mini'
import { SPAWN_MODES } from '../limits'
import { defineProjection } from '../projection'
import { countSchema, safeParse } from '../schemas'
import { DESCRIPTOR, descriptorSchema, labelSchema } from './payloads'

export const subagentViewSchema = z.nullable(
  z.strictObject({
    /** As spawned: `'one-shot'` or `'continuable'`. */
    mode: z.enum(SPAWN_MODES),
    /** The label given to `spawn`, if any. */
    label: z.optional(labelSchema),
    /** The seq of the descriptor event. */
    seq: countSchema,
  }),
)
/**
 * The `subagent` projection: the session's own `mode` and `label` from its latest own
 * `subagent/descriptor`, with that event's `seq`; `null` when it has none (roots, forks) or
 * its latest is corrupt.
 *
 * @useDeclaredType
 */
export type SubagentView = z.infer<typeof subagentViewSchema>

const stateSchema = z.strictObject({ inherited: countSchema, identity: subagentViewSchema })
type State = z.infer<typeof stateSchema>

export const subagentUnit = defineProjection<State, SubagentView>({
  key: 'subagent',
  types: [DESCRIPTOR],
  stateVersion: 1,
  stateSchema,
  init: (_header, inherited) => ({ inherited, identity: null }),
  apply(state, event) {
    // A fork's copied prefix is not its own: it inherits no identity.
    if (event.type !== DESCRIPTOR || event.seq < state.inherited) return state
    const parsed = safeParse(descriptorSchema, event.data)
    if (!parsed.success) return state.identity === null ? state : { inherited: state.inherited, identity: null }
    const { mode, label } = parsed.data
    return { inherited: state.inherited, identity: label === undefined ? { mode, seq: event.seq } : { mode, label, seq: event.seq } }
  },
  view: { schema: subagentViewSchema, view: (s) => s.identity },
})
