import type { $ZodType } from 'zod/v4/core'
import { SessionfoldError } from './errors'
import { MAX_EVENT_TYPE_LENGTH, MAX_PROJECTION_KEY_LENGTH, isCount, isEventType, isProjectionKey } from './limits'
import type { EventsOf } from './events'
import type { Json, SessionHeader } from './model'
import { describe, isZodSchema } from './validate'

/**
 * A projection unit: a pure fold of a session's events into a small state, and optionally a
 * view of that state that apps read and subscribe to.
 *
 * - `apply` must be pure and return the SAME state reference for an event it ignores.
 * - `stateVersion` must be bumped whenever the state's meaning changes: checkpoints of other
 *   versions are ignored and the unit refolds.
 * - The state must survive `JSON.stringify` then `stateSchema.parse` (checkpoints store it so).
 * - No `view`: a host-only unit (checkpointed, never pushed).
 *
 * Schemas are any zod 4 schemas: classic (`import { z } from 'zod'`) or zod/mini. The engine
 * parses them with zod's functional safeParse, never by their methods.
 */
// biome-ignore lint/suspicious/noExplicitAny: the defaults make any unit assignable to a plain ProjectionDefinition
export interface ProjectionDefinition<S = any, V = any, T extends string = any> {
  /** The key its view is read by: 1-64 characters of `[A-Za-z0-9_.-]`, starting with a letter. */
  readonly key: string
  /**
   * The event types it folds (default: all). `apply` is then handed only those, its `event`
   * narrowed by `type` ({@link EventMap}); the others pass it by, at no cost.
   */
  readonly types?: readonly T[]
  /** Bump it whenever the state's meaning changes: checkpoints of other versions are ignored. */
  readonly stateVersion: number
  /** Validates a state read back from a checkpoint (one that fails is ignored, and the unit refolds). */
  // biome-ignore lint/suspicious/noExplicitAny: a schema's input type is whatever it accepts
  readonly stateSchema: $ZodType<S, any>
  /**
   * The state before any event. `inheritedEventCount` is the number of events a fork copied
   * in (0 otherwise): events below it are the original session's, not this one's.
   */
  init(header: SessionHeader, inheritedEventCount: number): S
  /**
   * The state after `event`: pure, and the SAME reference for an event it ignores. An event
   * of a type defined with versions (`defineEvent`) comes at its latest version.
   */
  apply(state: S, event: EventsOf<T>): S
  /** What apps read: a value computed from the state, pushed to every handle while it changes. */
  readonly view?: {
    /** Validates each value before it crosses the worker (and again in the client). */
    // biome-ignore lint/suspicious/noExplicitAny: a schema's input type is whatever it accepts
    readonly schema: $ZodType<V, any>
    /** The value of a state: plain JSON, `null` for nothing (never `undefined`). */
    view(state: S): V
  }
}

/** Why a unit stopped folding: its apply, view or schema threw. */
export type ProjectionFault = 'corrupt'

/** Every projection value of a session at one seq: what `projections.snapshot()` returns. */
export interface ProjectionSnapshot<M = Record<string, Json | null>> {
  /** The last seq folded into these values (-1 for an empty log). */
  asOfSeq: number
  /** The value of each key (`null`: none, or the unit faulted). */
  values: { [K in keyof M]: M[K] | null }
  /** The keys whose unit stopped folding, and why. */
  faults: { [K in keyof M]?: ProjectionFault }
}

/**
 * Declares a projection unit; checks its shape so mistakes fail at startup, not mid-fold.
 *
 * @example
 * const tokens = defineProjection({
 *   key: 'tokenCount', stateVersion: 1, stateSchema: z.number(),
 *   init: () => 0,
 *   apply: (n, e) => (e.type === 'llm/usage' ? n + (e.data as { tokens: number }).tokens : n),
 *   view: { schema: z.number(), view: (n) => n },
 * })
 */
// biome-ignore lint/suspicious/noExplicitAny: no `types`: any type, and `apply` takes every event (EventsOf<any> is AnyEvent)
export function defineProjection<S, V = never, const T extends string = any>(def: ProjectionDefinition<S, V, T>): ProjectionDefinition<S, V, T> {
  const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `projection ${describe(def?.key)}: ${why}`)
  if (typeof def !== 'object' || def === null) throw bad('the definition must be an object')
  if (!isProjectionKey(def.key)) throw bad(`key must be 1-${MAX_PROJECTION_KEY_LENGTH} characters of [A-Za-z0-9_.-], starting with a letter`)
  if (!isCount(def.stateVersion)) throw bad('stateVersion must be an integer >= 0')
  if (!isZodSchema(def.stateSchema)) throw bad('stateSchema must be a zod schema')
  if (typeof def.init !== 'function' || typeof def.apply !== 'function') throw bad('init and apply must be functions')
  if (def.view !== undefined && (typeof def.view.view !== 'function' || !isZodSchema(def.view.schema))) {
    throw bad('view must be { schema, view }')
  }
  if (def.types !== undefined && (!Array.isArray(def.types) || def.types.length === 0 || !def.types.every(isEventType))) {
    throw bad(`types must be a list of event types (1-${MAX_EVENT_TYPE_LENGTH} characters each)`)
  }
  return Object.freeze({ ...def, ...(def.types ? { types: Object.freeze([...def.types]) } : {}) }) as ProjectionDefinition<S, V, T>
}

/** Units by key. A key registered twice must keep its stateVersion; the later definition wins. */
export class ProjectionRegistry {
  private readonly units = new Map<string, ProjectionDefinition>()

  constructor(defs: readonly ProjectionDefinition[] = []) {
    for (const def of defs) this.register(def)
  }

  register(def: ProjectionDefinition): void {
    const checked = Object.isFrozen(def) ? def : defineProjection(def)
    const existing = this.units.get(checked.key)
    if (existing && existing.stateVersion !== checked.stateVersion) {
      throw new SessionfoldError(
        'INVALID_ARGUMENT',
        `projection "${checked.key}" is already registered with stateVersion ${existing.stateVersion}, not ${checked.stateVersion}`,
      )
    }
    this.units.set(checked.key, checked)
  }

  get(key: string): ProjectionDefinition | undefined {
    return this.units.get(key)
  }

  get size(): number {
    return this.units.size
  }

  list(): ProjectionDefinition[] {
    return [...this.units.values()]
  }
}
