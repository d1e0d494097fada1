// Lineage: how sessions come to be. createRoot makes a root session, spawn creates a subagent
// and publishes it in its parent's catalog, recordExternal publishes an execution outside this
// store, fork seeds a new session with a prefix of another's log.
import { alreadyExists } from '../storage/guard'
import type { SessionInfo } from '../storage/types'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { AppendResult } from '../core/protocol'
import { createSessionInputSchema, forkInputSchema, parseInput, recordExternalInputSchema, spawnInputSchema } from '../core/inputs'
import { CATALOG_VERSION, DESCRIPTOR_VERSION, HEADER_VERSION } from '../core/limits'
import { CATALOG, DESCRIPTOR, META } from '../core/units/payloads'
import { describe, encodeEvent, encodeEventBody, encodeEventInput, eventFromBody, isPlainObject, type EncodedEvent } from '../core/validate'
import type { StoreReader } from './reader'

/** What lineage needs of the engine. */
export interface LineageHost<S extends { header: SessionHeader; log: { nextSeq: number } }> {
  now(): number
  maxEventBytes: number
  reader: Pick<StoreReader, 'pages' | 'find'>
  /** The session open for writing here; CLOSED otherwise. */
  writable(id: SessionId): S
  /** The stored header and durable length, after the appends in flight here have settled. */
  settled(id: SessionId): Promise<SessionInfo>
  /** Stores a new session with its seed and opens it for writing here. */
  create(header: SessionHeader, seed: readonly EncodedEvent[]): Promise<S>
  appendNumbered(session: S, events: readonly EncodedEvent[]): Promise<AppendResult>
  /** An event an app gives, checked against its type's definition and stamped with its version (event-registry.ts). */
  checked(encoded: EncodedEvent, sessionId: SessionId): EncodedEvent
  /** Appends an event input to a session open for writing here. */
  append(id: SessionId, input: unknown): Promise<AppendResult>
  /** Deletes a session just created here and still held (spawn's undo). */
  discard(id: SessionId): Promise<void>
}

/** A fresh id: 32 hex digits from crypto.randomUUID (browsers and Node alike). */
export function newSessionId(): SessionId {
  return globalThis.crypto.randomUUID().replace(/-/g, '')
}

/** Creates a root session and opens it for writing here. */
export async function createRoot<S extends { header: SessionHeader; log: { nextSeq: number } }>(
  host: LineageHost<S>,
  options: unknown,
): Promise<SessionHeader> {
  const named = (options as { id?: unknown } | null)?.id
  const given = parseInput(createSessionInputSchema, options, 'createSession options', typeof named === 'string' ? named : undefined)
  const id = given.id ?? newSessionId()
  const header: SessionHeader = { version: HEADER_VERSION, id, createdAt: host.now(), seedLength: 0, delegationDepth: 0, origin: 'root' }
  if (given.cwd !== undefined) header.cwd = given.cwd
  const data = metaData(given)
  const meta =
    data &&
    host.checked(
      eventFromBody(encodeEventBody({ type: META, data, time: header.createdAt }, id, { maxBytes: host.maxEventBytes }), 0, id, host.maxEventBytes),
      id,
    )
  let session: S
  try {
    session = await host.create(header, [])
  } catch (err) {
    // The error about the request itself comes first: a taken id is SESSION_EXISTS, even
    // while that session is open for writing (and so its writer lock is held).
    if (isSessionfoldError(err, 'SESSION_LOCKED') && (await host.reader.find(id).catch(() => undefined))) {
      throw alreadyExists(id)
    }
    throw err
  }
  if (meta !== undefined) {
    try {
      await host.appendNumbered(session, [meta])
    } catch (err) {
      await host.discard(id)
      throw err
    }
  }
  return header
}

/** The data of the `session/meta` event that gives a new session its `title` and `tags`, or none when neither is given. */
function metaData({ title, tags }: { title?: string; tags?: string[] }): { title?: string; tags?: string[] } | undefined {
  if (title === undefined && tags === undefined) return undefined
  return { ...(title === undefined ? {} : { title }), ...(tags === undefined ? {} : { tags }) }
}

/**
 * Creates a subagent of `parentId` (open for writing here), appends its descriptor and
 * initial events, and only then the parent's catalog fact. If anything fails before the
 * fact is stored, the child is deleted: a fact never names a child that is not there.
 */
export async function spawn<S extends { header: SessionHeader; log: { nextSeq: number } }>(
  host: LineageHost<S>,
  parentId: SessionId,
  options: unknown,
  bodies?: readonly string[],
): Promise<SessionHeader> {
  const parent = host.writable(parentId)
  // `events`: the engine's own callers may pass events as inputs; clients send bodies.
  const { events = [], ...rest } = isPlainObject(options) ? (options as { events?: unknown }) : { events: [] }
  const { mode, label, id = newSessionId(), title, tags } = parseInput(spawnInputSchema, isPlainObject(options) ? rest : options, 'spawn options', parentId)
  if (!Array.isArray(events)) throw new SessionfoldError('INVALID_ARGUMENT', `spawn events for ${where(parentId)} must be an array`, { sessionId: parentId })
  const header: SessionHeader = {
    version: HEADER_VERSION,
    id,
    createdAt: host.now(),
    parentSession: parentId,
    seedLength: 0,
    delegationDepth: parent.header.delegationDepth + 1,
    origin: 'subagent',
  }
  if (parent.header.cwd !== undefined) header.cwd = parent.header.cwd
  // Everything is validated and encoded before anything is written.
  const descriptor = label === undefined ? { v: DESCRIPTOR_VERSION, mode } : { v: DESCRIPTOR_VERSION, mode, label }
  const encode = (e: unknown) => encodeEventBody(e, id, { maxBytes: host.maxEventBytes, now: header.createdAt })
  if (bodies !== undefined && (events as unknown[]).length > 0) {
    throw new SessionfoldError('INVALID_ARGUMENT', `spawn of ${where(parentId)} takes events or encoded bodies, not both`, { sessionId: parentId })
  }
  const data = metaData({ title, tags })
  const meta = data === undefined ? [] : [encode({ type: META, data, time: header.createdAt })]
  const childEvents = [encode({ type: DESCRIPTOR, data: descriptor, time: header.createdAt }), ...meta, ...(bodies ?? events.map(encode))].map((b, i) =>
    host.checked(eventFromBody(b, i, id, host.maxEventBytes), id),
  )
  const factData =
    label === undefined
      ? { v: CATALOG_VERSION, childId: id, childCreatedAt: header.createdAt, mode }
      : { v: CATALOG_VERSION, childId: id, childCreatedAt: header.createdAt, mode, label }
  encodeEventInput({ type: CATALOG, data: factData }, parent.log.nextSeq, parentId, { maxBytes: host.maxEventBytes })

  const child = await host.create(header, [])
  try {
    await host.appendNumbered(child, childEvents)
    await host.append(parentId, { type: CATALOG, data: factData })
  } catch (err) {
    await host.discard(id)
    throw err
  }
  return header
}

/** Records in `parentId`'s catalog an execution outside this store (no local session). */
export function recordExternal<S extends { header: SessionHeader; log: { nextSeq: number } }>(
  host: LineageHost<S>,
  parentId: SessionId,
  options: unknown,
): Promise<AppendResult> {
  host.writable(parentId)
  const { childId, label } = parseInput(recordExternalInputSchema, options, 'recordExternal options', parentId)
  const data =
    label === undefined
      ? { v: CATALOG_VERSION, childId, childCreatedAt: host.now(), mode: 'external' }
      : { v: CATALOG_VERSION, childId, childCreatedAt: host.now(), mode: 'external', label }
  return host.append(parentId, { type: CATALOG, data })
}

/**
 * A new session whose log starts with copies of `sourceId`'s events `[0, at)` (default: all
 * durable events); its units start with inheritedEventCount = at, so it inherits no
 * children and no identity. Open for writing here.
 */
export async function fork<S extends { header: SessionHeader; log: { nextSeq: number } }>(
  host: LineageHost<S>,
  sourceId: SessionId,
  options: unknown,
): Promise<SessionHeader> {
  const { at: atOption, id = newSessionId() } = parseInput(forkInputSchema, options, 'fork options', sourceId)
  const info = await host.settled(sourceId)
  const at = atOption ?? info.length
  if (at > info.length) {
    throw new SessionfoldError('INVALID_ARGUMENT', `fork of ${where(sourceId)}: at must be an integer in 0..${info.length}, got ${describe(at)}`, {
      sessionId: sourceId,
    })
  }
  const seed: EncodedEvent[] = []
  for await (const page of host.reader.pages(sourceId, { from: 0, to: at })) {
    for (const e of page) seed.push(encodeEvent(e, id, Number.MAX_SAFE_INTEGER))
  }
  const header: SessionHeader = {
    version: HEADER_VERSION,
    id,
    createdAt: host.now(),
    seedLength: at,
    delegationDepth: info.header.delegationDepth,
    origin: 'fork',
    forkedFrom: sourceId,
  }
  if (info.header.cwd !== undefined) header.cwd = info.header.cwd
  await host.create(header, seed)
  return header
}
