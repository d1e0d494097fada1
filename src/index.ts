// The API both platform entries export: index-node.ts (the package's "node" condition) and
// index-browser.ts (browsers, and any other runtime) add openStore, bound to their platform.
export { Store } from './client/store'
export type { DeleteSessionOptions, RotateKeyOptions, VerifyOptions } from './client/store'
export { Session, SessionView } from './client/session'
export type { SpawnOptions } from './client/session'
export type { ChildrenListener } from './client/children-watch'
export { SessionList, type SessionListListener } from './client/session-list'
export type { SessionQuery, SessionSummary } from './core/session-list'
export type { OpenStoreOptions, SharedWorkerLike, WorkerLike } from './client/open-store'
export type { EventInput } from './core/validate'
export { sync } from './sync/between-stores'
export { deriveKey } from './core/derive-key'
export type { SyncOptions, SyncResult } from './sync/between-stores'
export { Replication } from './sync/connect'
export type { ConnectOptions, ReplicationState, ReplicationStatus, ReplicationStore } from './sync/connect'
export { Follow, type FollowOptions, type FollowState } from './sync/follow'
export type {
  ApplyResult,
  ChangeBatch,
  ChangeCursor,
  ChangeEntry,
  Changes,
  ChangesOptions,
  FeedCursor,
  SessionMapCursor,
  SyncConflict,
  SyncSkip,
  Tombstone,
  ConflictFork,
} from './core/changes'
export { ProjectionMapView } from './client/projection-view'
export type { ChangeMeta, ProjectionKey } from './client/projection-view'
export { SessionfoldError, isSessionfoldError, ERROR_CODES } from './core/errors'
export type { ErrorCode, ErrorDetails } from './core/errors'
export { defineProjection } from './core/projection'
export { defineEvent } from './core/events'
export type {
  AnyEvent,
  AppendInput,
  EventData,
  EventDataOfDefinition,
  EventDefinition,
  EventMap,
  EventMapClosed,
  EventMapSettings,
  EventSchema,
  InputMaybeData,
  InputWithData,
  KnownEvents,
  CatalogFactData,
  SubagentDescriptorData,
  EventsOf,
  EventVersion,
  KnownEventType,
  ReservedEventMap,
  SessionMetaData,
  TypedEvent,
} from './core/events'
export type { ProjectionDefinition, ProjectionSnapshot, ProjectionFault } from './core/projection'
export type { Json, SessionEvent, SessionHeader, SessionId, LifecycleWitness, SessionOrigin } from './core/model'
export type { SubagentListEntry, ListChildrenOptions } from './core/children'
export type { AppendResult, VerifyDamage, VerifyReport, VerifyTotals } from './core/protocol'
export type { StorageKind } from './backends/config'
export type { CatalogEntry, ProjectionMap, SessionMetaView, SubagentView, TimingView } from './core/units'
export { ChunkedList } from './core/chunked-list'
export { bind, bindText, bindList, type HasProjections, type ItemOf, type ListKey } from './client/dom'
