// The storage conformance suite's helpers: headers and encoded events to write, a whole read,
// a refusal of an exact error code, and everything a store holds (to show a refused call wrote
// nothing). The repository's own tests use them too (test/support/helpers.ts).
import { expect } from 'vitest'
import type { StorageAdapter } from '../storage/types'
import { isSessionfoldError, type ErrorCode } from '../core/errors'
import type { Json, SessionEvent, SessionHeader, SessionId } from '../core/model'
import { encodeEvent, type EncodedEvent } from '../core/validate'

/**
 * Ids every adapter refuses with INVALID_ARGUMENT: empty, path-like, too long, not ASCII
 * letters, digits, `-` and `_` (docs/CONTRACT.md §2), or not strings.
 */
export const BAD_IDS: readonly unknown[] = [
  '',
  '../x',
  'a/b',
  'a\\b',
  '.',
  '..',
  'x'.repeat(129),
  'a\0b',
  'a b',
  'é',
  'ａ',
  'a.b',
  'ｘ',
  'a\u2215b',
  'con:',
  42,
  null,
  undefined,
  {},
  ['a'],
]

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
  for (let after: string[] | undefined; ; ) {
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
