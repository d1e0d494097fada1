// A fault-injecting HTTP proxy on 127.0.0.1, between sync devices and their server: one port per
// device, and per request a decision drawn from the seed, the device and the request's number
// (so one seed makes the same choices as far as timing allows): pass it, drop the request
// (the socket closed before anything is forwarded), drop the response (forwarded, then the
// socket closed without an answer), delay it either way, duplicate it (forwarded twice, one
// answer), reorder it (held while later requests pass), or cut the response body mid-stream
// (live streams included). A device can be taken offline (its connections refused), and the
// upstream changed or taken away while the server restarts (then requests get 502, as from a
// gateway whose backend is down).
import { request as httpRequest, createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { seeded, type Random } from './seeded'

export const FAULT_KINDS = ['pass', 'drop-request', 'drop-response', 'delay-request', 'delay-response', 'duplicate', 'reorder', 'cut-body'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

/** The default mix: about half of the requests meet a fault. */
export const DEFAULT_FAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = {
  pass: 50,
  'drop-request': 7,
  'drop-response': 7,
  'delay-request': 6,
  'delay-response': 6,
  duplicate: 8,
  reorder: 7,
  'cut-body': 9,
}

export interface FaultProxyOptions {
  seed: number
  /** One port each. */
  devices: readonly string[]
  /** The mix of decisions, for every device or per device (default {@link DEFAULT_FAULT_WEIGHTS}). */
  weights?: Readonly<Record<FaultKind, number>> | ((device: string) => Readonly<Record<FaultKind, number>>)
}

export interface ProxyStats {
  requests: number
  byDevice: Record<string, number>
  faults: Record<FaultKind, number>
  /** Connections refused while their device was offline. */
  refused: number
  /** Requests answered 502: the server was down or went away before it answered. */
  badGateway: number
  /** Failures of the proxy itself (a bug here, not in what it relays). */
  errors: string[]
}

export interface FaultProxy {
  /** The URL a device connects to. */
  url(device: string): string
  /** Where requests go: the server's port, or undefined while it is down. */
  setUpstream(port: number | undefined): void
  /** Takes a device offline (its connections refused, the open ones closed) or back. */
  setOffline(device: string, offline: boolean): void
  /** From now on every request passes, and held requests go on. */
  calm(): void
  readonly stats: ProxyStats
  /** Requests being handled, live streams left out (they stay open while all is quiet). */
  busy(): number
  close(): Promise<void>
}

interface Forwarded {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: Buffer
}

interface Upstream {
  response: IncomingMessage
  abort(): void
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'proxy-connection', 'upgrade', 'te', 'trailer'])
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const isStream = (r: IncomingMessage) => String(r.headers['content-type'] ?? '').includes('text/event-stream')

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP.has(k.toLowerCase())))
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.once('end', () => resolve(Buffer.concat(chunks)))
    stream.once('error', reject)
    stream.once('aborted', () => reject(new Error('aborted')))
    stream.once('close', () => {
      if (!stream.complete) reject(new Error('closed before its end'))
    })
  })
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const given = options.weights ?? DEFAULT_FAULT_WEIGHTS
  const weightsOf = typeof given === 'function' ? given : () => given
  const stats: ProxyStats = {
    requests: 0,
    byDevice: Object.fromEntries(options.devices.map((d) => [d, 0])),
    faults: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>,
    refused: 0,
    badGateway: 0,
    errors: [],
  }
  let upstream: number | undefined
  let calm = false
  let busy = 0
  const offline = new Set<string>()
  const sockets = new Map<string, Set<Socket>>()
  const upstreams = new Set<Upstream>()
  /** Requests held back (reorder): each goes on after `left` more arrive, or at its timer. */
  const held = new Set<{ left: number; go: () => void }>()
  const timers = new Set<NodeJS.Timeout>()
  const later = (ms: number, f: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t)
      f()
    }, ms)
    timers.add(t)
  }

  function forward(req: Forwarded): Promise<Upstream> {
    const port = upstream
    if (port === undefined) return Promise.reject(new Error('the server is down'))
    return new Promise((resolve, reject) => {
      const out = httpRequest({
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.path,
        agent: false,
        headers: { ...endToEnd(req.headers), 'content-length': String(req.body.length) },
      })
      const up: Upstream = {
        response: undefined as unknown as IncomingMessage,
        abort: () => {
          upstreams.delete(up)
          out.destroy()
        },
      }
      upstreams.add(up)
      out.once('response', (response) => {
        up.response = response
        response.once('close', () => upstreams.delete(up))
        resolve(up)
      })
      out.once('error', (err) => {
        upstreams.delete(up)
        reject(err)
      })
      out.end(req.body)
    })
  }

  /** Reads and throws away an answer nobody gets (a duplicate's other copy); a stream is left after a moment. */
  async function discard(up: Upstream): Promise<void> {
    if (isStream(up.response)) {
      up.response.resume()
      await sleep(200)
      up.abort()
      return
    }
    await readAll(up.response).catch(() => {})
  }

  /** Sends the upstream's answer to the client: after `delayMs`, cut after `cutAt` bytes (or, for a stream, `cutMs`) when given. */
  async function relay(up: Upstream, res: ServerResponse, r: Random, how: { delayMs?: number; cut?: boolean } = {}): Promise<void> {
    const { response } = up
    res.once('close', () => up.abort())
    if (!isStream(response)) {
      const body = await readAll(response)
      if (how.delayMs) await sleep(how.delayMs)
      res.writeHead(response.statusCode ?? 502, { ...endToEnd(response.headers), 'content-length': String(body.length) })
      if (!how.cut) return void res.end(body)
      // Part of it flushed, then the connection ends without the rest.
      return void res.write(body.subarray(0, Math.floor(body.length * r.next())), () => res.destroy())
    }
    if (how.delayMs) await sleep(how.delayMs)
    res.writeHead(response.statusCode ?? 502, endToEnd(response.headers))
    res.flushHeaders()
    let left = how.cut ? r.int(1, 6000) : Infinity
    if (how.cut) later(r.int(100, 4000), () => res.destroy())
    await new Promise<void>((resolve) => {
      let cut = false
      response.on('data', (chunk: Buffer) => {
        if (cut) return
        if (chunk.length < left) {
          left -= chunk.length
          return void res.write(chunk)
        }
        // The first `left` bytes go, then the connection ends in the middle of the stream.
        cut = true
        res.write(chunk.subarray(0, left), () => res.destroy())
        up.abort()
        resolve()
      })
      response.once('end', () => {
        res.end()
        resolve()
      })
      response.once('close', () => {
        if (!res.writableEnded) res.destroy()
        resolve()
      })
    })
  }

  function badGateway(res: ServerResponse, err: unknown): void {
    if (res.destroyed) return
    if (res.headersSent) return void res.destroy()
    stats.badGateway++
    res.writeHead(502, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { code: 'BAD_GATEWAY', message: `proxy: ${(err as Error).message}` } }))
  }

  async function handle(device: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const n = stats.byDevice[device]!++
    stats.requests++
    for (const h of [...held]) if (--h.left <= 0) h.go()
    const r = seeded(options.seed, 'proxy', device, n)
    const kind = calm ? 'pass' : r.weighted(weightsOf(device))
    stats.faults[kind]++
    let body: Buffer
    try {
      body = await readAll(req)
    } catch {
      return // the client went away while sending
    }
    const forwarded: Forwarded = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body }
    try {
      switch (kind) {
        case 'drop-request':
          return void req.socket.destroy()
        case 'drop-response': {
          const up = await forward(forwarded)
          if (isStream(up.response)) up.abort()
          else await readAll(up.response).catch(() => {})
          return void req.socket.destroy()
        }
        case 'delay-request':
          await sleep(r.int(50, 1500))
          return await relay(await forward(forwarded), res, r)
        case 'delay-response':
          return await relay(await forward(forwarded), res, r, { delayMs: r.int(50, 1500) })
        case 'duplicate': {
          const mode = r.pick(['parallel', 'sequential', 'late'] as const)
          if (mode === 'late') {
            // The copy arrives long after, when later requests have passed it.
            busy++
            later(
              r.int(200, 3000),
              () =>
                void forward(forwarded)
                  .then(discard)
                  .catch(() => {})
                  .finally(() => busy--),
            )
            return await relay(await forward(forwarded), res, r)
          }
          if (mode === 'sequential') {
            await discard(await forward(forwarded))
            return await relay(await forward(forwarded), res, r)
          }
          const copies = await Promise.allSettled([forward(forwarded), forward(forwarded)])
          const answered = r.int(0, 1)
          const other = copies[1 - answered]!
          if (other.status === 'fulfilled') void discard(other.value)
          const chosen = copies[answered]!
          if (chosen.status === 'rejected') throw chosen.reason
          return await relay(chosen.value, res, r)
        }
        case 'reorder':
          if (!calm) {
            await new Promise<void>((resolve) => {
              const h = { left: r.int(1, 4), go: () => void (held.delete(h), resolve()) }
              held.add(h)
              later(r.int(300, 2500), h.go)
            })
          }
          return await relay(await forward(forwarded), res, r)
        case 'cut-body':
          return await relay(await forward(forwarded), res, r, { cut: true })
        default:
          return await relay(await forward(forwarded), res, r)
      }
    } catch (err) {
      badGateway(res, err)
    }
  }

  const servers = new Map<string, { server: Server; port: number }>()
  for (const device of options.devices) {
    const open = new Set<Socket>()
    sockets.set(device, open)
    const server = createServer((req, res) => {
      const live = req.url?.startsWith('/live') === true
      if (!live) busy++
      res.once('close', () => {
        if (!live) busy--
      })
      handle(device, req, res).catch((err: unknown) => {
        stats.errors.push(`${device} ${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}`)
        res.destroy()
      })
    })
    server.on('connection', (socket: Socket) => {
      if (offline.has(device)) {
        stats.refused++
        return void socket.destroy()
      }
      open.add(socket)
      socket.once('close', () => open.delete(socket))
    })
    server.on('clientError', (_err, socket) => socket.destroy())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    servers.set(device, { server, port: (server.address() as AddressInfo).port })
  }

  return {
    url: (device) => `http://127.0.0.1:${servers.get(device)!.port}`,
    setUpstream(port) {
      upstream = port
    },
    setOffline(device, is) {
      if (!is) return void offline.delete(device)
      offline.add(device)
      for (const s of sockets.get(device)!) s.destroy()
    },
    calm() {
      calm = true
      offline.clear()
      for (const h of [...held]) h.go()
    },
    stats,
    busy: () => busy,
    async close() {
      calm = true
      for (const t of timers) clearTimeout(t)
      for (const h of [...held]) h.go()
      for (const up of [...upstreams]) up.abort()
      for (const { server } of servers.values()) {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      }
    },
  }
}
