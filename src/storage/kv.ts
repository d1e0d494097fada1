// What every adapter's key-value records (StorageAdapter.kv) check and how keys are laid out:
// the key rule, the session a key belongs to, one flat form that sorts like the parts, and the
// list range. Each adapter stores the flat form (a file name, an IndexedDB key, a text column).
import { SessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import { isSessionId } from '../core/limits'
import { describe } from '../core/validate'
import { inTurns } from '../core/in-turns'
import { MAX_RECORD_VALUE, type KeyRange, type KeyValueStore, type PutOptions, type RecordKey, type RecordWrite } from './types'

export const MAX_KEY_PARTS = 6
const PART = /^[A-Za-z0-9_-]{1,128}$/
/** Keys listed per call by default, and at most. */
export const DEFAULT_KEY_LIST = 1000
export const MAX_KEY_LIST = 10_000

/**
 * Joins parts in flat form. `+` sorts before every character a part may hold, so flat forms
 * sort as their parts do (part by part), and a prefix's keys are those starting with its flat
 * form and a `+`.
 */
export const SEPARATOR = '+'

const bad = (message: string) => new SessionfoldError('INVALID_ARGUMENT', message)

/** INVALID_ARGUMENT unless `key` is a record key (`prefix`: 0 parts allowed, for a list). */
export function assertKey(key: unknown, what = 'record key', least = 1): asserts key is RecordKey {
  if (!Array.isArray(key) || key.length < least || key.length > MAX_KEY_PARTS || !key.every((p) => typeof p === 'string' && PART.test(p))) {
    throw bad(`${what} must be ${least}-${MAX_KEY_PARTS} parts of 1-128 characters of [A-Za-z0-9_-], got ${describe(key)}`)
  }
}

/** INVALID_ARGUMENT unless `value` is a string a record may hold. */
export function assertValue(key: RecordKey, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length > MAX_RECORD_VALUE) {
    throw bad(`the value of record ${key.join(SEPARATOR)} must be a string of at most ${MAX_RECORD_VALUE} characters, got ${describe(value)}`)
  }
}

/** The session a key belongs to (`['session', id, …]`, 3 parts or more), if any. */
export function sessionOfKey(key: RecordKey): SessionId | undefined {
  return key.length >= 3 && key[0] === 'session' && isSessionId(key[1]) ? key[1] : undefined
}

/** The flat form of a key (or of a prefix: then every listed key starts with it and a SEPARATOR). */
export const flat = (key: RecordKey): string => key.join(SEPARATOR)

/** A flat form's parts again. */
export const unflat = (text: string): string[] => text.split(SEPARATOR)

/** The flat prefix of session `id`'s keys: every one starts with it. */
export const sessionPrefix = (id: SessionId): string => `session${SEPARATOR}${id}${SEPARATOR}`

/** SESSION_NOT_FOUND for a put of session `id`'s record `key` while the session is not there. */
export function notFoundForKey(id: SessionId, key: RecordKey): SessionfoldError {
  return new SessionfoldError('SESSION_NOT_FOUND', `record ${flat(key)} cannot be stored: session "${id}" does not exist`, { sessionId: id })
}

/** A list's range, checked: the flat prefix to match, where to start, how many. */
export function resolveKeyRange(prefix: unknown, range: KeyRange | undefined): { prefix: string; after: string | undefined; limit: number } {
  assertKey(prefix, 'record key prefix', 0)
  const after = range?.after
  if (after !== undefined) assertKey(after, 'list cursor (after)')
  const limit = range?.limit ?? DEFAULT_KEY_LIST
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_KEY_LIST)
    throw bad(`record list limit must be an integer in 1..${MAX_KEY_LIST}, got ${describe(limit)}`)
  return { prefix: prefix.length === 0 ? '' : flat(prefix) + SEPARATOR, after: after && flat(after), limit }
}

/** Flat keys of a sorted list that `range` takes: after `after`, starting with `prefix`, at most `limit`. */
export function takeRange(sorted: readonly string[], range: { prefix: string; after: string | undefined; limit: number }): string[][] {
  const out: string[][] = []
  for (const k of sorted) {
    if (out.length >= range.limit) break
    if (!k.startsWith(range.prefix) || (range.after !== undefined && k <= range.after)) continue
    out.push(unflat(k))
  }
  return out
}

/** Where a range starts among sorted flat keys: every key it takes is at or after this one (its prefix, or its cursor when later). */
export function rangeStart(range: { prefix: string; after: string | undefined }): string {
  return range.after !== undefined && range.after > range.prefix ? range.after : range.prefix
}

/**
 * The keys `range` takes from `sorted`, flat keys in order from {@link rangeStart} on (a sorted
 * index read from there): it stops at the first key without the prefix, or at `limit`, so it
 * reads no more than the page and one key.
 */
export function takeFrom(sorted: Iterable<string>, range: { prefix: string; after: string | undefined; limit: number }): string[][] {
  const out: string[][] = []
  for (const k of sorted) {
    if (out.length >= range.limit || !k.startsWith(range.prefix)) break
    if (range.after === undefined || k > range.after) out.push(unflat(k))
  }
  return out
}

/** Gets and writes getEach and writeEach make at once (a file's calls wait on the thread pool, where the store's other work waits behind them). */
const EACH_AT_ONCE = 8

/** A get of each of `keys`, a few at a time: getMany where an adapter has no batch of its own. */
export async function getEach(kv: Pick<KeyValueStore, 'get'>, keys: readonly RecordKey[]): Promise<(string | undefined)[]> {
  const values: (string | undefined)[] = []
  await inTurns(keys, EACH_AT_ONCE, async (key, at) => {
    values[at] = await kv.get(key)
  })
  return values
}

/** A put or delete of each of `writes` (checked first: bad ones write nothing), a few at a time: writeMany where an adapter has no batch of its own. */
export async function writeEach(kv: Pick<KeyValueStore, 'put' | 'delete'>, writes: readonly RecordWrite[], options?: PutOptions): Promise<void> {
  assertWrites(writes)
  await inTurns(writes, EACH_AT_ONCE, ([k, v]) => (v === undefined ? kv.delete(k) : kv.put(k, v, options)))
}

/** The values of `keys`: `kv.getMany` where the adapter has it, else a get of each. */
export function getMany(kv: KeyValueStore, keys: readonly RecordKey[]): Promise<(string | undefined)[]> {
  if (keys.length === 0) return Promise.resolve([])
  return kv.getMany ? kv.getMany(keys) : getEach(kv, keys)
}

/** Puts and deletes of distinct keys (KeyValueStore.writeMany, which checks them): the adapter's where it has it, else each on its own. */
export async function writeMany(kv: KeyValueStore, writes: readonly RecordWrite[], options?: PutOptions): Promise<void> {
  if (Array.isArray(writes) && writes.length === 0) return
  return kv.writeMany ? kv.writeMany(writes, options) : writeEach(kv, writes, options)
}

/** INVALID_ARGUMENT unless `writes` are writes of distinct keys with values a record may hold. */
export function assertWrites(writes: unknown): asserts writes is readonly RecordWrite[] {
  if (!Array.isArray(writes)) throw bad(`writes must be an array of [key, value] pairs, got ${describe(writes)}`)
  const seen = new Set<string>()
  for (const w of writes) {
    if (!Array.isArray(w) || w.length !== 2) throw bad(`a write must be a [key, value] pair, got ${describe(w)}`)
    assertKey(w[0])
    if (w[1] !== undefined) assertValue(w[0], w[1])
    const k = flat(w[0])
    if (seen.has(k)) throw bad(`record ${k} is written twice in one writeMany`)
    seen.add(k)
  }
}
