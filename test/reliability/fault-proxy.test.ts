// Reliability: the fault proxy of the sync chaos run does what it says — each fault as described, offline devices refused, decisions fixed by the seed (§12 sync over HTTP)
// An upstream node:http server records what reaches it; requests go through the proxy with one
// kind of fault at a time, and what the client sees and what the upstream got are compared.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { FAULT_KINDS, startFaultProxy, type FaultKind, type FaultProxy } from '../support/fault-proxy'

let upstream: Server
let port: number
const arrived: string[] = []
const BIG = 'y'.repeat(20_000)

beforeAll(async () => {
  upstream = createServer((req, res) => {
    arrived.push(req.url ?? '')
    req.resume()
    if (req.url?.startsWith('/live')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const t = setInterval(() => res.write(`event: changes\ndata: ${'z'.repeat(500)}\n\n`), 20)
      res.once('close', () => clearInterval(t))
      return
    }
    req.once('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ url: req.url, big: BIG }))
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', () => resolve()))
  port = (upstream.address() as AddressInfo).port
})
afterAll(async () => {
  upstream.closeAllConnections()
  await new Promise((resolve) => upstream.close(resolve))
})

const proxies: FaultProxy[] = []
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.close()
  arrived.length = 0
})

const only = (kind: FaultKind) => Object.fromEntries(FAULT_KINDS.map((k) => [k, k === kind ? 1 : 0])) as Record<FaultKind, number>
async function proxy(weights: Record<FaultKind, number> | ((device: string) => Record<FaultKind, number>), seed = 1): Promise<FaultProxy> {
  const p = await startFaultProxy({ seed, devices: ['a', 'b'], weights })
  proxies.push(p)
  p.setUpstream(port)
  return p
}
/** The body as text, or the error reading it gave. */
const get = (p: FaultProxy, path: string, device = 'a') =>
  fetch(`${p.url(device)}${path}`, { method: 'POST', body: 'hello' })
    .then((r) => r.text())
    .catch((err: Error) => err)
const until = async (f: () => boolean) => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 25))
  expect(f()).toBe(true)
}

describe('the fault proxy', () => {
  it('passes a request and its answer whole', async () => {
    const p = await proxy(only('pass'))
    expect(JSON.parse((await get(p, '/x')) as string)).toEqual({ url: '/x', big: BIG })
    expect(arrived).toEqual(['/x'])
    expect(p.stats).toMatchObject({ requests: 1, byDevice: { a: 1, b: 0 }, faults: { pass: 1 } })
  })

  it('drop-request: the client gets no answer and the server nothing', async () => {
    const p = await proxy(only('drop-request'))
    expect(await get(p, '/x')).toBeInstanceOf(Error)
    expect(arrived).toEqual([])
  })

  it('drop-response: the server got it, the client gets no answer', async () => {
    const p = await proxy(only('drop-response'))
    expect(await get(p, '/x')).toBeInstanceOf(Error)
    expect(arrived).toEqual(['/x'])
  })

  it('duplicate: the server gets it twice (now or later), the client one answer', async () => {
    const p = await proxy(only('duplicate'))
    for (let i = 0; i < 4; i++) expect(JSON.parse((await get(p, `/d${i}`)) as string).url).toBe(`/d${i}`)
    await until(() => arrived.length === 8)
    expect([...arrived].sort()).toEqual(['/d0', '/d0', '/d1', '/d1', '/d2', '/d2', '/d3', '/d3'])
  })

  it('cut-body: the answer ends before its length, an SSE stream in the middle', async () => {
    const p = await proxy(only('cut-body'))
    for (let i = 0; i < 3; i++) expect(await get(p, '/x')).toBeInstanceOf(Error)
    const response = await fetch(`${p.url('a')}/live`)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const reader = response.body!.getReader()
    const ended = await (async () => {
      try {
        for (;;) if ((await reader.read()).done) return 'ended'
      } catch {
        return 'cut'
      }
    })()
    expect(ended).toBe('cut')
  })

  it('reorder: a request is held while later ones pass', async () => {
    const p = await proxy((device) => only(device === 'a' ? 'reorder' : 'pass'))
    const held = get(p, '/first', 'a')
    await new Promise((r) => setTimeout(r, 100))
    for (let i = 0; i < 4; i++) await get(p, `/later${i}`, 'b')
    await held
    expect(arrived.indexOf('/later0')).toBeLessThan(arrived.indexOf('/first'))
  })

  it('delays either way still deliver', async () => {
    for (const kind of ['delay-request', 'delay-response'] as const) {
      const p = await proxy(only(kind))
      expect(JSON.parse((await get(p, `/${kind}`)) as string).url).toBe(`/${kind}`)
    }
  })

  it('an offline device is refused until it is back; a server that is down gets 502', async () => {
    const p = await proxy(only('pass'))
    p.setOffline('a', true)
    expect(await get(p, '/x')).toBeInstanceOf(Error)
    expect(p.stats.refused).toBeGreaterThan(0)
    expect(JSON.parse((await get(p, '/y', 'b')) as string).url).toBe('/y')
    p.setOffline('a', false)
    expect(JSON.parse((await get(p, '/z')) as string).url).toBe('/z')
    p.setUpstream(undefined)
    const down = await fetch(`${p.url('a')}/w`, { method: 'POST', body: 'x' })
    expect(down.status).toBe(502)
    expect(await down.json()).toMatchObject({ error: { code: 'BAD_GATEWAY' } })
    expect(p.stats.badGateway).toBe(1)
  })

  it('one seed makes the same decisions per device and request number; another seed others', async () => {
    const decisions = async (seed: number) => {
      const p = await proxy(
        { pass: 10, 'drop-request': 10, 'drop-response': 10, 'delay-request': 0, 'delay-response': 0, duplicate: 10, reorder: 0, 'cut-body': 10 },
        seed,
      )
      for (let i = 0; i < 12; i++) await get(p, `/n${i}`, i % 2 ? 'a' : 'b')
      return { ...p.stats.faults }
    }
    const first = await decisions(5)
    expect(await decisions(5)).toEqual(first)
    expect(await decisions(6)).not.toEqual(first)
  })
})
