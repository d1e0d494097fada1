// createStreamsHandler: Durable Streams (PROTOCOL.md 1.0, DESIGN §16) as a Fetch-API handler.
// Each stream is a session of the store, so what any Durable Streams client writes is folded,
// observed, synced and verified like every session, and what the SDK writes can be read and
// tailed by any client. The handler keeps nothing between requests that the store does not
// (the engine keeps each stream's protocol state beside its log, changed under the session's
// writer lock): several processes over one PostgreSQL store serve the same streams.
import type { Store } from '../../client/store'
import { SessionfoldError } from '../../core/errors'
import { isSessionId } from '../../core/limits'
import type { SessionId } from '../../core/model'
import { decodeOffset, encodeOffset, type ProducerTuple, type StreamAnswer, type StreamState } from '../../core/streams'
import { describe, isPlainObject } from '../../core/validate'
import type { Authorize } from '../../sync/server/handler'
import { answerTo, respond } from '../../sync/server/light-response'
import { H, TooLarge, Tails, baseHeaders, preflightHeaders, readBody, streamBody } from './http'
import { handleRead, type ReadContext } from './reads'

/** Options of {@link createStreamsHandler}. */
export interface StreamsHandlerOptions {
  /** The store whose sessions are the streams: any store (fs, PostgreSQL for several server processes, memory). */
  store: Store
  /** Asked on every request: `read` for GET and HEAD, `write` for PUT, POST and DELETE (see {@link Authorize}). */
  authorize: Authorize
  /** Where the streams are (default `/v1/stream`): a stream's URL is `${basePath}/${id}`. */
  basePath?: string
  /** Largest body read, in bytes (default 16 MiB); a larger one is 413 and writes nothing. */
  maxBodyBytes?: number
  /** How long a long-poll waits at the tail before answering 204 (default 20 s). */
  longPollMs?: number
  /** How often a waiting read looks for appends made elsewhere (default 100 ms); appends through this handler wake it at once. */
  pollMs?: number
  /** An SSE response ends after this long, and its client reconnects from its offset (default 60 s, as the protocol advises). */
  sseMs?: number
  /** `Access-Control-Allow-Origin` (default `*`). */
  allowOrigin?: string
}

/** A Fetch-API request handler: mount it in any server that speaks `Request`/`Response` (`toNodeListener` serves it with node:http). */
export type StreamsHandler = (request: Request) => Promise<Response>

const KNOWN = ['store', 'authorize', 'basePath', 'maxBodyBytes', 'longPollMs', 'pollMs', 'sseMs', 'allowOrigin']
const INTEGER = /^(0|[1-9]\d*)$/

/**
 * Serves the store's sessions as Durable Streams: PUT creates a stream (a fork with
 * `Stream-Forked-From`), POST appends (idempotent producers, `Stream-Seq`, closure), GET reads
 * (catch-up, `live=long-poll`, `live=sse`), HEAD tells the tail, DELETE deletes.
 *
 * @example
 * const handler = createStreamsHandler({ store, authorize: ({ request, sessionId }) => mayAccess(request, sessionId) })
 * http.createServer(toNodeListener(handler)).listen(4437, '127.0.0.1')
 */
export function createStreamsHandler(options: StreamsHandlerOptions): StreamsHandler {
  if (!isPlainObject(options as unknown)) throw new TypeError(`createStreamsHandler needs options, got ${describe(options)}`)
  for (const key of Object.keys(options)) if (!KNOWN.includes(key)) throw new TypeError(`createStreamsHandler has no option ${describe(key)}`)
  const { store, authorize } = options
  if (typeof authorize !== 'function') throw new TypeError('createStreamsHandler needs an authorize function: every request is authorized')
  if (!store || typeof store.streamRequest !== 'function') throw new TypeError('createStreamsHandler needs a store made by openStore()')
  const base = (options.basePath ?? '/v1/stream').replace(/\/+$/, '')
  const maxBody = options.maxBodyBytes ?? 16 * 1024 * 1024
  const headers = baseHeaders(options.allowOrigin ?? '*')
  const preflight = preflightHeaders(headers)
  const tails = new Tails()
  const fail = (status: number, message: string, extra: Record<string, string> = {}) =>
    respond(message, status, { ...headers, 'content-type': 'text/plain; charset=utf-8', ...extra })
  /** The answer to a request the engine refused (or found no stream for). */
  const missing = (answer: StreamAnswer): Response => {
    const detail = 'detail' in answer ? answer.detail : ''
    switch (answer.status) {
      case 'gone':
        return fail(410, 'the stream was deleted')
      case 'locked':
        return fail(503, 'the stream is open for writing elsewhere; try again', { 'retry-after': '1' })
      case 'source-missing':
        return fail(404, detail)
      case 'conflict':
      case 'source-gone':
      case 'type-mismatch':
      case 'seq-regression':
        return fail(409, detail)
      case 'bad-fork-offset':
      case 'bad-body':
        return fail(400, detail)
      case 'too-large':
        return fail(413, detail)
      default:
        return fail(404, 'no such stream')
    }
  }
  const ctx: ReadContext = {
    store,
    tails,
    longPollMs: options.longPollMs ?? 20_000,
    pollMs: options.pollMs ?? 100,
    sseMs: options.sseMs ?? 60_000,
    maxReadBytes: 1024 * 1024,
    maxAnswerBytes: 32 * 1024 * 1024,
    headers,
    fail,
    missing,
  }

  return async (request) => answerTo(request, await handle(request))

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const method = request.method.toUpperCase()
    if (method === 'OPTIONS') return respond(null, 204, preflight)
    if (!url.pathname.startsWith(`${base}/`)) return fail(404, 'not a stream')
    let id: string
    try {
      id = decodeURIComponent(url.pathname.slice(base.length + 1))
    } catch {
      return fail(400, 'the stream path is not valid')
    }
    if (!isSessionId(id)) return fail(400, 'a stream name is 1-128 characters of [A-Za-z0-9_-]')
    const access = method === 'GET' || method === 'HEAD' ? 'read' : 'write'
    let allowed: boolean | 'unauthenticated'
    try {
      allowed = await authorize({ request, sessionId: id, access })
    } catch {
      allowed = 'unauthenticated'
    }
    if (allowed === 'unauthenticated') return fail(401, 'unauthenticated')
    if (allowed !== true) return fail(403, `this request may not ${access} ${id}`)
    try {
      switch (method) {
        case 'GET':
          return await handleRead(ctx, id, url, request)
        case 'HEAD':
          return await head(id)
        case 'PUT':
          return await create(id, request)
        case 'POST':
          return await append(id, request)
        case 'DELETE': {
          const answer = await store.streamRequest({ op: 'delete', id })
          if (answer.status !== 'deleted') return missing(answer)
          tails.wake(id)
          return respond(null, 204, headers)
        }
        default:
          return fail(405, `${method} is not a stream method`, { allow: 'GET, HEAD, PUT, POST, DELETE, OPTIONS' })
      }
    } catch (err) {
      if (err instanceof TooLarge) return fail(413, err.message)
      // The code only: a storage error's message names files of the server, which a client has no business seeing.
      return fail(503, `the store could not answer (${err instanceof SessionfoldError ? err.code : 'an error'})`)
    }
  }

  function described(stream: StreamState): Record<string, string> {
    const h: Record<string, string> = { ...headers, 'content-type': stream.contentType, [H.offset]: encodeOffset(stream.length) }
    if (stream.closed) h[H.closed] = 'true'
    return h
  }

  async function head(id: SessionId): Promise<Response> {
    const answer = await store.streamRequest({ op: 'head', id })
    if (answer.status !== 'ok') return missing(answer)
    const { stream } = answer
    const h: Record<string, string> = {
      ...described(stream),
      'cache-control': 'no-store',
      etag: `"${id}:-1:${encodeOffset(stream.length)}${stream.closed ? ':c' : ''}"`,
    }
    if (stream.ttl !== undefined) h[H.ttl] = String(stream.ttl)
    if (stream.expiresAt !== undefined) h[H.expiresAt] = stream.expiresAt
    return respond(null, 200, h)
  }

  async function create(id: SessionId, request: Request): Promise<Response> {
    const get = (name: string) => request.headers.get(name) ?? undefined
    const from = get(H.forkedFrom)
    const ttl = get(H.ttl)
    const expiresAt = get(H.expiresAt)
    if (ttl !== undefined && expiresAt !== undefined) return fail(400, 'Stream-TTL and Stream-Expires-At do not go together')
    if (ttl !== undefined && (!INTEGER.test(ttl) || !Number.isSafeInteger(Number(ttl)))) return fail(400, 'Stream-TTL is a whole number of seconds')
    if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt))) return fail(400, 'Stream-Expires-At is an RFC 3339 time')
    const given = get('content-type')
    const typed = given !== undefined && /^[\w.+-]+\/[\w.+-]+/.test(given.trim())
    const contentType = typed ? given!.trim() : 'application/octet-stream'
    let fork: { from: SessionId; at?: number; sub?: number; contentTypeGiven: boolean } | undefined
    const forkOffset = get(H.forkOffset)
    const sub = get(H.forkSubOffset)
    if (from === undefined && (forkOffset !== undefined || sub !== undefined)) return fail(400, 'fork headers need Stream-Forked-From')
    if (from !== undefined) {
      const source = from.startsWith(`${base}/`) ? from.slice(base.length + 1) : from.replace(/^\/+/, '')
      if (!isSessionId(source)) return fail(404, 'no such source stream')
      const at = forkOffset === undefined ? undefined : decodeOffset(forkOffset)
      if (forkOffset !== undefined && at === undefined) return fail(400, 'Stream-Fork-Offset is not an offset this server gave')
      if (sub !== undefined && (!INTEGER.test(sub) || !Number.isSafeInteger(Number(sub)))) return fail(400, 'Stream-Fork-Sub-Offset is a whole number')
      fork = { from: source, contentTypeGiven: typed, ...(at === undefined ? {} : { at }), ...(sub === undefined ? {} : { sub: Number(sub) }) }
    }
    const bytes = await readBody(request, maxBody)
    const closed = get(H.closed)?.toLowerCase() === 'true'
    const answer = await store.streamRequest({
      op: 'create',
      id,
      config: { contentType, ...(ttl === undefined ? {} : { ttl: Number(ttl) }), ...(expiresAt === undefined ? {} : { expiresAt }), closed },
      ...(fork ? { fork } : {}),
      ...(bytes.byteLength > 0 ? { body: streamBody(bytes, /^application\/json\b/i.test(contentType) || (fork !== undefined && !typed)) } : {}),
    })
    switch (answer.status) {
      case 'created':
        tails.wake(id)
        return respond(null, 201, { ...described(answer.stream), location: new URL(request.url).href })
      case 'exists':
        return respond(null, 200, described(answer.stream))
      default:
        return missing(answer)
    }
  }

  async function append(id: SessionId, request: Request): Promise<Response> {
    const get = (name: string) => request.headers.get(name) ?? undefined
    const close = get(H.closed)?.toLowerCase() === 'true'
    const producerHeaders = [get(H.producerId), get(H.producerEpoch), get(H.producerSeq)]
    let producer: ProducerTuple | undefined
    if (producerHeaders.some((h) => h !== undefined)) {
      const [pid, epoch, seq] = producerHeaders
      if (pid === undefined || epoch === undefined || seq === undefined) return fail(400, 'Producer-Id, Producer-Epoch and Producer-Seq go together')
      if (pid === '') return fail(400, 'Producer-Id is empty')
      if (!/^\d+$/.test(epoch) || !Number.isSafeInteger(Number(epoch))) return fail(400, 'Producer-Epoch is a whole number')
      if (!/^\d+$/.test(seq) || !Number.isSafeInteger(Number(seq))) return fail(400, 'Producer-Seq is a whole number')
      producer = [pid, Number(epoch), Number(seq)]
    }
    const bytes = await readBody(request, maxBody)
    if (bytes.byteLength === 0 && !close) return fail(400, 'an append needs a body (or Stream-Closed: true)')
    const contentType = get('content-type')
    if (bytes.byteLength > 0 && contentType === undefined) return fail(400, 'an append needs its Content-Type')
    const streamSeq = get(H.seq)
    const body = bytes.byteLength > 0 ? streamBody(bytes, /^application\/json\b/i.test(contentType!.trim())) : undefined
    const answer = await store.streamRequest({
      op: 'append',
      id,
      close,
      ...(contentType === undefined ? {} : { contentType }),
      ...(body ? { body } : {}),
      ...(streamSeq === undefined ? {} : { streamSeq }),
      ...(producer ? { producer } : {}),
    })
    const echo = (seq: number): Record<string, string> => (producer ? { [H.producerEpoch]: String(producer[1]), [H.producerSeq]: String(seq) } : {})
    switch (answer.status) {
      case 'appended': {
        // A JSON stream's readers at its tail get the messages with the wake: the text a read makes of them.
        const json = body && 'json' in body && answer.stream.mode === 'json' ? body.json : undefined
        const from = answer.stream.length - (json?.length ?? 0)
        tails.wake(id, json ? { from, stream: answer.stream, body: `[${json.map((v) => JSON.stringify(v)).join(',')}]` } : undefined)
        const h: Record<string, string> = { ...headers, [H.offset]: encodeOffset(answer.stream.length), ...echo(producer?.[2] ?? 0) }
        if (answer.stream.closed) h[H.closed] = 'true'
        return respond(null, producer && bytes.byteLength > 0 ? 200 : 204, h)
      }
      case 'duplicate': {
        const h: Record<string, string> = { ...headers, [H.offset]: encodeOffset(answer.stream.length), ...echo(answer.producerSeq) }
        if (answer.stream.closed) h[H.closed] = 'true'
        return respond(null, 204, h)
      }
      case 'closed':
        return fail(409, 'the stream is closed', { [H.closed]: 'true', [H.offset]: encodeOffset(answer.stream.length) })
      case 'stale-epoch':
        return fail(403, 'a later epoch of this producer has written', { [H.producerEpoch]: String(answer.epoch) })
      case 'epoch-seq':
        return fail(400, 'a new epoch starts at Producer-Seq 0')
      case 'gap':
        return fail(409, 'Producer-Seq skips ahead', { [H.expectedSeq]: String(answer.expected), [H.receivedSeq]: String(answer.received) })
      default:
        return missing(answer)
    }
  }
}
