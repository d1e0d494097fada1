// Support: shared helpers — rootHeader, ev/evs, readAll, expectCode, snapshotStore, dumpStore, until, eventsOf
import { expect } from 'vitest'
import type { StorageAdapter } from '../../src/storage/types'
import { isSessionfoldError, type ErrorCode } from '../../src/core/errors'
import type { Json, SessionEvent, SessionHeader, SessionId } from '../../src/core/model'
import { encodeEvent, type EncodedEvent } from '../../src/core/validate'
import type { Store } from '../../src/client/store'

export function rootHeader(id: SessionId, extra: Partial<SessionHeader> = {}): SessionHeader {
  return { version: 1, id, createdAt: 1_700_000_000_000, seedLength: 0, delegationDepth: 0, origin: 'root', ...extra }
}

export function ev(id: SessionId, seq: number, data: Json = { n: seq }, type = 'test/event'): EncodedEvent {
  return encodeEvent({ seq, type, time: 1_700_000_000_000 + seq, data }, id)
}

export function evs(id: SessionId, from: number, count: number, data?: (seq: number) => Json): EncodedEvent[] {
  return Array.from({ length: count }, (_, i) => ev(id, from + i, data ? data(from + i) : { n: from + i }))
}

export async function readAll(adapter: StorageAdapter, id: SessionId, range?: { from?: number; to?: number; signal?: AbortSignal }): Promise<SessionEvent[]> {
  const out: SessionEvent[] = []
  for await (const page of adapter.readEvents(id, range)) out.push(...page)
  return out
}

/** Rejects with a SessionfoldError of exactly this code. */
export async function expectCode(p: Promise<unknown> | (() => unknown), code: ErrorCode): Promise<Error> {
  let err: unknown
  try {
    await (typeof p === 'function' ? p() : p)
  } catch (e) {
    err = e
  }
  if (!isSessionfoldError(err)) throw new Error(`expected SessionfoldError ${code}, got ${err === undefined ? 'success' : String(err)}`)
  expect(err.code, err.message).toBe(code)
  return err
}

/** Everything a store holds, read through the contract: headers, lengths, events, checkpoints. */
export async function snapshotStore(adapter: StorageAdapter): Promise<unknown> {
  const out: Record<string, unknown> = {}
  const records = await recordsOf(adapter)
  if (Object.keys(records).length > 0) out['#records'] = records // not a session id: no session's entry
  let after: string | undefined
  for (;;) {
    const page = await adapter.listSessions({ after, limit: 500 })
    for (const header of page) {
      out[header.id] = {
        info: await adapter.getSession(header.id),
        events: await readAll(adapter, header.id),
        checkpoint: await adapter.getCheckpoint(header.id),
        history: await historyOf(adapter, header.id),
      }
    }
    if (page.length < 500) return out
    after = page[page.length - 1]!.id
  }
}

/** Every key-value record of the store (StorageAdapter.kv), by key. */
export async function recordsOf(adapter: StorageAdapter): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {}
  if (!adapter.kv) return out
  for (let after: string[] | undefined; ;) {
    const keys = await adapter.kv.list([], { after, limit: 1000 })
    for (const key of keys) out[key.join('/')] = await adapter.kv.get(key)
    if (keys.length < 1000) return out
    after = keys[keys.length - 1]
  }
}

/** A session's history rows, by position (none where the adapter keeps none). */
async function historyOf(adapter: StorageAdapter, id: SessionId): Promise<Record<number, unknown>> {
  const out: Record<number, unknown> = {}
  for (const at of (await adapter.history?.list(id)) ?? []) out[at] = (await adapter.history!.get(id, at))?.row
  return out
}

/** Everything a store shows through the client: headers, events and projection values, by id. */
export async function dumpStore(store: Store): Promise<Record<string, { header: SessionHeader; events: SessionEvent[]; values: unknown; faults: unknown }>> {
  const out: Record<string, { header: SessionHeader; events: SessionEvent[]; values: unknown; faults: unknown }> = {}
  for (const header of await store.listSessions({ limit: 10_000 })) {
    const view = await store.observe(header.id)
    const events: SessionEvent[] = []
    for await (const e of view.events()) events.push(e)
    const { values, faults } = view.projections.snapshot()
    out[header.id] = { header: { ...view.header }, events, values, faults }
    await view.close()
  }
  return out
}

/** Waits for `check` (sync or async) to hold, looking every `everyMs`; throws after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5000, everyMs = 10): Promise<void> {
  for (const end = Date.now() + ms; !(await check()); await new Promise((r) => setTimeout(r, everyMs))) {
    if (Date.now() > end) throw new Error(`condition not reached in ${ms} ms`)
  }
}

/** A session's events as a reader sees them (a view opened and closed). */
export async function eventsOf(store: Store, id: SessionId): Promise<SessionEvent[]> {
  const out: SessionEvent[] = []
  const view = await store.observe(id)
  try {
    for await (const e of view.events()) out.push(e)
  } finally {
    await view.close()
  }
  return out
}
