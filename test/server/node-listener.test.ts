// toNodeListener hands a handler a Request made without undici's Request where it can (see
// src/sync/server/node.ts): these check that it is still a whole Request to a handler that asks
// for more than its method, URL, headers and signal, and that its signal aborts when the client goes.
import * as http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { respond } from '../../src/sync/server/light-response'
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

describe('toNodeListener: a light Response (respond)', () => {
  it('goes out as given: status, headers, a whole body with its length (not chunked), bytes too', async () => {
    const url = await serve(async (request) => {
      if (request.url.endsWith('/none')) return respond(null, 204, { 'x-kind': 'none' })
      if (request.url.endsWith('/bytes')) return respond(new Uint8Array([1, 2, 3, 250]), 200, { 'content-type': 'application/octet-stream' })
      return respond('héllo', 201, { 'content-type': 'text/plain; charset=utf-8', 'x-kind': 'text' })
    })
    const text = await fetch(`${url}/text`)
    expect([text.status, text.headers.get('x-kind'), text.headers.get('content-length'), text.headers.get('transfer-encoding')]).toEqual([
      201,
      'text',
      '6',
      null,
    ])
    expect(await text.text()).toBe('héllo')
    const bytes = await fetch(`${url}/bytes`)
    expect([...new Uint8Array(await bytes.arrayBuffer())]).toEqual([1, 2, 3, 250])
    const none = await fetch(`${url}/none`)
    expect([none.status, none.headers.get('x-kind'), await none.text()]).toEqual([204, 'none', ''])
  })

  it('is a whole Response to anyone who looks into it, and what they change of it is what goes out', async () => {
    const made = respond('{"a":1}', 200, { 'content-type': 'application/json', 'x-one': '1' })
    expect(made).toBeInstanceOf(Response)
    expect([made.status, made.ok, made.headers.get('x-one')]).toEqual([200, true, '1'])
    expect(await made.clone().json()).toEqual({ a: 1 })
    expect(await made.text()).toBe('{"a":1}')
    expect(made.bodyUsed).toBe(true)
    // A middleware that adds a header to the handler's answer: the header goes out.
    const url = await serve(async () => {
      const answer = respond('body', 200, { 'x-one': '1' })
      answer.headers.set('x-added', 'yes')
      return answer
    })
    const answer = await fetch(url)
    expect([answer.headers.get('x-one'), answer.headers.get('x-added'), await answer.text()]).toEqual(['1', 'yes', 'body'])
  })
})
