// zod schemas of the model, for the engine and the adapters (the client needs none: it stays
// free of zod, whose object schemas probe `new Function` and trip a strict CSP).
import { z } from 'zod'
import { SESSION_ID_PATTERN, type Json, type LifecycleWitness, type SessionEvent, type SessionHeader } from './model'

export const sessionIdSchema = z.string().regex(SESSION_ID_PATTERN)

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)

export const sessionHeaderSchema = z
  .strictObject({
    version: z.literal(1),
    id: sessionIdSchema,
    createdAt: z.number().finite().nonnegative(),
    cwd: z.string().max(4096).optional(),
    parentSession: sessionIdSchema.optional(),
    seedLength: count,
    delegationDepth: count,
    origin: z.enum(['root', 'fork', 'subagent']),
    forkedFrom: sessionIdSchema.optional(),
  })
  .superRefine((h, ctx) => {
    // The origin decides which links a header carries; anything else is not a header we wrote.
    const bad = (message: string) => ctx.addIssue({ code: 'custom', message })
    if (h.origin === 'subagent' && h.parentSession === undefined) bad('a subagent needs parentSession')
    if (h.origin !== 'subagent' && h.parentSession !== undefined) bad('only a subagent has parentSession')
    if (h.origin === 'fork' && h.forkedFrom === undefined) bad('a fork needs forkedFrom')
    if (h.origin !== 'fork' && h.forkedFrom !== undefined) bad('only a fork has forkedFrom')
    if (h.origin !== 'fork' && h.seedLength !== 0) bad('only a fork has seed events')
    if (h.origin === 'root' && h.delegationDepth !== 0) bad('a root has delegationDepth 0')
  }) satisfies z.ZodType<SessionHeader>

export const jsonSchema: z.ZodType<Json> = z.json() as z.ZodType<Json>

export const sessionEventSchema = z.strictObject({
  seq: count,
  type: z.string().min(1).max(256),
  time: z.number().finite().nonnegative(),
  data: jsonSchema,
}) satisfies z.ZodType<SessionEvent>

export const witnessSchema = z.strictObject({
  version: z.literal(1),
  id: sessionIdSchema,
  createdAt: z.number().finite().nonnegative(),
  cwd: z.string().optional(),
  parentSession: sessionIdSchema.optional(),
  seedLength: count,
  delegationDepth: count,
}) satisfies z.ZodType<LifecycleWitness>

