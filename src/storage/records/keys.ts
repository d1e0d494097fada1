// Where the store's own rows live among a backend's key-value records: a session's checkpoint
// row, its history rows, and the store's meta records. Backends store these keys like any other
// (some in the places their stores of 0.1 kept these rows: see each backend's records file);
// the public `kv` refuses them, and lists without them.
import type { SessionId } from '../../core/model'
import type { RecordKey } from '../types'

export const CHECKPOINT_PART = '_checkpoint'
export const HISTORY_PART = '_history'
export const META_PART = '_meta'
/** The store's session index (src/engine/session-index.ts): its state and its sorted lists. */
export const INDEX_PART = '_index'
/** A session's row in the session index: what its list entries show. */
export const SUMMARY_PART = '_summary'
/** The tombstones of a deleted session's lives (src/engine/tombstones.ts): `[DELETED_PART, id]`. */
export const DELETED_PART = '_deleted'
/** Digits of a history position in its key: every safe integer fits, and keys sort as positions do. */
const POSITION_DIGITS = 16
const POSITION = /^\d{16}$/

export const checkpointKey = (id: SessionId): RecordKey => ['session', id, CHECKPOINT_PART]
export const historyPrefix = (id: SessionId): RecordKey => ['session', id, HISTORY_PART]
export const historyKey = (id: SessionId, at: number): RecordKey => ['session', id, HISTORY_PART, positionPart(at)]
/** Meta keys follow the session id rule ([A-Za-z0-9_-]{1,128}), so they are a key part as they are. */
export const metaKey = (key: string): RecordKey => [META_PART, key]

/**
 * The session index's sorted lists: by activity or by creation (`a`, `c`), of root sessions
 * or of all (`r`, `x`). An entry is `[INDEX_PART, list, timePart(t), id]`, its value empty.
 */
export type IndexList = 'ar' | 'ax' | 'cr' | 'cx'
export const INDEX_LISTS: readonly IndexList[] = ['ar', 'ax', 'cr', 'cx']
export const summaryKey = (id: SessionId): RecordKey => ['session', id, SUMMARY_PART]
export const deletedKey = (id: SessionId): RecordKey => [DELETED_PART, id]
export const deletedPrefix: RecordKey = [DELETED_PART]
export const indexStateKey: RecordKey = [INDEX_PART, 'state']
export const indexListPrefix = (list: IndexList): RecordKey => [INDEX_PART, list]
export const indexEntryKey = (list: IndexList, time: number, id: SessionId): RecordKey => [INDEX_PART, list, timePart(time), id]
/** Digits of an index entry's time part: every time in ms up to the year 10889 fits. */
export const TIME_DIGITS = 12
const MAX_TIME = 2 ** 48 - 1
/** A time in ms as an index entry's part: 12 hex digits of its distance to MAX_TIME, so the latest sorts first. */
export const timePart = (time: number): string => (MAX_TIME - Math.min(MAX_TIME, Math.max(0, Math.floor(time)))).toString(16).padStart(TIME_DIGITS, '0')
/** The time an index entry's part stands for, or undefined for a part this file did not make. */
export function timeOfPart(part: string | undefined): number | undefined {
  if (part === undefined || !/^[0-9a-f]{12}$/.test(part)) return undefined
  return MAX_TIME - Number.parseInt(part, 16)
}

/** A history position as its key part (zero-padded). */
export const positionPart = (at: number): string => String(at).padStart(POSITION_DIGITS, '0')

/** The position a history key part stands for, or undefined for a part this file did not make. */
export function positionOf(part: string | undefined): number | undefined {
  if (part === undefined || !POSITION.test(part)) return undefined
  const at = Number(part)
  return Number.isSafeInteger(at) && at >= 1 ? at : undefined
}

/** The kind of row a key holds, or undefined for an app's or the engine's own record. */
export function rowKind(key: RecordKey): 'checkpoint' | 'history' | 'meta' | 'index' | 'deleted' | undefined {
  if (key.length === 2 && key[0] === META_PART) return 'meta'
  if (key[0] === INDEX_PART) return 'index'
  if (key[0] === DELETED_PART) return 'deleted'
  if (key.length < 3 || key[0] !== 'session') return undefined
  if (key.length === 3 && key[2] === CHECKPOINT_PART) return 'checkpoint'
  if (key.length === 4 && key[2] === HISTORY_PART) return 'history'
  return undefined
}

/** Whether a key is the store's own (reserved): a row's, or in a row's namespace. */
export function isReserved(key: RecordKey): boolean {
  if (key[0] === META_PART || key[0] === INDEX_PART || key[0] === DELETED_PART) return true
  return key.length >= 3 && key[0] === 'session' && (key[2] === CHECKPOINT_PART || key[2] === HISTORY_PART || key[2] === SUMMARY_PART)
}
