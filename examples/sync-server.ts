// A sync server for the demo (`npm run demo:sync`) and for the tests that drive it: an fs store
// served by createSyncHandler on node:http, with a control port that takes the sync server
// away (every connection dropped, nothing listening) and brings it back on the same port.
// Tokens are the demo's: `Bearer user1` may read and write the sessions whose ids start `u1-`.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { openStore, type Store } from '../src/index-node'
import { createSyncHandler, toNodeListener, type Authorize } from '../src/sync/server/index'

/** The demo's rule: a token `userN` reads and writes the sessions `uN-…`, nothing else. */
export const demoAuthorize: Authorize = ({ request, sessionId }) => {
  const token = request.headers.get('authorization')?.replace(/^Bearer /, '') ?? ''
  if (!/^user\d{1,3}$/.test(token)) return 'unauthenticated'
  return sessionId === undefined || sessionId.startsWith(`u${token.slice(4)}-`)
}

export interface DemoSyncServer {
  /** The store behind the handler. */
  store: Store
  /** http://127.0.0.1:<port>/sync: what devices connect to. */
  url: string
  /** http://127.0.0.1:<port>: POST /away, POST /back, GET /state. */
  control: string
  /** Takes the sync server away: connections dropped, the port closed. */
  away(): Promise<void>
  /** Brings it back on the same port. */
  back(): Promise<void>
  /** Stops both servers and closes the store. */
  close(): Promise<void>
  /** Live streams (GET /sync/live) open now: one per device, however many tabs it has open. */
  liveStreams(): number
}

export async function startDemoSyncServer(options: { dir: string; port?: number; controlPort?: number; pollMs?: number }): Promise<DemoSyncServer> {
  const store = await openStore({ storage: 'fs', dir: options.dir })
  const handler = createSyncHandler({ store, authorize: demoAuthorize, basePath: '/sync', allowOrigin: '*', pollMs: options.pollMs ?? 100 })
  let port = options.port ?? 0
  let sync: Server | undefined
  let live = 0
  const listener = toNodeListener(handler)
  const up = async () => {
    sync = createServer((req, res) => {
      if (req.url?.startsWith('/sync/live')) {
        live++
        res.once('close', () => live--)
      }
      listener(req, res)
    })
    await new Promise<void>((resolve, reject) => {
      sync!.once('error', reject)
      sync!.listen(port, '127.0.0.1', () => resolve())
    })
    port = (sync.address() as AddressInfo).port
  }
  const down = async () => {
    const s = sync
    sync = undefined
    if (!s) return
    s.closeAllConnections()
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }
  await up()
  const cors = { 'access-control-allow-origin': '*', 'content-type': 'application/json' }
  const control = createServer((req, res) => {
    void (async () => {
      if (req.method === 'POST' && req.url === '/away') await down()
      else if (req.method === 'POST' && req.url === '/back') {
        if (!sync) await up()
      } else if (!(req.method === 'GET' && req.url === '/state')) {
        res.writeHead(req.method === 'OPTIONS' ? 204 : 404, { ...cors, 'access-control-allow-methods': 'GET, POST' })
        return res.end()
      }
      res.writeHead(200, cors)
      res.end(JSON.stringify({ up: sync !== undefined }))
    })()
  })
  await new Promise<void>((resolve) => control.listen(options.controlPort ?? 0, '127.0.0.1', () => resolve()))
  const controlPort = (control.address() as AddressInfo).port
  return {
    store,
    url: `http://127.0.0.1:${port}/sync`,
    control: `http://127.0.0.1:${controlPort}`,
    away: down,
    back: async () => {
      if (!sync) await up()
    },
    liveStreams: () => live,
    async close() {
      await down()
      control.closeAllConnections()
      await new Promise<void>((resolve) => control.close(() => resolve()))
      await store.close()
    },
  }
}
