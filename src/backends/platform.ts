// The seam between the engine's host and the backends: a backend opens one store's parts
// (storage, locks, growth channel); a platform lists its backends (node.ts, browser.ts), each
// imported statically, so a worker bundle holds only its own.
import type { Cipher, Compressor } from '../storage/codec'
import type { StorageAdapter } from '../storage/types'
import { SessionfoldError } from '../core/errors'
import type { StorageKind, StoreConfig } from './config'
import type { WriterLocks } from '../storage/locks'

/** Events a growth notice carried: seqs `from`, `from + 1`, … (parsed, unchecked). */
export interface GrowthTail {
  from: number
  events: unknown[]
}

/** Tells other engines on the same store (other tabs) that a session grew, or was deleted. */
export interface GrowthChannel {
  /** `length`: the log's length now; below 0: the session was deleted (listeners hear no length, and look). */
  announce(sessionId: string, length: number): void
  /**
   * `length`, when the channel knows it: the log's length the announcement was made at;
   * `tail`, when it carries them: the events from seq `tail.from` up to that length.
   */
  listen(onGrow: (sessionId: string, length?: number, tail?: GrowthTail) => void): void
  /**
   * For channels that cannot hear other engines announce (processes sharing files): starts
   * noticing growth of a session followed here; returns its stop.
   */
  watch?(sessionId: string): () => void
  close(): void
}

/**
 * What an engine is opened for. 'app': an app's store (made when missing; other engines'
 * appends heard through the growth channel). The command line: 'read' (the store must exist;
 * nothing is written and no lock is taken), 'write' (the store must exist), 'create' (made
 * when missing).
 */
export type OpenPurpose = 'app' | 'read' | 'write' | 'create'

/** One store's parts, opened by its backend. */
export interface BackendParts {
  storage: StorageAdapter
  /** One writer per session, among every engine on the store. */
  locks: WriterLocks
  /** Other engines' appends and deletes (other tabs, processes, machines), where they can be heard. */
  channel?: GrowthChannel
  /** After the engine closed (its last checkpoints written): what the backend holds is let go (a connection pool). */
  end?(): Promise<void>
}

/** A backend: one folder under src/backends/, registered in a platform's list. */
export interface Backend<C extends StoreConfig = StoreConfig> {
  open(config: C, purpose: OpenPurpose): Promise<BackendParts>
  /** Node: what a worker thread that died held in this store (its lock files), let go. */
  releaseThread?(config: C, threadId: number): Promise<void>
  /** `text` as it may be shown (an error message): without the store's secrets (a URL's password). */
  redact?(config: C, text: string): string
}

/** The backends of a platform, by the `storage` they serve. */
export type Backends = { [K in StorageKind]?: Backend<Extract<StoreConfig, { storage: K }>> }

/** What differs between Node and browsers for an engine: its backends and the codec's primitives. */
export interface Platform {
  backends: Backends
  /** The platform's deflate, for the record codec (src/storage/codec). */
  compressor: Compressor
  /** The platform's AES-GCM on data keys, for the record codec (default: WebCrypto's). */
  cipher?: Cipher
}

/** The backend of `config` on `platform`; INVALID_ARGUMENT where it has none. */
export function backendOf<C extends StoreConfig>(platform: Platform, config: C): Backend<C> {
  const backend = (platform.backends as Record<string, Backend<C> | undefined>)[config.storage]
  if (!backend) throw new SessionfoldError('INVALID_ARGUMENT', `storage '${String(config.storage)}' is not available here`)
  return backend
}
