// The seam between the engine's host and the backends. A platform lists its backends, one
// row each (node.ts, browser.ts): a row is what the client needs, pure (the store options the
// backend reads, parsed into its config), and the backend's code, loaded only where the engine
// runs, so the client bundle never holds a backend and a platform's bundles never hold another
// platform's. The backend's code opens one store's parts (storage, locks, growth channel).
import type { Cipher, Compressor } from '../storage/codec'
import type { StorageAdapter } from '../storage/types'
import { SessionfoldError } from '../core/errors'
import { describe } from '../core/validate'
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
  /**
   * For the same channels: starts noticing writes of other engines anywhere in the store (its
   * change feed growing), calling `onChange` soon after each (a hint: spurious calls are fine,
   * and missed ones are caught by the caller's own slower look); returns its stop.
   */
  watchFeed?(onChange: () => void): () => void
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

/** A backend's code (its folder's backend.ts), loaded where the engine runs. */
export interface Backend<C extends StoreConfigBase = StoreConfigBase> {
  open(config: C, purpose: OpenPurpose, platform: Platform): Promise<BackendParts>
  /** Node: what a worker thread that died held in this store (its lock files), let go. */
  releaseThread?(config: C, threadId: number): Promise<void>
}

/** What every store config has: the `storage` that names its backend (see StoreConfig in config.ts). */
export interface StoreConfigBase {
  storage: string
}

export type Durability = 'strict' | 'relaxed'

/**
 * A backend as its platform lists it: one folder under src/backends/, whose config.ts exports
 * this row, and one line in the list of each platform it runs on (node.ts, browser.ts).
 * Everything but `load` is pure, and runs in the client before anything starts.
 */
export interface BackendEntry<C extends StoreConfigBase = StoreConfigBase, O = object> {
  /** The value of openStore's `storage` that chooses it. */
  storage: C['storage']
  /** The openStore options it reads, besides `storage` and `durability`; given with another storage, they are refused. */
  options: readonly (keyof O & string)[]
  /** What names one store of it, for messages: "an fs store is the folder `dir`". */
  is: string
  /** Its config from openStore's options (already checked: no option of another backend is given), defaults resolved; INVALID_ARGUMENT for a bad value. */
  config(options: O, durability: Durability): C
  /** `text` as it may be shown (an error message): without the store's secrets (a URL's password). */
  redact?(config: C, text: string): string
  /** Its code: imported when an engine opens a store of it, and only then. */
  load(): Promise<Backend<C>>
}

/** A row of any backend, as a platform's list holds them. */
// biome-ignore lint/suspicious/noExplicitAny: each row is typed by its own config and options; the list holds them all
export type AnyBackendEntry = BackendEntry<any, any>

/** What differs between Node and browsers for an engine: its backends and the codec's primitives. */
export interface Platform {
  backends: readonly AnyBackendEntry[]
  /** The platform's deflate, for the record codec (src/storage/codec). */
  compressor: Compressor
  /** The platform's AES-GCM on data keys, for the record codec (default: WebCrypto's). */
  cipher?: Cipher
  /**
   * For a store kept by the platform itself (memory, IndexedDB), named `name`: the locks and
   * growth notices of every engine on it (Node: this process's; browsers: the origin's tabs).
   */
  neighbours(name: string): Promise<Omit<BackendParts, 'storage'>>
}

/** The row of `storage` in `backends`; INVALID_ARGUMENT, naming those there are, where it has none. */
export function entryOf(backends: readonly AnyBackendEntry[], storage: unknown, here: string): AnyBackendEntry {
  const entry = backends.find((b) => b.storage === storage)
  if (!entry) {
    const names = backends.map((b) => `'${b.storage}'`)
    throw new SessionfoldError('INVALID_ARGUMENT', `storage must be ${names.slice(0, -1).join(', ')} or ${names.at(-1)} ${here}, got ${describe(storage)}`)
  }
  return entry
}

/** The code of `config`'s backend on `platform`. */
export async function backendOf<C extends StoreConfigBase>(platform: Platform, config: C): Promise<Backend<C>> {
  return entryOf(platform.backends, config.storage, 'here').load()
}

/** `value` when it is a non-empty string without NUL (a folder, a database name); INVALID_ARGUMENT naming `key` otherwise. */
export function storeName(value: unknown, key: string): string | undefined {
  if (value !== undefined && (typeof value !== 'string' || value.length === 0 || value.includes('\0')))
    throw new SessionfoldError('INVALID_ARGUMENT', `${key} must be a non-empty string without NUL, got ${describe(value)}`)
  return value
}
