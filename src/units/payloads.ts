// Payloads of the reserved event types (DESIGN.md section 2).
import { z } from 'zod'
import { sessionIdSchema } from '../schemas'

export const DESCRIPTOR = 'subagent/descriptor'
export const CATALOG = 'subagent/catalog'
export const TURN_START = 'turn/start'
export const TURN_END = 'turn/end'

export const labelSchema = z.string().min(1).max(256)

/** In the child: who it is. */
export const descriptorSchema = z.discriminatedUnion('mode', [
  z.strictObject({ v: z.literal(2), mode: z.literal('one-shot'), label: labelSchema.optional() }),
  z.strictObject({ v: z.literal(2), mode: z.literal('continuable'), label: labelSchema }),
])
export type SubagentDescriptor = z.infer<typeof descriptorSchema>

export type CatalogMode = 'one-shot' | 'continuable' | 'unknown' | 'external'

/** Modes each payload version may carry: v1 added `unknown`, v2 added `external`. */
const MODES_BY_VERSION: Record<0 | 1 | 2, readonly CatalogMode[]> = {
  0: ['one-shot', 'continuable'],
  1: ['one-shot', 'continuable', 'unknown'],
  2: ['one-shot', 'continuable', 'unknown', 'external'],
}

/** In the parent: a child it spawned (or an external execution it recorded). */
export const catalogFactSchema = z
  .strictObject({
    v: z.union([z.literal(0), z.literal(1), z.literal(2)]),
    childId: sessionIdSchema,
    childCreatedAt: z.number().finite().nonnegative(),
    mode: z.enum(['one-shot', 'continuable', 'unknown', 'external']),
    label: labelSchema.optional(),
  })
  .superRefine((f, ctx) => {
    if (!MODES_BY_VERSION[f.v].includes(f.mode)) ctx.addIssue({ code: 'custom', message: `mode "${f.mode}" is not in payload version ${f.v}` })
    if (f.mode === 'continuable' && f.label === undefined) ctx.addIssue({ code: 'custom', message: 'a continuable child needs a label' })
  })
export type CatalogFact = z.infer<typeof catalogFactSchema>
