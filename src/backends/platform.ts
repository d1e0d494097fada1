// What differs between Node and browsers for an engine host: which storage and locks exist.
// Each platform file imports its adapters statically, so a worker bundle holds only its own.
import type { Cipher, Compressor } from '../storage/codec'
import type { StorageAdapter } from '../storage/types'
import type { HostOptions } from '../core/protocol'
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

export interface Platform {
  /**
   * What can be checked or made ready before anything opens (an fs folder: one we can write
   * in; PostgreSQL: the connection and the tables). The engine's storage, locks and channel
   * are asked for after it.
   */
  check?(options: HostOptions): Promise<void>
  /** After the engine closed: what check() made ready is let go (a connection pool). */
  release?(options: HostOptions): Promise<void>
  openStorage(options: HostOptions): StorageAdapter
  /** The platform's deflate, for the record codec (src/storage/codec). */
  compressor: Compressor
  /** The platform's AES-GCM on data keys, for the record codec (default: WebCrypto's). */
  cipher?: Cipher
  openLocks(options: HostOptions): WriterLocks
  openChannel?(options: HostOptions): GrowthChannel | undefined
}
