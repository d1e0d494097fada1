// The engine's event definitions (DESIGN §19): the reserved ones and the app's. An append is
// checked here once, against the latest version, and stamped with that version's number; a
// read is handed each event upcast to the latest version. Stored bytes are never rewritten.
import { SessionfoldError, thrownText, where } from '../core/errors'
import { checkedDefinitions, defineEvent, versionOf, type EventDefinition, type EventVersion } from '../core/events'
import type { SessionEvent, SessionId } from '../core/model'
import type { ProjectionDefinition } from '../core/projection'
import { z } from 'zod/mini'
import { safeParse, type AnySchema } from '../core/schemas'
import { CATALOG, catalogFactSchema, DESCRIPTOR, descriptorSchema, META, metaSchema, TURN_END, TURN_START } from '../core/units/payloads'
import { encodeEvent, nonJsonProblem, type EncodedEvent } from '../core/validate'

/** sessionfold's own events, described as an app describes its own. */
export const RESERVED_EVENTS: readonly EventDefinition[] = [
  defineEvent({ type: DESCRIPTOR, schema: descriptorSchema }),
  defineEvent({ type: CATALOG, schema: catalogFactSchema }),
  defineEvent({ type: META, schema: metaSchema }),
  // Free-form data: any JSON, which an event's data is by the time it is checked (parsed from its text).
  defineEvent({ type: TURN_START, schema: z.unknown() }),
  defineEvent({ type: TURN_END, schema: z.unknown() }),
]

export class EventRegistry {
  readonly #defs = new Map<string, EventDefinition>()
  /** Whether any definition has more than one version: reads then look at each event's type. */
  readonly versioned: boolean
  // The last event upcast, and what it became: the units of a session fold one event in turn.
  #lastIn: SessionEvent | undefined
  #lastOut: SessionEvent | undefined

  constructor(app: readonly EventDefinition[] = []) {
    for (const def of RESERVED_EVENTS) this.#defs.set(def.type, def)
    for (const def of checkedDefinitions(app, 'the engine')) this.#defs.set(def.type, def)
    this.versioned = [...this.#defs.values()].some((d) => d.latest > 1)
  }

  /**
   * An append's event checked against its type's latest version: INVALID_ARGUMENT naming the
   * session, seq and field when its data fails; stamped with that version when it is above 1.
   */
  check = (encoded: EncodedEvent, sessionId: SessionId): EncodedEvent => {
    const { event } = encoded
    // An append's version is its definition's latest, never the sender's (a body with a `v` is not a client's).
    if (event.v !== undefined) {
      throw new SessionfoldError('INVALID_ARGUMENT', `event for ${where(sessionId, event.seq)} gives a version: an append is stored at its definition's`, {
        sessionId,
        seq: event.seq,
      })
    }
    const def = this.#defs.get(event.type)
    if (!def) return encoded
    let result: ReturnType<typeof safeParse>
    try {
      result = safeParse(latestSchema(def), event.data)
    } catch (err) {
      // A schema of the app's that throws (a refine) or is async: the event cannot be checked, so it is refused.
      throw new SessionfoldError('INVALID_ARGUMENT', `${event.type} data for ${where(sessionId, event.seq)} could not be checked: ${thrownText(err)}`, {
        sessionId,
        seq: event.seq,
      })
    }
    if (!result.success) {
      const issue = result.error.issues[0]!
      const field = issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''
      throw new SessionfoldError('INVALID_ARGUMENT', `${event.type} data for ${where(sessionId, event.seq)}: ${field}${issue.message}`, {
        sessionId,
        seq: event.seq,
      })
    }
    return def.latest === 1 ? encoded : encodeEvent({ ...event, v: def.latest }, sessionId, Number.MAX_SAFE_INTEGER)
  }

  /**
   * `event` at its type's latest version: the same object when it is there already (or its
   * type has no definition). Throws when it cannot be: a version this code does not know (a
   * newer app wrote it), or an `up` that threw.
   */
  upcast = (event: SessionEvent): SessionEvent => {
    const def = this.#defs.get(event.type)
    const from = versionOf(event)
    if (!def || from === def.latest) return event
    if (event === this.#lastIn) return this.#lastOut!
    if (from > def.latest) {
      throw new Error(`event ${event.type} at seq ${event.seq} is of version ${from}; this code knows versions 1-${def.latest} (newer code wrote it)`)
    }
    let data: unknown = event.data
    for (let v = from; v < def.latest; v++) {
      try {
        data = (def.versions[v] as EventVersion).up(data)
      } catch (err) {
        throw new Error(`event ${event.type} at seq ${event.seq}: version ${v + 1}'s up failed: ${thrownText(err)}`)
      }
      // What it gave must be an event's data (plain JSON: no function, promise or undefined field): else the read falls back to the event as stored.
      const problem = nonJsonProblem(data)
      if (problem !== undefined) {
        if (typeof (data as { then?: unknown } | null)?.then === 'function') Promise.resolve(data as PromiseLike<unknown>).then(undefined, () => {})
        throw new Error(`event ${event.type} at seq ${event.seq}: version ${v + 1}'s up gave what is not plain JSON: ${problem}`)
      }
    }
    const out: SessionEvent = { seq: event.seq, type: event.type, time: event.time, data: data as SessionEvent['data'] }
    if (def.latest > 1) out.v = def.latest
    this.#lastIn = event
    this.#lastOut = out
    return out
  }

  /** `event` as a read hands it over: upcast, or as stored (its `v` says which) when it cannot be. */
  read = (event: SessionEvent): SessionEvent => {
    try {
      return this.upcast(event)
    } catch {
      return event
    }
  }

  /**
   * `unit` folding through this registry: handed only the types it names (`types`), each event
   * upcast first; an event it cannot be handed at its latest version faults it.
   */
  folding<S, V>(unit: ProjectionDefinition<S, V>): ProjectionDefinition<S, V> {
    const types = unit.types && new Set<string>(unit.types)
    if (!types && !this.versioned) return unit
    const apply = unit.apply
    return Object.freeze({ ...unit, apply: (state: S, event: SessionEvent) => (types && !types.has(event.type) ? state : apply(state, this.upcast(event))) })
  }
}

const latestSchema = (def: EventDefinition): AnySchema => (def.latest === 1 ? def.versions[0] : (def.versions[def.latest - 1] as EventVersion).schema)
