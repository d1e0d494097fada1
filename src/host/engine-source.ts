// Where a host gets its engine: the platform's storage (under the record codec), locks and
// growth channel, opened into an Engine; or, for a SharedWorker, one engine per store shared
// by every connection.
import { CODEC_META_KEY, openSealed, type SealedStorage } from '../storage/codec'
import type { WriterLocks } from '../storage/locks'
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { HostOptions } from '../core/protocol'
import type { ProjectionDefinition } from '../core/projection'
import { Engine } from '../engine'
import type { GrowthChannel, GrowthTail, Platform } from '../backends/platform'

/** Where a host gets its engine: its own (the default), or one shared by every connection. */
export interface EngineSource {
  open(options: HostOptions, projections: readonly ProjectionDefinition[]): Promise<Engine>
  close(engine: Engine): Promise<void>
}

/** A host's own engine on this platform's storage: closed with the host. */
/** Each engine's storage, under its codec (for rotateKey). */
const sealed = new WeakMap<Engine, SealedStorage>()

/** The codec-wrapped storage an engine was opened on. */
export function sealedStorageOf(engine: Engine): SealedStorage {
  const s = sealed.get(engine)
  if (!s) throw new SessionfoldError('CLOSED', 'the engine host is not initialised')
  return s
}

export function ownEngine(platform: Platform): EngineSource {
  const channels = new WeakMap<Engine, GrowthChannel>()
  const optionsOf = new WeakMap<Engine, HostOptions>()
  return {
    async open(options, projections) {
      await platform.check?.(options)
      let storage
      try {
        const locks = platform.openLocks(options)
        storage = await openSealed(platform.openStorage(options), {
          key: options.encryption?.key, compression: options.compression, compressor: platform.compressor, cipher: platform.cipher,
          lock: () => lockWithin(locks, CODEC_META_KEY, 30_000),
        })
      } catch (err) {
        await platform.release?.(options)
        throw err
      }
      const channel = platform.openChannel?.(options)
      const engine = new Engine({
        storage,
        projections,
        checkpoint: options.checkpoint,
        maxEventBytes: options.maxEventBytes,
        locks: storage.encrypted ? keyChecked(platform.openLocks(options), storage) : platform.openLocks(options),
        onGrow: channel ? (id, length) => channel.announce(id, length) : undefined,
        onDelete: channel ? (id) => channel.announce(id, -1) : undefined,
        watchSession: channel?.watch ? (id) => channel.watch!(id) : undefined,
      })
      optionsOf.set(engine, options)
      sealed.set(engine, storage)
      if (channel) {
        channel.listen((id, length, tail) => void engine.follow(id, length, storage.encrypted ? undefined : plainTail(tail)))
        channels.set(engine, channel)
      }
      return engine
    },
    async close(engine) {
      channels.get(engine)?.close()
      await engine.close()
      const options = optionsOf.get(engine)
      if (options) await platform.release?.(options)
    },
  }
}

/**
 * One engine per store for every connection of a SharedWorker (tabs opening the same database
 * share it); it lives as long as the worker.
 */
export function sharedEngines(platform: Platform): EngineSource {
  const engines = new Map<string, Promise<Engine>>()
  return {
    open(options, projections) {
      const key = JSON.stringify([options.storage, options.name, options.dir])
      let engine = engines.get(key)
      if (!engine) {
        const opening = ownEngine(platform).open(options, projections)
        engines.set(key, (engine = opening))
        // A failed open (a wrong key, say) is not kept: the next tab tries afresh.
        opening.catch(() => {
          if (engines.get(key) === opening) engines.delete(key)
        })
      }
      // Every tab's key is checked, not only the first one's.
      return engine.then(async (e) => {
        await sealedStorageOf(e).checkKey(options.encryption?.key)
        return e
      })
    },
    close: async () => {}, // other tabs may still use it
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
  for (const end = Date.now() + ms; ;) {
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
