// toNodeListener: a Fetch-API handler served by node:http. Only types of node:http are
// imported, so this file costs an edge runtime nothing.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { WHOLE_BODY } from './body'
import { answerOf, delegateTo, SERVED_BY_NODE } from './light-response'
import type { SyncHandler } from './handler'

/**
 * Adapts a Fetch-API handler to `node:http`'s `(req, res)`: the request's body streams in,
 * the response's body streams out (server-sent events are flushed as they come), and a client
 * that goes away aborts the request's signal. The handler is given a `Request` (every member of
 * one, `instanceof Request`) whose method, URL, headers and signal are read off the incoming
 * message; the platform's own `Request` is made only when the handler asks for more of it
 * (`text()`, `body`, `clone()` ...), which keeps a small request's cost down.
 *
 * @example
 * http.createServer(toNodeListener(createSyncHandler({ store, authorize }))).listen(8787, '127.0.0.1')
 */
export function toNodeListener(handler: SyncHandler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // Only a client gone before its answer ended aborts (an abort makes a DOMException: a request's worth of CPU otherwise).
    let abort: AbortController | undefined
    let gone = false
    res.on('close', () => {
      if (res.writableFinished) return
      gone = true
      abort?.abort()
    })
    const signal = () => {
      abort ??= new AbortController()
      if (gone) abort.abort()
      return abort.signal
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
    void (async () => {
      try {
        // A small body of a known length is read whole first (cheaper than a stream for the Request); others stream in.
        const body = !hasBody ? undefined : Number(req.headers['content-length']) <= WHOLE_BODY_BYTES ? await whole(req) : streamOf(req)
        const request = nodeRequest(req, body, signal)
        const response = await handler(request)
        const answer = answerOf(response)
        if (answer) {
          // A light Response (light-response.ts): its headers and whole body in one write, its length told.
          const { body } = answer
          if (body !== null) res.setHeader('content-length', typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength)
          res.writeHead(answer.status, answer.headers)
          return void res.end(answer.body ?? undefined)
        }
        res.writeHead(response.status, Object.fromEntries(response.headers))
        if (!response.body) return void res.end()
        // Server-sent events: the headers go at once (the client waits for them before any event);
        // any other answer's go with its first bytes, and a body of one chunk in one write.
        if (response.headers.get('content-type')?.startsWith('text/event-stream')) res.flushHeaders()
        const reader = response.body.getReader()
        signal().addEventListener('abort', () => void reader.cancel().catch(() => {}), { once: true })
        let pending = reader.read()
        for (;;) {
          const { done, value } = await pending
          if (done) break
          pending = reader.read()
          // When the end is right behind this chunk (a body of one chunk): headers and body in one write.
          const settled = await Promise.race([pending, Promise.resolve(undefined)])
          if (settled?.done) return void res.end(value)
          // A client slower than the stream: wait until it took what was written.
          if (!res.write(value))
            await new Promise<void>((resolve) => {
              res.once('drain', resolve)
              res.once('close', resolve)
            })
        }
        res.end()
      } catch {
        // A body broken off after its headers went: the connection is cut, so that the client sees a
        // failed transfer rather than a short body that ended well.
        if (res.headersSent) return void res.destroy()
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end()
      }
    })()
  }
}

/**
 * The Request a handler is given: its method, URL, headers, signal and a body read whole are
 * had without undici's Request, whose making (its body as a web stream, its own signal) was a
 * fifth of the CPU of a small Durable Streams append. Anything else of a Request (`text()`,
 * `clone()`, `body` ...) makes the real one first and answers from it. The pattern is
 * `@hono/node-server`'s (src/request.ts).
 */
function nodeRequest(req: IncomingMessage, body: Uint8Array | ReadableStream<Uint8Array> | undefined, signal: () => AbortSignal): Request {
  const light = Object.create(LIGHT_REQUEST) as LightRequest
  light[INCOMING] = { req, body, signal }
  light[SERVED_BY_NODE] = true
  if (body instanceof Uint8Array) light[WHOLE_BODY] = body
  return light as unknown as Request
}

interface LightRequest {
  [INCOMING]: { req: IncomingMessage; body: Uint8Array | ReadableStream<Uint8Array> | undefined; signal: () => AbortSignal }
  [SERVED_BY_NODE]: true
  [WHOLE_BODY]?: Uint8Array
  [HEADERS]?: Headers
  [REAL]?: Request
}

const INCOMING = Symbol('incoming')
const HEADERS = Symbol('headers')
const REAL = Symbol('real')

function headersOf(light: LightRequest): Headers {
  if (light[HEADERS]) return light[HEADERS]
  const headers = new Headers()
  for (const [name, value] of Object.entries(light[INCOMING].req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  light[HEADERS] = headers
  return headers
}

function urlOf(req: IncomingMessage): string {
  return `http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`
}

function realOf(light: LightRequest): Request {
  if (light[REAL]) return light[REAL]
  const { req, body, signal } = light[INCOMING]
  light[REAL] = new Request(urlOf(req), {
    method: req.method,
    headers: headersOf(light),
    body: body as BodyInit | undefined,
    signal: signal(),
    // @ts-expect-error Node's fetch needs duplex for a streamed body; the DOM types do not know it
    duplex: 'half',
  })
  return light[REAL]
}

/** A Request's prototype whose method, URL, headers and signal come off the incoming message; every other member of Request asks the real one. */
const LIGHT_REQUEST: object = Object.create(Request.prototype, {
  method: {
    get(this: LightRequest) {
      return this[INCOMING].req.method ?? 'GET'
    },
  },
  url: {
    get(this: LightRequest) {
      return urlOf(this[INCOMING].req)
    },
  },
  headers: {
    get(this: LightRequest) {
      return headersOf(this)
    },
  },
  signal: {
    get(this: LightRequest) {
      return this[REAL]?.signal ?? this[INCOMING].signal()
    },
  },
})
delegateTo(LIGHT_REQUEST, Request.prototype, realOf)

/** Bodies of at most this many bytes (by their Content-Length) are read whole before the handler has them. */
const WHOLE_BODY_BYTES = 64 * 1024

function whole(req: IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
    req.on('error', reject)
    req.on('close', () => reject(new Error('the client went before its body ended'))) // no-op once resolved
  })
}

function streamOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.on('data', (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)))
      req.on('end', () => controller.close())
      req.on('error', (err) => controller.error(err))
    },
    cancel() {
      req.destroy()
    },
  })
}
