// The IndexedDB adapter's database: its object stores and their values, and small helpers
// for its requests (indexeddb.ts).
import type { DBSchema, IDBPDatabase, IDBPTransaction } from 'idb'
import type { SessionEvent, SessionHeader, SessionId } from '../../core/model'
import type { CheckpointRow, FeedEntry } from '../../storage/types'

/** The meta row holds the durable length, so an append reads it in its own transaction. */
export interface Meta {
  header: SessionHeader
  length: number
}

export interface Schema extends DBSchema {
  sessions: { key: SessionId; value: Meta }
  events: { key: [SessionId, number]; value: SessionEvent }
  checkpoints: { key: SessionId | [SessionId, number]; value: CheckpointRow } // history rows: [id, position]
  feed: { key: number; value: Omit<FeedEntry, 'at'> }
  meta: { key: string; value: string }
  /** Key-value records (indexeddb-records.ts), by flat key. */
  kv: { key: string; value: string }
}

export type StoreName = 'sessions' | 'events' | 'checkpoints' | 'feed' | 'meta' | 'kv'
export type Db = IDBPDatabase<Schema>
export type Tx<M extends IDBTransactionMode> = IDBPTransaction<Schema, StoreName[], M>

export const isNamed = (err: unknown, name: string): boolean => (err as { name?: unknown } | null)?.name === name
/**
 * Marks a request's promise as observed. When a later request in the same batch throws
 * synchronously (DataCloneError, quota), the ones already issued reject with AbortError
 * before anyone awaits them; the transaction's own error is what gets reported.
 */
export const quiet = <T>(p: Promise<T>): Promise<T> => {
  p.catch(() => {})
  return p
}
