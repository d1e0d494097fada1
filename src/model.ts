import { z } from 'zod'

/** Plain JSON: what event data and projection values are made of. */
export type Json =
  | null
  | boolean
  | number
  | string
  | Json[]
  | { [key: string]: Json }

/** 1-128 characters of `[A-Za-z0-9_-]`. */
export type SessionId = string

export const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/

export const sessionIdSchema = z.string().regex(SESSION_ID_PATTERN)

export type SessionOrigin = 'root' | 'fork' | 'subagent'

export interface SessionHeader {
  version: 1
  id: SessionId
  /** Epoch ms. */
  createdAt: number
  cwd?: string
  /** The spawning parent (subagents only). */
  parentSession?: SessionId
  /** Events copied in by fork; 0 otherwise. */
  seedLength: number
  /** 0 for roots, the parent's + 1 for subagents. */
  delegationDepth: number
  origin: SessionOrigin
  forkedFrom?: SessionId
}

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

export interface SessionEvent<T extends string = string, D = Json> {
  /** Contiguous from 0 in each session: events[i].seq === i. */
  seq: number
  type: T
  /** Epoch ms. */
  time: number
  data: D
}

export const jsonSchema: z.ZodType<Json> = z.json() as z.ZodType<Json>

export const sessionEventSchema = z.strictObject({
  seq: count,
  type: z.string().min(1).max(256),
  time: z.number().finite().nonnegative(),
  data: jsonSchema,
}) satisfies z.ZodType<SessionEvent>

/**
 * The lifecycle witness: the header fields that identify one life of a session id.
 * A checkpoint or a child row whose witness differs from the header on disk belongs to
 * an earlier session of the same id (it was deleted and the id re-used).
 */
export interface LifecycleWitness {
  version: 1
  id: SessionId
  createdAt: number
  cwd?: string
  parentSession?: SessionId
  seedLength: number
  delegationDepth: number
}

export const witnessSchema = z.strictObject({
  version: z.literal(1),
  id: sessionIdSchema,
  createdAt: z.number().finite().nonnegative(),
  cwd: z.string().optional(),
  parentSession: sessionIdSchema.optional(),
  seedLength: count,
  delegationDepth: count,
}) satisfies z.ZodType<LifecycleWitness>

export function witnessOf(header: SessionHeader): LifecycleWitness {
  const w: LifecycleWitness = {
    version: header.version,
    id: header.id,
    createdAt: header.createdAt,
    seedLength: header.seedLength,
    delegationDepth: header.delegationDepth,
  }
  if (header.cwd !== undefined) w.cwd = header.cwd
  if (header.parentSession !== undefined) w.parentSession = header.parentSession
  return w
}

/** True when `witness` names the same life of the session as `header`. */
export function sameWitness(witness: LifecycleWitness, header: SessionHeader): boolean {
  return (
    witness.version === header.version &&
    witness.id === header.id &&
    witness.createdAt === header.createdAt &&
    witness.cwd === header.cwd &&
    witness.parentSession === header.parentSession &&
    witness.seedLength === header.seedLength &&
    witness.delegationDepth === header.delegationDepth
  )
}
