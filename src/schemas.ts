// zod schemas of the model, for the engine and the adapters (the client needs none: it stays
// free of zod, whose object schemas probe `new Function` and trip a strict CSP). Every bound
// and cross-field rule comes from limits.ts, where the client's hand-written checks find it too.
import { z } from 'zod'
import {
  HEADER_VERSION, MAX_CWD_LENGTH, MAX_EVENT_TYPE_LENGTH, SESSION_ID_PATTERN, SESSION_ORIGINS,
  headerOriginProblems, isCwd, isEventType,
} from './limits'
import type { Json, LifecycleWitness, SessionEvent, SessionHeader } from './model'

/** A limits.ts rule as a zod refinement: each problem it finds becomes a custom issue. */
export const ruleCheck = <T>(rule: (value: T) => string | string[] | undefined) => (value: T, ctx: z.RefinementCtx<T>): void => {
  for (const message of [rule(value) ?? []].flat()) ctx.addIssue({ code: 'custom', message })
}

export const sessionIdSchema = z.string().regex(SESSION_ID_PATTERN)

/** A count or a seq (zod's `int` is a safe integer). */
export const countSchema = z.number().int().nonnegative()

/** Milliseconds, a time or a duration (zod's `number` is finite). */
export const timeSchema = z.number().nonnegative()

/** `cwd` of a header: a string of at most MAX_CWD_LENGTH characters. */
export const cwdSchema = z.string().refine(isCwd, `must be at most ${MAX_CWD_LENGTH} characters`)

/** An event type: a string of 1-MAX_EVENT_TYPE_LENGTH characters. */
export const eventTypeSchema = z.string().refine(isEventType, `must be 1-${MAX_EVENT_TYPE_LENGTH} characters`)

export const sessionHeaderSchema = z
  .strictObject({
    version: z.literal(HEADER_VERSION),
    id: sessionIdSchema,
    createdAt: timeSchema,
    cwd: cwdSchema.optional(),
    parentSession: sessionIdSchema.optional(),
    seedLength: countSchema,
    delegationDepth: countSchema,
    origin: z.enum(SESSION_ORIGINS),
    forkedFrom: sessionIdSchema.optional(),
  })
  .superRefine(ruleCheck(headerOriginProblems)) satisfies z.ZodType<SessionHeader>

export const jsonSchema: z.ZodType<Json> = z.json() as z.ZodType<Json>

export const sessionEventSchema = z.strictObject({
  seq: countSchema,
  type: eventTypeSchema,
  time: timeSchema,
  data: jsonSchema,
}) satisfies z.ZodType<SessionEvent>

// The witness's cwd is compared with the header's, not bounded: a stale witness is told by that.
export const witnessSchema = z.strictObject({
  version: z.literal(HEADER_VERSION),
  id: sessionIdSchema,
  createdAt: timeSchema,
  cwd: z.string().optional(),
  parentSession: sessionIdSchema.optional(),
  seedLength: countSchema,
  delegationDepth: countSchema,
}) satisfies z.ZodType<LifecycleWitness>
