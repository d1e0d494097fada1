// `sessionMeta`: a session's title and tags, last-wins per field over its `session/meta` events.
import { z } from 'zod/mini'
import { SessionfoldError } from '../errors'
import { defineProjection } from '../projection'
import { safeParse } from '../schemas'
import { META, metaSchema, tagsSchema, titleSchema } from './payloads'

export const metaViewSchema = z.strictObject({
  /** The last title set (`createSession`, `spawn` or `setMeta`); `null` when none was, or it was cleared. */
  title: z.nullable(titleSchema),
  /** The last tags set; `[]` when none were. */
  tags: tagsSchema,
})
/**
 * The `sessionMeta` projection: the session's `title` and `tags`, each as its latest
 * `session/meta` event set it. A fork starts with its source's (the copied events are folded),
 * a subagent with what `spawn` gave it.
 *
 * @useDeclaredType
 */
export type SessionMetaView = z.infer<typeof metaViewSchema>

export const sessionMetaUnit = defineProjection<SessionMetaView, SessionMetaView>({
  key: 'sessionMeta',
  types: [META],
  stateVersion: 1,
  stateSchema: metaViewSchema,
  init: () => ({ title: null, tags: [] }),
  apply(state, event) {
    if (event.type !== META) return state
    const parsed = safeParse(metaSchema, event.data)
    if (!parsed.success) {
      // Appends are checked, so only a damaged or foreign log holds one: never guessed around.
      throw new SessionfoldError('CORRUPT_LOG', `session/meta at seq ${event.seq} is invalid: ${parsed.error.issues.map((i) => i.message).join('; ')}`, {
        seq: event.seq,
      })
    }
    const { title, tags } = parsed.data
    return { title: title === undefined ? state.title : title, tags: tags ?? state.tags }
  },
  view: { schema: metaViewSchema, view: (s) => s },
})
