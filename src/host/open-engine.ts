// The one place an engine is built: its backend's parts (storage, locks, growth channel) for
// the store a config names, the storage under the record codec, and the Engine on them. The
// worker entries, the in-thread connection and the command line all open engines here.
import { CODEC_META_KEY, openSealed, type KeyAdvice, type SealedStorage } from '../storage/codec'
import type { WriterLocks } from '../storage/locks'
import { isSessionfoldError, type SessionfoldError } from '../core/errors'
import type { EventDefinition } from '../core/events'
import type { ProjectionDefinition } from '../core/projection'
import type { HostOptions } from './options'
import type { StoreConfig } from '../backends/config'
import { Engine, type EngineOptions } from '../engine'
import { backendOf, type GrowthTail, type OpenPurpose, type Platform } from '../backends/platform'
import type { ReplicationHub } from '../sync/runs'

/** How an engine is opened, besides its store (HostOptions, for an app's store). */
export interface EngineSettings extends Omit<HostOptions, 'store' | 'aliveLock' | 'tabLock'> {
  projections?: readonly ProjectionDefinition[]
  events?: readonly EventDefinition[]
  /** What it is opened for (default 'app'; the command line opens for 'read', 'write' or 'create'). */
  purpose?: OpenPurpose
  /** What KEY_REJECTED advises (the command line names its flags, not the API's options). */
  keyAdvice?: KeyAdvice
  /** The engine's locks made from the store's (the command line's delete hands over locks it holds). */
  locks?: (locks: WriterLocks) => WriterLocks
  onError?: (err: SessionfoldError) => void
  /** Durable Streams, where the engine serves them (Node's entries). */
  streams?: EngineOptions['streams']
}

/** An engine, with what it was opened on. */
export interface OpenedEngine {
  engine: Engine
  /** Its storage, under the codec (key rotation works on it). */
  storage: SealedStorage
  /** The store's own locks (before `settings.locks`). */
  locks: WriterLocks
  /** Which store it is: equal for two engines on the same store. */
  readonly storeKey: string
  /** The replications of every host on this engine (src/sync/runs.ts), made on first connect. */
  replications?: ReplicationHub
  /** Closes the engine (its last checkpoints written), then what its backend holds. */
  close(): Promise<void>
}

export async function openEngine(platform: Platform, store: StoreConfig, settings: EngineSettings = {}): Promise<OpenedEngine> {
  const purpose = settings.purpose ?? 'app'
  const parts = await (await backendOf(platform, store)).open(store, purpose, platform)
  let storage: SealedStorage
  try {
    storage = await openSealed(parts.storage, {
      key: settings.encryption?.key,
      compression: settings.compression,
      compressor: platform.compressor,
      cipher: platform.cipher,
      readOnly: purpose === 'read',
      advice: settings.keyAdvice,
      // Two engines making an encrypted store's key record at once: one of them makes it.
      lock: purpose === 'read' ? undefined : () => lockWithin(parts.locks, CODEC_META_KEY, 30_000),
    })
  } catch (err) {
    parts.channel?.close()
    await parts.end?.()
    throw err
  }
  const own = settings.locks ? settings.locks(parts.locks) : parts.locks
  const channel = parts.channel
  const engine = new Engine({
    storage,
    projections: settings.projections,
    events: settings.events,
    checkpoint: settings.checkpoint,
    maxEventBytes: settings.maxEventBytes,
    streams: settings.streams,
    locks: storage.encrypted && purpose !== 'read' ? keyChecked(own, storage) : own,
    onError: settings.onError,
    onGrow: channel ? (id, length) => channel.announce(id, length) : undefined,
    onDelete: channel ? (id) => channel.announce(id, -1) : undefined,
    watchSession: channel?.watch ? (id) => channel.watch!(id) : undefined,
    watchFeed: channel?.watchFeed ? (onChange) => channel.watchFeed!(onChange) : undefined,
  })
  channel?.listen((id, length, tail) => {
    engine.index?.heard() // another engine wrote: the session list looks at the feed (while one watches)
    void engine.follow(id, length, storage.encrypted ? undefined : plainTail(tail))
  })
  return {
    engine,
    storage,
    locks: parts.locks,
    storeKey: storeKeyOf(store),
    async close() {
      channel?.close()
      try {
        await engine.close()
      } finally {
        await parts.end?.()
      }
    },
  }
}

/** Which store `config` names (its place, not how it is opened): equal for two engines on one store. */
export function storeKeyOf(config: StoreConfig): string {
  switch (config.storage) {
    case 'fs':
      return JSON.stringify([config.storage, config.dir])
    case 'postgres':
      return JSON.stringify([config.storage, config.url, config.schema])
    default:
      return JSON.stringify([config.storage, config.name])
  }
}

/**
 * A growth notice's events, unless they are stored units (the engine reads and opens those).
 * An encrypted store takes no events from notices at all: only what opens is data.
 */
function plainTail(tail: GrowthTail | undefined): GrowthTail | undefined {
  return tail?.events.some((e) => (e as { type?: unknown } | null)?.type === '') ? undefined : tail
}

/** The lock `id` of `locks`, waiting while another holder has it, for at most `ms`. */
export async function lockWithin(locks: WriterLocks, id: string, ms: number): Promise<() => Promise<void>> {
  for (const end = Date.now() + ms; ; ) {
    try {
      return await locks.acquire(id)
    } catch (err) {
      if (!isSessionfoldError(err, 'SESSION_LOCKED') || Date.now() > end) throw err
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

/**
 * Writer locks that read the store's key record again on taking one (when it changed): a writer
 * of a store whose key was rotated elsewhere (and its old data keys dropped) is KEY_REJECTED
 * rather than writing units under a data key the store no longer lists.
 */
function keyChecked(locks: WriterLocks, storage: SealedStorage): WriterLocks {
  return {
    async acquire(id) {
      const release = await locks.acquire(id)
      try {
        await storage.refreshKeys()
      } catch (err) {
        await release()
        throw err
      }
      return release
    },
    isHeld: (id) => locks.isHeld(id),
  }
}
