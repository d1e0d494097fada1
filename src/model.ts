import type { SessionOrigin } from './limits'

// The id pattern, bounds and origin rules live in limits.ts.
export type { SessionOrigin }

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

export interface SessionEvent<T extends string = string, D = Json> {
  /** Contiguous from 0 in each session: events[i].seq === i. */
  seq: number
  type: T
  /** Epoch ms. */
  time: number
  data: D
}

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
