// An app's own events (DESIGN §19): their data typed by declaration merging (EventMap), their
// schemas and versions declared once (defineEvent), checked where they are appended, and read
// back upcast to the latest version. The reserved events are described the same way
// (reserved-events.ts), so one mechanism checks them all.
import type { $ZodType } from 'zod/v4/core'
import { SessionfoldError } from './errors'
import { isEventType, MAX_EVENT_TYPE_LENGTH } from './limits'
import type { Json, SessionEvent } from './model'
import { describe, isZodSchema } from './validate'

/**
 * Your app's events by type: the data each one carries. Merge your types into it, and
 * `append`, `events()` and your units' `apply` check and narrow `data` by `type`.
 *
 * A type outside it (and outside {@link ReservedEventMap}) still takes any `Json`, unless you
 * close the map ({@link EventMapSettings}).
 *
 * @example
 * import type { Json } from 'sessionfold' // any import or export: it makes this file a module
 *
 * declare module 'sessionfold' {
 *   interface EventMap {
 *     'tool/call': { tool: string; args: Json }
 *     'chat/message': { role: 'user' | 'assistant'; text: string }
 *   }
 * }
 */
// biome-ignore lint/suspicious/noEmptyInterface: apps merge their events into it
export interface EventMap {}

/**
 * Settings of {@link EventMap}, merged the same way, in a module of your app:
 * `declare module 'sessionfold' { interface EventMapSettings { closed: true } }`. Closed, an
 * event type outside the map and the reserved ones does not compile, in `append` as in reads
 * (a setting of the whole program: every file of the app sees it).
 */
// biome-ignore lint/suspicious/noEmptyInterface: apps merge their settings into it
export interface EventMapSettings {}

/** The data of a `session/meta` event (a session's title and tags: `setMeta`). */
export interface SessionMetaData {
  /** The session's title, or null to clear it. */
  title?: string | null
  /** The session's tags, replacing the last ones given. */
  tags?: string[]
}

/** The data of a `subagent/descriptor` event: who a child is (appended by `spawn`). */
export interface SubagentDescriptorData {
  /** The descriptor's format version. */
  v: 2
  /** A one-shot child ends with its task; a continuable one (which has a label) can be resumed. */
  mode: 'one-shot' | 'continuable'
  /** The child's label (1-200 characters). */
  label?: string
}

/** The data of a `subagent/catalog` event: a child of this session, or an execution it recorded. */
export interface CatalogFactData {
  /** The fact's format version: 0, 1 (adds `unknown`) or 2 (adds `external`). */
  v: 0 | 1 | 2
  /** The child's session id (or the external execution's id). */
  childId: string
  /** The child's `createdAt`: with its id, which life of that id it is. */
  childCreatedAt: number
  /** How the child runs. */
  mode: 'one-shot' | 'continuable' | 'unknown' | 'external'
  /** The child's label. */
  label?: string
}

/** sessionfold's own event types and their data (the contract's reserved events). */
export interface ReservedEventMap {
  /** In a child: who it is (appended by `spawn`). */
  'subagent/descriptor': SubagentDescriptorData
  /** In a parent: a child it spawned or an execution it recorded (`spawn`, `recordExternal`). */
  'subagent/catalog': CatalogFactData
  /** A turn's start: data free-form. */
  'turn/start': Json
  /** A turn's end: data free-form; a checkpoint point. */
  'turn/end': Json
  /** A session's title and tags. */
  'session/meta': SessionMetaData
}

/** Every event the type system knows, by type: the reserved ones and your {@link EventMap}. */
export type KnownEvents = Omit<ReservedEventMap, keyof EventMap> & EventMap
/** Every event type the type system knows: the reserved ones and those merged into {@link EventMap}. */
export type KnownEventType = keyof KnownEvents & string
/** `true` once your {@link EventMapSettings} close the map. */
export type EventMapClosed = EventMapSettings extends {
  /** As your settings set it. */
  closed: true
}
  ? true
  : false

/** The data of an event of type `T`: its entry in the maps, `Json` for another type. */
export type EventData<T extends string> = T extends KnownEventType ? KnownEvents[T] : Json

/** An event to append of type `T`, whose data must be given. */
export interface InputWithData<T extends string, D> {
  /** Its type. */
  type: T
  /** Its data. */
  data: D
  /** Epoch ms; defaults to now. */
  time?: number
}

/** An event to append of type `T`, whose data may be left out (it is then `null`). */
export interface InputMaybeData<T extends string, D> {
  /** Its type. */
  type: T
  /** Its data (default `null`). */
  data?: D
  /** Epoch ms; defaults to now. */
  time?: number
}

/**
 * An event to append, of type `T`: `data` as {@link EventMap} says (optional where it may be
 * null); another type takes any `Json`, or does not compile once the map is closed.
 */
export type AppendInput<T extends string = string> = T extends KnownEventType
  ? null extends KnownEvents[T]
    ? InputMaybeData<T, KnownEvents[T]>
    : InputWithData<T, KnownEvents[T]>
  : EventMapClosed extends true
    ? never
    : InputMaybeData<T, Json>

/** An event of one of the types `T`, its data typed by its type (a union narrowed by `type`). */
export type TypedEvent<T extends string> = { [K in T]: SessionEvent<K, EventData<K>> }[T]

/**
 * An event as reads hand it over without a list of types: with the map closed, one of the
 * known types, its data narrowed by `type`; open, any type, its data `Json` (name the types a
 * unit reads, `defineProjection({ types })`, or a read reads, `events({ types })`, to narrow).
 */
export type AnyEvent = EventMapClosed extends true ? TypedEvent<KnownEventType> : SessionEvent

/** An event type list's events: its types, narrowed; none given (`never`): {@link AnyEvent}. */
export type EventsOf<T extends string> = [T] extends [never] ? AnyEvent : string extends T ? AnyEvent : TypedEvent<T>

/** One version after the first: its schema, and how the version before it becomes this one. */
export interface EventVersion<P = unknown, D = unknown> {
  /** Any zod 4 schema (classic or zod/mini) the data of this version passes. */
  // biome-ignore lint/suspicious/noExplicitAny: a schema's input type is whatever it accepts
  readonly schema: $ZodType<D, any>
  /** The data of the version before, as this version has it: pure, and it must pass `schema`. */
  up(previous: P): D
}

/** An event type's definition: what `defineEvent` returns, registered with `openStore({ events })` or `serveEngine({ events })`. */
// biome-ignore lint/suspicious/noExplicitAny: the default makes any definition assignable to a plain EventDefinition
export interface EventDefinition<T extends string = string, D = any> {
  /** The event type: 1-256 characters. */
  readonly type: T
  /** Its versions, oldest first: `versions[n - 1]` is version n. The latest is what appends must pass. */
  // biome-ignore lint/suspicious/noExplicitAny: each step's types are checked where it is defined
  readonly versions: readonly [$ZodType<any, any>, ...EventVersion<any, any>[]]
  /** The latest version's number: `versions.length`. */
  readonly latest: number
  /** Types only: the latest version's data. */
  readonly _data?: D
}

/** The data an event definition's latest version takes: `EventDataOfDefinition<typeof toolCall>`. */
export type EventDataOfDefinition<E> = E extends EventDefinition<string, infer D> ? D : never

/** A zod 4 schema (classic or zod/mini) whose output is `O`. */
// biome-ignore lint/suspicious/noExplicitAny: a schema's input type is whatever it accepts
export type EventSchema<O> = $ZodType<O, any>

/**
 * Declares an event type of your app: the schema its data must pass when it is appended
 * (`INVALID_ARGUMENT`, nothing written, otherwise), and its versions. Register it with
 * `openStore({ events })` (with `worker: false`) or `serveEngine({ events })` in your worker.
 *
 * With `versions`, new appends are stored as the latest version (its number with the event),
 * stored events are never rewritten, and every read (`events()`, folds, time travel) hands
 * over the latest shape: each older event passed through the `up` of every version after its own.
 *
 * @example
 * import { defineEvent } from 'sessionfold'
 * import { z } from 'zod'
 *
 * export const message = defineEvent({
 *   type: 'chat/message',
 *   versions: [
 *     z.object({ text: z.string() }),
 *     { schema: z.object({ parts: z.array(z.string()) }), up: (v1) => ({ parts: [v1.text] }) },
 *   ],
 * })
 */
export function defineEvent<const T extends string, D>(def: { type: T; schema: EventSchema<D> }): EventDefinition<T, D>
export function defineEvent<const T extends string, A>(def: { type: T; versions: readonly [EventSchema<A>] }): EventDefinition<T, A>
export function defineEvent<const T extends string, A, B>(def: { type: T; versions: readonly [EventSchema<A>, EventVersion<A, B>] }): EventDefinition<T, B>
export function defineEvent<const T extends string, A, B, C>(def: {
  type: T
  versions: readonly [EventSchema<A>, EventVersion<A, B>, EventVersion<B, C>]
}): EventDefinition<T, C>
export function defineEvent<const T extends string, A, B, C, D>(def: {
  type: T
  versions: readonly [EventSchema<A>, EventVersion<A, B>, EventVersion<B, C>, EventVersion<C, D>]
}): EventDefinition<T, D>
export function defineEvent<const T extends string, A, B, C, D, E>(def: {
  type: T
  versions: readonly [EventSchema<A>, EventVersion<A, B>, EventVersion<B, C>, EventVersion<C, D>, EventVersion<D, E>]
}): EventDefinition<T, E>
// biome-ignore lint/suspicious/noExplicitAny: more than five versions are typed step by step by their schemas only
export function defineEvent<const T extends string>(def: { type: T; versions: readonly [EventSchema<any>, ...EventVersion<any, any>[]] }): EventDefinition<T>
export function defineEvent(def: { type: string; schema?: unknown; versions?: readonly unknown[] }): EventDefinition {
  const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `event ${describe(def?.type)}: ${why}`)
  if (typeof def !== 'object' || def === null) throw bad('the definition must be an object')
  if (!isEventType(def.type)) throw bad(`type must be a string of 1-${MAX_EVENT_TYPE_LENGTH} characters`)
  for (const key of Object.keys(def)) if (key !== 'type' && key !== 'schema' && key !== 'versions') throw bad(`has no field ${describe(key)}`)
  if ((def.schema === undefined) === (def.versions === undefined)) throw bad('give either schema or versions')
  const versions = def.versions ?? [def.schema]
  if (!Array.isArray(versions) || versions.length === 0) throw bad('versions must be a list: the first version a schema, each later one { schema, up }')
  if (!isZodSchema(versions[0])) throw bad(def.versions ? 'versions[0] must be a zod schema' : 'schema must be a zod schema')
  for (let i = 1; i < versions.length; i++) {
    const step = versions[i] as EventVersion | undefined
    if (typeof step !== 'object' || step === null || !isZodSchema(step.schema) || typeof step.up !== 'function')
      throw bad(`versions[${i}] must be { schema, up } (version ${i + 1}: its schema, and how version ${i} becomes it)`)
  }
  return Object.freeze({ type: def.type, versions: Object.freeze([...versions]) as EventDefinition['versions'], latest: versions.length })
}

/** The reserved event types: sessionfold's own, described by its own definitions. */
export const RESERVED_EVENT_TYPES = [
  'subagent/descriptor',
  'subagent/catalog',
  'turn/start',
  'turn/end',
  'session/meta',
] as const satisfies readonly (keyof ReservedEventMap)[]

/** A value defineEvent returned: frozen, with its type, versions and latest version. */
export const isEventDefinition = (v: unknown): v is EventDefinition =>
  typeof v === 'object' &&
  v !== null &&
  Object.isFrozen(v) &&
  typeof (v as EventDefinition).type === 'string' &&
  typeof (v as EventDefinition).latest === 'number'

/**
 * An app's list of event definitions, checked before anything opens: INVALID_ARGUMENT for an
 * entry that is not one, a reserved type, or a type defined twice.
 */
export function checkedDefinitions(list: unknown, where: string): readonly EventDefinition[] {
  const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `${where}: ${why}`)
  if (!Array.isArray(list)) throw bad(`events must be an array of defineEvent() definitions, got ${describe(list)}`)
  const seen = new Set<string>()
  return list.map((def: unknown) => {
    const checked = isEventDefinition(def) ? def : defineEvent(def as Parameters<typeof defineEvent>[0])
    if ((RESERVED_EVENT_TYPES as readonly string[]).includes(checked.type)) throw bad(`event "${checked.type}" is sessionfold's own: its type is reserved`)
    if (seen.has(checked.type)) throw bad(`event "${checked.type}" is defined twice`)
    seen.add(checked.type)
    return checked
  })
}

/** An event's stored version: its `v`, 1 when it has none. */
export const versionOf = (event: { v?: number }): number => event.v ?? 1
