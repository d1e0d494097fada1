// serveEngine in a browser worker, on the backends of a platform: sessionfold/worker's
// (serve-browser.ts: every backend) and the default worker's (browser.ts: OPFS's code left out,
// src/backends/browser.ts) and the OPFS worker's (browser-opfs.ts: every backend).
import { expose, type Endpoint } from 'comlink'
import type { Platform } from '../../backends/platform'
import { registerErrorTransfer } from '../../core/transfer'
import { EngineHost, appOf, ownEngine, postPushes, type ServeEngineOptions, sharedEngines } from '../host'

/** serveEngine (serve-browser.ts) on the backends of `platform`. */
export async function serveEngineOn(platform: Platform, options: ServeEngineOptions = {}): Promise<void> {
  registerErrorTransfer()
  const app = appOf(options)
  const scope = globalThis as unknown as { onconnect?: unknown }
  if ('onconnect' in scope) {
    // A SharedWorker: each tab gets its own host (its own handles) over one shared engine, so
    // all tabs share one lock table, one set of live sessions, one cache.
    const shared = sharedEngines(platform)
    scope.onconnect = (event: MessageEvent) => {
      const port = event.ports[0]!
      expose(new EngineHost(app, shared, postPushes(port)), port)
      port.start()
    }
    return
  }
  expose(new EngineHost(app, ownEngine(platform), postPushes(globalThis as unknown as MessagePort)), globalThis as unknown as Endpoint)
}
