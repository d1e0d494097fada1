// Where a host gets its engine: its own, opened by openEngine and closed with the host; or,
// for a SharedWorker, one engine per store shared by every connection.
import { checkedDefinitions, type EventDefinition } from '../core/events'
import type { ProjectionDefinition } from '../core/projection'
import type { HostOptions } from './options'
import { SessionfoldError } from '../core/errors'
import { describe, isPlainObject } from '../core/validate'
import type { Platform } from '../backends/platform'
import { openEngine, storeKeyOf, type EngineSettings, type OpenedEngine } from './open-engine'

/** Where a host gets its engine: its own (the default), or one shared by every connection. */
/** What a worker file passes to `serveEngine()` (`sessionfold/worker`, in Node and browsers alike). */
export interface ServeEngineOptions {
  /** The app's projection units, registered after the built-in ones. */
  projections?: readonly ProjectionDefinition[]
  /** The app's event definitions (`defineEvent`): appends are checked against them, reads upcast to their latest version. */
  events?: readonly EventDefinition[]
}

/** What an app adds to an engine: its units and its event definitions (serveEngine's options). */
export type AppDefinitions = ServeEngineOptions

/** serveEngine's options as the engine takes them: INVALID_ARGUMENT for anything but lists of units and event definitions. */
export function appOf(options: AppDefinitions): AppDefinitions {
  const bad = (why: string) => new SessionfoldError('INVALID_ARGUMENT', `serveEngine options ${why}`)
  if (!isPlainObject(options)) throw bad(`must be an object, got ${describe(options)}`)
  for (const key of Object.keys(options)) if (key !== 'projections' && key !== 'events') throw bad(`have no field ${describe(key)}`)
  if (options.projections !== undefined && !Array.isArray(options.projections)) throw bad('projections must be an array of defineProjection() units')
  return { projections: options.projections ?? [], events: checkedDefinitions(options.events ?? [], 'serveEngine') }
}

export interface EngineSource {
  open(options: HostOptions, app: AppDefinitions): Promise<OpenedEngine>
  close(opened: OpenedEngine): Promise<void>
}

/** A host's own engine on this platform's storage: closed with the host. */
export function ownEngine(platform: Platform, extra: Pick<EngineSettings, 'streams'> = {}): EngineSource {
  return {
    open: ({ store, aliveLock: _alive, tabLock: _tab, ...settings }, app) =>
      openEngine(platform, store, { ...settings, ...extra, projections: app.projections, events: app.events }),
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
    open(options, app) {
      const key = storeKeyOf(options.store)
      let opened = engines.get(key)
      if (!opened) {
        const opening = own.open(options, app)
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
