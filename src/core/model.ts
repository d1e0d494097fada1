import type { SessionOrigin } from './limits'

// The id pattern, bounds and origin rules live in limits.ts.
export type { SessionOrigin }

/** Plain JSON: what event data and projection values are made of. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** 1-128 characters of `[A-Za-z0-9_-]`. */
export type SessionId = string

/** What a session is, fixed when it is created: read it as `handle.header` or from `store.listSessions()`. */
export interface SessionHeader {
  /** The header format's version. */
  version: 1
  /** The session's id. */
  id: SessionId
  /** Epoch ms. */
  createdAt: number
  /** The working directory given to `createSession` (forks and subagents keep their origin's). */
  cwd?: string
  /** The spawning parent (subagents only). */
  parentSession?: SessionId
  /** Events copied in by fork; 0 otherwise. */
  seedLength: number
  /** 0 for roots, the parent's + 1 for subagents. */
  delegationDepth: number
  /** How it came to be: `createSession`, `fork` or `spawn`. */
  origin: SessionOrigin
  /** The session it was forked from (forks only). */
  forkedFrom?: SessionId
}

/** One event of a session's log, as read back (`events()`, projections' `apply`). */
export interface SessionEvent<T extends string = string, D = Json> {
  /** Contiguous from 0 in each session: events[i].seq === i. */
  seq: number
  /** The app's type (`turn/start`, `tool/call`…); `subagent/…` types are sessionfold's. */
  type: T
  /** Epoch ms. */
  time: number
  /** Plain JSON, `null` when none was given. */
  data: D
  /**
   * The version of `data`'s shape, for a type defined with versions (`defineEvent`): absent
   * for version 1. Reads hand over the latest version; one above it was written by newer code.
   */
  v?: number
}

/**
 * The lifecycle witness: the header fields that identify one life of a session id.
 * A checkpoint or a child row whose witness differs from the header on disk belongs to
 * an earlier session of the same id (it was deleted and the id re-used).
 */
export interface LifecycleWitness {
  /** As in {@link SessionHeader.version}. */
  version: 1
  /** As in {@link SessionHeader.id}. */
  id: SessionId
  /** As in {@link SessionHeader.createdAt}. */
  createdAt: number
  /** As in {@link SessionHeader.cwd}. */
  cwd?: string
  /** As in {@link SessionHeader.parentSession}. */
  parentSession?: SessionId
  /** As in {@link SessionHeader.seedLength}. */
  seedLength: number
  /** As in {@link SessionHeader.delegationDepth}. */
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
