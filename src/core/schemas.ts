// zod schemas of the model, for the engine and the adapters (the client needs none: it stays
// free of zod, whose object schemas probe `new Function` and trip a strict CSP). Every bound
// and cross-field rule comes from limits.ts, where the client's hand-written checks find it too.
// Built with zod/mini, zod's functional API: a bundler keeps only the checks used, where
// classic schemas pin every method and zod's JSON Schema converters into the browser worker.
import { z } from 'zod/mini'
import {
  HEADER_VERSION,
  MAX_CWD_LENGTH,
  MAX_EVENT_TYPE_LENGTH,
  SESSION_ID_PATTERN,
  SESSION_ORIGINS,
  headerOriginProblems,
  isCwd,
  isEventType,
  isEventVersion,
} from './limits'
import type { Json, LifecycleWitness, SessionEvent, SessionHeader } from './model'

/** Any zod 4 schema, classic (`zod`) or mini (`zod/mini`): both build on zod's core type. */
// biome-ignore lint/suspicious/noExplicitAny: a schema's input type is whatever it accepts
export type AnySchema<O = unknown> = z.core.$ZodType<O, any>

/**
 * `schema` parsed with zod's functional safeParse, which takes classic and mini schemas alike.
 * zod/mini sets no locale (classic does, when its first schema is built): issue messages are
 * English unless the app chose a locale or error map of its own, as with classic schemas.
 */
export function safeParse<O>(schema: AnySchema<O>, value: unknown): z.util.SafeParseResult<O> {
  if (!z.core.globalConfig.localeError) z.config(z.locales.en())
  return z.safeParse(schema, value)
}

/** A limits.ts rule as a zod check: each problem it finds becomes a custom issue. */
export const ruleCheck = <T>(rule: (value: T) => string | string[] | undefined) =>
  z.superRefine<T>((value, ctx) => {
    for (const message of [rule(value) ?? []].flat()) ctx.addIssue({ code: 'custom', message })
  })

export const sessionIdSchema = z.string().check(z.regex(SESSION_ID_PATTERN))

/** A count or a seq (zod's `int` is a safe integer). */
export const countSchema = z.int().check(z.nonnegative())

/** Milliseconds, a time or a duration (zod's `number` is finite). */
export const timeSchema = z.number().check(z.nonnegative())

/** `cwd` of a header: a string of at most MAX_CWD_LENGTH characters. */
export const cwdSchema = z.string().check(z.refine(isCwd, `must be at most ${MAX_CWD_LENGTH} characters`))

/** An event type: a string of 1-MAX_EVENT_TYPE_LENGTH characters. */
export const eventTypeSchema = z.string().check(z.refine(isEventType, `must be 1-${MAX_EVENT_TYPE_LENGTH} characters`))

export const sessionHeaderSchema = z
  .strictObject({
    version: z.literal(HEADER_VERSION),
    id: sessionIdSchema,
    createdAt: timeSchema,
    cwd: z.optional(cwdSchema),
    parentSession: z.optional(sessionIdSchema),
    seedLength: countSchema,
    delegationDepth: countSchema,
    origin: z.enum(SESSION_ORIGINS),
    forkedFrom: z.optional(sessionIdSchema),
  })
  .check(ruleCheck(headerOriginProblems)) satisfies AnySchema<SessionHeader>

/**
 * A header as an adapter stores it: a session header, or one sealed by the record codec
 * (src/storage/codec), whose fields but these are in `sealed`.
 */
export const storedHeaderSchema = z.union([
  sessionHeaderSchema,
  z.strictObject({
    version: z.literal(HEADER_VERSION),
    id: sessionIdSchema,
    createdAt: timeSchema,
    seedLength: countSchema,
    delegationDepth: z.literal(0),
    origin: z.literal('root'),
    sealed: z.string().check(z.maxLength(1 << 20)),
  }),
])

export const jsonSchema = z.json() as unknown as z.ZodMiniType<Json>

export const sessionEventSchema = z.strictObject({
  seq: countSchema,
  type: eventTypeSchema,
  time: timeSchema,
  v: z.optional(z.number().check(z.refine(isEventVersion, 'must be an integer >= 2'))),
  data: jsonSchema,
}) satisfies AnySchema<SessionEvent>

// The witness's cwd is compared with the header's, not bounded: a stale witness is told by that.
export const witnessSchema = z.strictObject({
  version: z.literal(HEADER_VERSION),
  id: sessionIdSchema,
  createdAt: timeSchema,
  cwd: z.optional(z.string()),
  parentSession: z.optional(sessionIdSchema),
  seedLength: countSchema,
  delegationDepth: countSchema,
}) satisfies AnySchema<LifecycleWitness>
