// GET on a stream (PROTOCOL.md §5.6-5.8): a catch-up read, a long-poll that waits at the tail,
// or server-sent events that go on as the stream grows. Readers wait on the handler's Tails
// (woken at once by an append through this handler) and look again every `pollMs` for
// appends made elsewhere (another process over the same store, an app's own writer).
import type { Store } from '../../client/store'
import type { SessionId } from '../../core/model'
import { decodeOffset, encodeOffset, mediaType, type StreamAnswer, type StreamState } from '../../core/streams'
import { toBase64 } from '../../core/base64'
import { respond } from '../../sync/server/light-response'
import { H, responseCursor, type Tails } from './http'

export interface ReadContext {
  store: Store
  tails: Tails
  /** How long a long-poll waits at the tail before 204, and an idle SSE stream between control events. */
  longPollMs: number
  pollMs: number
  /** An SSE response ends after this long (the client reconnects from its offset). */
  sseMs: number
  /** A page read of the engine, in bytes of body. */
  maxReadBytes: number
  /** A catch-up answer's bytes, about: past its first page, the pages to this much go out in the same answer. */
  maxAnswerBytes: number
  headers: Record<string, string>
  /** A refusal: status and message. */
  fail(status: number, message: string): Response
  /** The answer for a stream that is not there (404) or deleted while forks stand (410). */
  missing(answer: StreamAnswer): Response
}

type Read = Extract<StreamAnswer, { status: 'read' }>

export async function handleRead(ctx: ReadContext, id: SessionId, url: URL, request: Request): Promise<Response> {
  const offsets = url.searchParams.getAll('offset')
  if (offsets.length > 1) return ctx.fail(400, 'one offset parameter at most')
  const offset = offsets[0]
  const live = url.searchParams.get('live')
  if (live !== null && live !== 'long-poll' && live !== 'sse') return ctx.fail(400, `live must be long-poll or sse, got ${live}`)
  if (offset === '') return ctx.fail(400, 'the offset parameter is empty')
  if (live !== null && offset === undefined) return ctx.fail(400, `live=${live} needs an offset`)
  const given = offset === undefined || offset === '-1' || offset === 'now' ? undefined : decodeOffset(offset)
  if (offset !== undefined && offset !== '-1' && offset !== 'now' && given === undefined) return ctx.fail(400, 'the offset is not one this server gave')
  let from = given ?? 0
  let answer: StreamAnswer
  if (offset === 'now' || live === 'sse') {
    const head = await ctx.store.streamRequest({ op: 'head', id })
    if (head.status !== 'ok') return ctx.missing(head)
    if (offset === 'now') from = head.stream.length
    if (from > head.stream.length) return ctx.fail(400, 'the offset is past the end of the stream')
    if (live === 'sse') return sse(ctx, id, from, url.searchParams.get('cursor'), head.stream, request.signal)
    answer = await read(ctx, id, from) // a read: it resets a TTL's countdown
    if (answer.status !== 'read') return ctx.missing(answer)
    if (live === null) {
      const h: Record<string, string> = { ...ctx.headers, 'content-type': head.stream.contentType, [H.offset]: encodeOffset(from), [H.upToDate]: 'true' }
      h['cache-control'] = 'no-store'
      if (answer.stream.closed) h[H.closed] = 'true'
      return respond(head.stream.mode === 'bytes' ? '' : '[]', 200, h)
    }
  } else {
    // A catch-up or long-poll from an offset: one request of the engine for the stream and its messages.
    answer = await read(ctx, id, from)
    if (answer.status !== 'read') return ctx.missing(answer)
    if (from > answer.stream.length) return ctx.fail(400, 'the offset is past the end of the stream')
  }
  const headers: Record<string, string> = { ...ctx.headers, 'content-type': answer.stream.contentType }
  if (live === 'long-poll' && answer.count === 0) {
    const deadline = Date.now() + ctx.longPollMs
    const tail = ctx.tails.watch(id)
    try {
      while (answer.status === 'read' && answer.count === 0 && !answer.stream.closed && Date.now() < deadline && !request.signal.aborted) {
        await tail.wait(Math.min(ctx.pollMs, deadline - Date.now()), request.signal)
        answer = await read(ctx, id, from)
      }
    } finally {
      tail.stop()
    }
    if (answer.status !== 'read') return ctx.missing(answer)
    if (answer.count === 0) {
      const h: Record<string, string> = { ...ctx.headers, [H.offset]: encodeOffset(from), [H.upToDate]: 'true', 'cache-control': 'no-store' }
      if (answer.stream.closed) h[H.closed] = 'true'
      else h[H.cursor] = responseCursor(url.searchParams.get('cursor'))
      return respond(null, 204, h)
    }
  }
  // A catch-up that the first page does not finish goes on in the same answer (see `catchUpBody`).
  const next = live === null && answer.count > 0 ? catchUpEnd(answer, from, ctx.maxAnswerBytes) : from + answer.count
  const atTail = next === answer.stream.length
  const closedHere = answer.stream.closed && atTail
  if (atTail) headers[H.upToDate] = 'true'
  if (closedHere) headers[H.closed] = 'true'
  if (live === 'long-poll') headers[H.cursor] = responseCursor(url.searchParams.get('cursor'))
  headers[H.offset] = encodeOffset(next)
  const etag = `"${id}:${offset ?? '-1'}:${encodeOffset(next)}${closedHere ? ':c' : ''}"`
  headers.etag = etag
  headers['cache-control'] = answer.count > 0 ? 'private, max-age=60, stale-while-revalidate=300' : 'no-store'
  if (request.headers.get('if-none-match') === etag) return respond(null, 304, { ...ctx.headers, etag })
  const body = next > from + answer.count ? catchUpBody(ctx, id, answer, next) : answer.body
  return body instanceof ReadableStream ? new Response(body, { status: 200, headers }) : respond(body, 200, headers)
}

/**
 * Where a catch-up answer that starts with `first` ends: the stream's length when `first` was read,
 * or sooner, so that the answer holds about `maxBytes` at the first page's bytes a message.
 */
function catchUpEnd(first: Read, from: number, maxBytes: number): number {
  const size = typeof first.body === 'string' ? first.body.length : first.body.byteLength
  const perMessage = Math.max(1, size / first.count)
  return Math.min(first.stream.length, from + Math.max(first.count, Math.floor(maxBytes / perMessage)))
}

/**
 * The body of a catch-up answer from the first page to `end`: one answer, not a request a page. The
 * pages after the first are read while the one before goes out; each is cut into the one JSON array
 * (or bytes) the answer promised. A page that cannot be read (the stream deleted meanwhile, the store
 * closed) breaks the answer off, so that the client sees a failed transfer, never a short body.
 */
function catchUpBody(ctx: ReadContext, id: SessionId, first: Read, end: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const json = typeof first.body === 'string'
  let at = first.from + first.count
  const readFrom = (from: number): Promise<StreamAnswer> => {
    const page = read(ctx, id, from, end)
    page.catch(() => {}) // awaited by pull; this keeps a client gone meanwhile from leaving it unhandled
    return page
  }
  let ahead = readFrom(at)
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const body = first.body
      controller.enqueue(typeof body === 'string' ? encoder.encode(body.slice(0, -1)) : body)
    },
    async pull(controller) {
      const page = await ahead
      if (page.status !== 'read' || page.count === 0 || page.from !== at) throw new Error(`the stream's page at ${at} could not be read (${page.status})`)
      at += page.count
      if (at < end) ahead = readFrom(at)
      const body = page.body
      if (!json) controller.enqueue(body as Uint8Array)
      else controller.enqueue(encoder.encode(`,${(body as string).slice(1, at < end ? -1 : undefined)}`))
      if (at >= end) controller.close()
    },
  })
}

/** An SSE data line: `data:` and the text (a space between only when the text starts with one, which a parser takes off). */
function dataLine(line: string): string {
  return line.startsWith(' ') ? `data: ${line}` : `data:${line}`
}

/** A page of messages from `from`, not past `to` (the stream's length when not given). */
function read(ctx: ReadContext, id: SessionId, from: number, to?: number): Promise<StreamAnswer> {
  return ctx.store.streamRequest({ op: 'read', id, from, maxBytes: ctx.maxReadBytes, ...(to === undefined ? {} : { to }) })
}

/** Server-sent events from `from` on (PROTOCOL.md §5.8): data events, each followed by a control event. */
function sse(ctx: ReadContext, id: SessionId, start: number, cursor: string | null, stream: StreamState, signal: AbortSignal): Response {
  const type = mediaType(stream.contentType)
  const text = stream.mode !== 'bytes' || type.startsWith('text/')
  const encoder = new TextEncoder()
  const headers: Record<string, string> = { ...ctx.headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }
  if (!text) headers[H.sseEncoding] = 'base64'
  const stop = new AbortController()
  const abort = () => stop.abort()
  signal.addEventListener('abort', abort, { once: true })
  const ends = setTimeout(abort, ctx.sseMs)
  let from = start
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, event: string, data: string) =>
    controller.enqueue(
      encoder.encode(
        `event: ${event}\n${data
          .split(/\r\n|\r|\n/)
          .map(dataLine)
          .join('\n')}\n\n`,
      ),
    )
  const control = (controller: ReadableStreamDefaultController<Uint8Array>, answer: Read) => {
    const atTail = from === answer.stream.length
    const data: Record<string, unknown> = { streamNextOffset: encodeOffset(from) }
    if (answer.stream.closed && atTail) data.streamClosed = true
    else {
      data.streamCursor = responseCursor(cursor)
      if (atTail) data.upToDate = true
    }
    send(controller, 'control', JSON.stringify(data))
    return answer.stream.closed && atTail
  }
  const events = new ReadableStream<Uint8Array>({
    start: async (controller) => {
      const tail = ctx.tails.watch(id)
      try {
        let quietSince = Date.now()
        let first = true
        while (!stop.signal.aborted) {
          // The append this reader was woken by, when it brought the messages from here; else a read.
          const fresh = tail.fresh(from)
          const answer: StreamAnswer = fresh
            ? { status: 'read', stream: fresh.stream, from, count: fresh.stream.length - from, body: fresh.body }
            : await read(ctx, id, from)
          if (answer.status !== 'read') break
          if (answer.count > 0) {
            const payload = answer.body
            send(controller, 'data', typeof payload === 'string' ? payload : text ? new TextDecoder().decode(payload) : toBase64(payload))
            from += answer.count
          }
          if (answer.count > 0 || first || Date.now() - quietSince >= ctx.longPollMs || answer.stream.closed) {
            first = false
            quietSince = Date.now()
            if (control(controller, answer)) break
          }
          if (from === answer.stream.length) await tail.wait(ctx.pollMs, stop.signal)
        }
      } catch {
        // the store closed, or the client went: the stream ends
      } finally {
        tail.stop()
        clearTimeout(ends)
        signal.removeEventListener('abort', abort)
        try {
          controller.close()
        } catch {
          // cancelled by the client already
        }
      }
    },
    cancel: () => stop.abort(),
  })
  return new Response(events, { status: 200, headers })
}
