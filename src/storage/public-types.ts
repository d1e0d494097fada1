// The storage contract's types, as every adapter entry (sessionfold/adapters/*) exports them for
// code that uses an adapter directly: one list, so the entries cannot drift apart.
export type {
  ChangeFeed,
  CheckpointRow,
  CheckpointUnitRow,
  FeedEntry,
  HistoryRow,
  HistoryRows,
  KeyRange,
  KeyValueStore,
  LogStore,
  NewSession,
  PutDurability,
  PutOptions,
  ReadRange,
  RecordKey,
  RecordReplacement,
  RecordWrite,
  RepairReport,
  SessionInfo,
  SessionRead,
  SkipTexts,
  StorageAdapter,
} from './types'
export type { EncodedEvent } from '../core/validate'
