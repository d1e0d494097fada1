// What a client sends with its calls to a host (EngineApi), as zod schemas: the one source of
// each input's shape. src/core/protocol.ts infers the input types from them, and the engine
// parses every input with them (it trusts nothing that crossed a worker). The client, which
// stays free of zod, checks only the keys it passes on (assertOptions); the values are judged
// here. test/contract/rules.test.ts holds the engine's verdicts to these schemas.
import { z } from 'zod/mini'
import { SessionfoldError, where } from './errors'
import { MAX_LIST_LIMIT, META_EVENT, SPAWN_MODES, childLabelProblem } from './limits'
import type { SessionId } from './model'
import { countSchema, cwdSchema, ruleCheck, safeParse, sessionIdSchema, type AnySchema } from './schemas'
import { labelSchema, metaSchema, tagsSchema, titleSchema } from './units/payloads'
import { describe, isPlainObject } from './validate'

/** `store.createSession(options)`. */
export const createSessionInputSchema = z.strictObject({
  id: z.optional(sessionIdSchema),
  cwd: z.optional(cwdSchema),
  title: z.optional(titleSchema),
  tags: z.optional(tagsSchema),
})

/** `session.spawn(options)`, its events sent beside them as bodies. */
export const spawnInputSchema = z
  .strictObject({
    mode: z.enum(SPAWN_MODES),
    label: z.optional(labelSchema),
    id: z.optional(sessionIdSchema),
    title: z.optional(titleSchema),
    tags: z.optional(tagsSchema),
  })
  .check(ruleCheck(childLabelProblem))

/** `session.fork(options)`: `at` is bounded by the log's length where the engine knows it. */
export const forkInputSchema = z.strictObject({ at: z.optional(countSchema), id: z.optional(sessionIdSchema) })

/** `session.append(events, options)`. */
export const appendInputSchema = z.strictObject({ expectedSeq: z.optional(countSchema) })

/** `session.recordExternal(options)`. */
export const recordExternalInputSchema = z.strictObject({ childId: sessionIdSchema, label: z.optional(labelSchema) })

/** `store.listSessions(options)`. */
export const listSessionsInputSchema = z.strictObject({
  after: z.optional(sessionIdSchema),
  limit: z.optional(z.int().check(z.gte(1), z.lte(MAX_LIST_LIMIT))),
})

/** `store.deleteSession(id, options)`. */
export const deleteSessionInputSchema = z.strictObject({ tree: z.optional(z.boolean()) })

/** `store.observe(id, { at })`: `at` is bounded by the log's length where the engine knows it. */
export const observeAtInputSchema = z.strictObject({ at: countSchema })

/**
 * `value` as `schema` takes it, or INVALID_ARGUMENT naming `what` (e.g. 'spawn options'), the
 * session involved, the field and what is wrong with it. Nothing has been written when it throws.
 */
export function parseInput<O>(schema: AnySchema<O>, value: unknown, what: string, sessionId?: SessionId): O {
  const of = sessionId === undefined ? what : `${what} for ${where(sessionId)}`
  const details = sessionId === undefined ? undefined : { sessionId }
  if (!isPlainObject(value)) throw new SessionfoldError('INVALID_ARGUMENT', `${of} must be an object, got ${describe(value)}`, details)
  const result = safeParse(schema, value)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  if (issue.code === 'unrecognized_keys') {
    throw new SessionfoldError('INVALID_ARGUMENT', `${of} have an unknown field ${describe(issue.keys[0])}`, details)
  }
  const field = issue.path.join('.')
  const given = issue.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | undefined)?.[k], value)
  const subject = field === '' ? of : `${field} of ${of}`
  throw new SessionfoldError('INVALID_ARGUMENT', `${subject}: ${issue.message}${field === '' ? '' : `, got ${describe(given)}`}`, details)
}

/**
 * An app's event of a reserved type whose data the built-in units would refuse (a `session/meta`
 * that sets no title or tags, or a title too long): INVALID_ARGUMENT, before anything is written.
 */
export function checkReservedData(event: { type: string; seq: number; data: unknown }, sessionId: SessionId): void {
  if (event.type !== META_EVENT) return
  const result = safeParse(metaSchema, event.data)
  if (!result.success) {
    const issue = result.error.issues[0]!
    const field = issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''
    throw new SessionfoldError('INVALID_ARGUMENT', `${META_EVENT} data for ${where(sessionId, event.seq)}: ${field}${issue.message}`, {
      sessionId,
      seq: event.seq,
    })
  }
}
