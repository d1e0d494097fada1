// Support: a real node:http server with the sync handler over a store, on 127.0.0.1, and
// devices connected to it (test/server). Each test file passes its own list of cleanups.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Store } from 'sessionfold'
import { createSyncHandler, toNodeListener, type Authorize } from '../../src/sync/server/index'
import type { Replication } from '../../src/sync/connect'

export type Cleanups = (() => Promise<unknown>)[]

/** Tokens of the tests: `user1` may read and write sessions whose ids start `u1-`, and so on. */
export const authorize: Authorize = ({ request, sessionId }) => {
  const token = request.headers.get('authorization')?.replace(/^Bearer /, '')
  if (!token || !/^user\d$/.test(token)) return 'unauthenticated'
  return sessionId === undefined || sessionId.startsWith(`u${token.slice(4)}-`)
}

export interface Running {
  url: string
  port: number
  server: Server
  stop(): Promise<void>
  start(): Promise<void>
}

/** A node:http server with the sync handler over `store`, on 127.0.0.1 (a free port, or `port`). */
export async function serve(store: Store, cleanups: Cleanups, port = 0, extra: Partial<Parameters<typeof createSyncHandler>[0]> = {}): Promise<Running> {
  const handler = createSyncHandler({ store, authorize, pollMs: 50, ...extra })
  let server = createServer(toNodeListener(handler))
  const listen = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  await listen()
  port = (server.address() as AddressInfo).port
  const running: Running = {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
    async start() {
      server = createServer(toNodeListener(handler))
      running.server = server
      await listen()
    },
  }
  cleanups.push(() => running.stop())
  return running
}

/** `store.connect` with a test token, short retry waits, closed with the test. */
export function connect(store: Store, url: string, token: string, cleanups: Cleanups, options: Parameters<Store['connect']>[1] = {}): Replication {
  const r = store.connect(url, { headers: { authorization: `Bearer ${token}` }, pollMs: 50, maxBackoffMs: 300, ...options })
  cleanups.push(() => r.close())
  return r
}
