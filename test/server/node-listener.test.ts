// toNodeListener hands a handler a Request made without undici's Request where it can (see
// src/sync/server/node.ts): these check that it is still a whole Request to a handler that asks
// for more than its method, URL, headers and signal, and that its signal aborts when the client goes.
import * as http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/sync/server/index'

let server: http.Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
  server = undefined
})

async function serve(handler: (request: Request) => Promise<Response>): Promise<string> {
  server = http.createServer(toNodeListener(handler))
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('toNodeListener: the Request a handler gets', () => {
  it('is a Request: method, URL, headers, and a small body read by text(), clone() and arrayBuffer()', async () => {
    const url = await serve(async (request) => {
      const copy = request.clone()
      const seen = {
        isRequest: request instanceof Request,
        method: request.method,
        url: request.url,
        header: request.headers.get('x-one'),
        many: request.headers.get('x-many'),
        text: await request.text(),
        bodyUsed: request.bodyUsed,
        copy: new TextDecoder().decode(await copy.arrayBuffer()),
        aborted: request.signal.aborted,
      }
      return Response.json(seen)
    })
    const answer = await fetch(`${url}/a/b?c=1`, { method: 'POST', headers: { 'x-one': 'first', 'content-type': 'text/plain' }, body: 'hello, handler' })
    expect(await answer.json()).toEqual({
      isRequest: true,
      method: 'POST',
      url: `${url}/a/b?c=1`,
      header: 'first',
      many: null,
      text: 'hello, handler',
      bodyUsed: true,
      copy: 'hello, handler',
      aborted: false,
    })
  })

  it('a body over 64 KiB streams in whole, and a GET has none', async () => {
    const url = await serve(async (request) => {
      if (request.method === 'GET') return Response.json({ body: request.body === null })
      const bytes = new Uint8Array(await request.arrayBuffer())
      return Response.json({ size: bytes.byteLength, last: bytes[bytes.byteLength - 1] })
    })
    const big = new Uint8Array(300_000).map((_, i) => i % 251)
    const posted = await fetch(url, { method: 'PUT', body: big })
    expect(await posted.json()).toEqual({ size: 300_000, last: (300_000 - 1) % 251 })
    expect(await (await fetch(url)).json()).toEqual({ body: true })
  })

  it('the signal aborts when the client goes before the answer, whether the handler read it before or after', async () => {
    const heard: string[] = []
    let early: AbortSignal | undefined
    const url = await serve(async (request) => {
      const late = request.url.endsWith('/late')
      if (!late) early = request.signal
      await new Promise((resolve) => setTimeout(resolve, 300))
      const signal = late ? request.signal : early!
      heard.push(`${late ? 'late' : 'early'} ${signal.aborted}`)
      return new Response('too late')
    })
    for (const path of ['/early', '/late']) {
      const client = new AbortController()
      const asked = fetch(url + path, { signal: client.signal }).catch((err: Error) => err.name)
      await new Promise((resolve) => setTimeout(resolve, 100))
      client.abort()
      expect(await asked).toBe('AbortError')
    }
    await expect.poll(() => heard.length).toBe(2)
    expect(heard).toEqual(['early true', 'late true'])
  })
})
