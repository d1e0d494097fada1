// What crosses to a host when a store opens it: which store, and how its engine runs.
import type { StoreConfig } from '../backends/config'

/** Store options as the host receives them: defaults already resolved by the client. */
export interface HostOptions {
  /** Which store (see {@link StoreConfig}). */
  store: StoreConfig
  checkpoint?: { everyEvents?: number; everyMs?: number }
  maxEventBytes?: number
  /** The record codec (src/storage/codec): the store's key, and whether units are compressed. */
  encryption?: { key: Uint8Array | CryptoKey }
  compression?: 'deflate' | 'none'
  /**
   * Browsers: a Web Lock the host holds for as long as it lives. Browsers say nothing when a
   * worker dies; the client queues for this lock, and being granted it means the host is gone.
   */
  aliveLock?: string
  /**
   * Browsers, SharedWorker: a Web Lock the tab holds for as long as it lives. The shared host
   * queues for it; being granted it means the tab is gone, and its handles are closed.
   */
  tabLock?: string
}
