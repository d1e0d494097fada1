// The engine in this thread (worker: false, or where no worker can start): the store calls the
// host directly, with the app's units. Loaded on first use, so a store in a worker never loads
// the engine here.
import type { Platform } from '../../worker/platform'
import type { ProjectionDefinition } from '../projection'
import type { Connection } from './connection'

export async function connectInThread(projections: readonly ProjectionDefinition[], platform: () => Promise<Platform>): Promise<Connection> {
  const [{ EngineHost, ownEngine }, engineOn] = await Promise.all([import('../../worker/host'), platform()])
  const host = new EngineHost(projections, ownEngine(engineOn))
  return { api: host, died: new Promise(() => {}), end: async () => {} }
}
