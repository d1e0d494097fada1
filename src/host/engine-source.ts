// Where a host gets its engine: its own, opened by openEngine and closed with the host; or,
// for a SharedWorker, one engine per store shared by every connection.
import type { ProjectionDefinition } from '../core/projection'
import type { HostOptions } from './options'
import type { Platform } from '../backends/platform'
import { openEngine, storeKeyOf, type EngineSettings, type OpenedEngine } from './open-engine'

/** Where a host gets its engine: its own (the default), or one shared by every connection. */
export interface EngineSource {
  open(options: HostOptions, projections: readonly ProjectionDefinition[]): Promise<OpenedEngine>
  close(opened: OpenedEngine): Promise<void>
}

/** A host's own engine on this platform's storage: closed with the host. */
export function ownEngine(platform: Platform, extra: Pick<EngineSettings, 'streams'> = {}): EngineSource {
  return {
    open: ({ store, aliveLock: _alive, tabLock: _tab, ...settings }, projections) => openEngine(platform, store, { ...settings, ...extra, projections }),
    close: (opened) => opened.close(),
  }
}

/**
 * One engine per store for every connection of a SharedWorker (tabs opening the same database
 * share it); it lives as long as the worker.
 */
export function sharedEngines(platform: Platform): EngineSource {
  const engines = new Map<string, Promise<OpenedEngine>>()
  const own = ownEngine(platform)
  return {
    open(options, projections) {
      const key = storeKeyOf(options.store)
      let opened = engines.get(key)
      if (!opened) {
        const opening = own.open(options, projections)
        engines.set(key, (opened = opening))
        // A failed open (a wrong key, say) is not kept: the next tab tries afresh.
        opening.catch(() => {
          if (engines.get(key) === opening) engines.delete(key)
        })
      }
      // Every tab's key is checked, not only the first one's.
      return opened.then(async (o) => {
        await o.storage.checkKey(options.encryption?.key)
        return o
      })
    },
    close: async () => {}, // other tabs may still use it
  }
}
