// What an engine is built from: its storage, units, checkpoint policy, limits, locks, and the
// hooks through which it tells others (other engines on the store, a host) what happened.
import type { StorageAdapter } from '../storage/types'
import { SessionfoldError } from '../core/errors'
import { describe } from '../core/validate'
import type { SessionId } from '../core/model'
import type { ProjectionDefinition } from '../core/projection'
import type { EventDefinition } from '../core/events'
import type { WriterLocks } from '../storage/locks'
import type { StreamsHost } from './streams'
import type { StreamsRunner } from './streams-lazy'

export interface EngineOptions {
  storage: StorageAdapter
  /** The app's units, registered after the built-in ones. */
  projections?: readonly ProjectionDefinition[]
  /** The app's event definitions (`defineEvent`): appends checked against them, reads upcast by them. */
  events?: readonly EventDefinition[]
  /** Checkpoint a live session after this many events (default 256) or this long after an unsaved event (default 2000 ms). */
  checkpoint?: { everyEvents?: number; everyMs?: number }
  /** Largest encoded event (default 1 MiB). */
  maxEventBytes?: number
  /** Who holds sessions open for writing (default: this engine only). */
  locks?: WriterLocks
  /** Told of failures that must not fail a call, such as a checkpoint that could not be written. */
  onError?: (err: SessionfoldError) => void
  /** Told after each durable append here, so other engines on the same store can follow it. */
  onGrow?: (sessionId: SessionId, length: number) => void
  /** Told after a session is deleted here, so other engines following it hear it (tabs: see GrowthChannel.announce). */
  onDelete?: (sessionId: SessionId) => void
  /**
   * Starts noticing appends that other engines make to a session followed here, where they
   * are not announced (processes sharing a folder); returns its stop. Growth found calls follow().
   */
  watchSession?: (sessionId: SessionId) => () => void
  /** The same for the whole store, for the session list: calls `onChange` when another engine may have written anything; returns its stop. */
  watchFeed?: (onChange: () => void) => () => void
  now?: () => number
  /** Durable Streams (streams-lazy.ts): given where an engine serves them (Node's); elsewhere a stream request is STORAGE_UNAVAILABLE. */
  streams?: (host: StreamsHost) => StreamsRunner
}

/** `n` when it is a number > 0; INVALID_ARGUMENT, naming the option, otherwise. */
export function positive(n: number, name: string): number {
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) {
    throw new SessionfoldError('INVALID_ARGUMENT', `${name} must be a number > 0, got ${describe(n)}`)
  }
  return n
}
