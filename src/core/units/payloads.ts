// Payloads of the reserved event types (docs/CONTRACT.md §2); their rules are in limits.ts.
import { z } from 'zod/mini'
import {
  CATALOG_MODES,
  CATALOG_VERSIONS,
  DESCRIPTOR_VERSION,
  MAX_LABEL_LENGTH,
  MAX_TAG_LENGTH,
  MAX_TITLE_LENGTH,
  SPAWN_MODES,
  catalogFactProblem,
  childLabelProblem,
  isLabel,
  isTag,
  isTitle,
  tagsProblem,
} from '../limits'
import { ruleCheck, sessionIdSchema, timeSchema } from '../schemas'

export const DESCRIPTOR = 'subagent/descriptor'
export const CATALOG = 'subagent/catalog'
export const TURN_START = 'turn/start'
export const TURN_END = 'turn/end'

/** A child's label: a string of 1-MAX_LABEL_LENGTH characters. */
export const labelSchema = z.string().check(z.refine(isLabel, `must be 1-${MAX_LABEL_LENGTH} characters`))

/** In the child: who it is. */
export const descriptorSchema = z
  .strictObject({ v: z.literal(DESCRIPTOR_VERSION), mode: z.enum(SPAWN_MODES), label: z.optional(labelSchema) })
  .check(ruleCheck(childLabelProblem))
export type SubagentDescriptor = z.infer<typeof descriptorSchema>

/** In the parent: a child it spawned (or an external execution it recorded). */
export const catalogFactSchema = z
  .strictObject({
    v: z.literal(CATALOG_VERSIONS),
    childId: sessionIdSchema,
    childCreatedAt: timeSchema,
    mode: z.enum(CATALOG_MODES),
    label: z.optional(labelSchema),
  })
  .check(ruleCheck(catalogFactProblem))
export type CatalogFact = z.infer<typeof catalogFactSchema>

export { META_EVENT as META } from '../limits'

/** A tag list: at most MAX_TAGS tags of 1-MAX_TAG_LENGTH characters, none twice. */
export const tagsSchema = z.array(z.string().check(z.refine(isTag, `must be 1-${MAX_TAG_LENGTH} characters`))).check(ruleCheck(tagsProblem))

/** A session's title: a string of at most MAX_TITLE_LENGTH characters. */
export const titleSchema = z.string().check(z.refine(isTitle, `must be at most ${MAX_TITLE_LENGTH} characters`))

/** In a session: its title and/or tags, each replacing the last one given (a null title clears it). */
export const metaSchema = z
  .strictObject({
    title: z.optional(z.nullable(titleSchema)),
    tags: z.optional(tagsSchema),
  })
  .check(ruleCheck((m: { title?: unknown; tags?: unknown }) => (m.title === undefined && m.tags === undefined ? 'needs title or tags' : undefined)))
export type SessionMetaData = z.infer<typeof metaSchema>
