// The loop of a follow (follow.ts): reads the stream from the offset the copy is at, has the
// engine append what came with the new offset (kept together, so a restart resumes there and
// copies nothing twice), then tails it with long-polls; status and backoff are a replication's
// (link.ts). Loaded at the first follow.
import { toBase64 } from '../core/base64'
import { SessionfoldError } from '../core/errors'
import { isPlainObject } from '../core/validate'
import type { FollowHost } from './types'
import { HttpFailure, Link } from './link'

const LONG_POLL_TIMEOUT_MS = 60_000

export async function runFollow(host: FollowHost): Promise<void> {
  const { id } = host.state()
  const { signal, options, url } = host
  const link = new Link({ options, signal, set: (patch) => host.set(patch), setKick: (kick) => host.setKick(kick) })
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        host.setKick(undefined)
        resolve()
      }
      const timer = setTimeout(done, ms)
      host.setKick(done)
      if (signal.aborted) done()
    })
  const head = await host.request({ op: 'head', id })
  if (head.status === 'ok' && head.stream.follow) {
    if (head.stream.follow.url !== url) throw new SessionfoldError('SESSION_EXISTS', `${id} copies another stream, ${head.stream.follow.url}`)
    host.set({ offset: head.stream.follow.offset })
  }
  const fetcher = options.fetch ?? fetch
  let caughtUp = false
  while (!signal.aborted) {
    try {
      const offset: string | null = host.state().offset
      const live: boolean = caughtUp && options.live !== false
      const query: string = `offset=${encodeURIComponent(offset ?? '-1')}${live ? '&live=long-poll' : ''}`
      const given = options.headers
      const headers = typeof given === 'function' ? await given() : (given ?? {})
      const response: Response = await fetcher(`${url}${url.includes('?') ? '&' : '?'}${query}`, {
        headers,
        signal: AbortSignal.any([signal, AbortSignal.timeout(LONG_POLL_TIMEOUT_MS)]),
      })
      if (!response.ok) {
        const text = await response.text().catch(() => '')
        throw new HttpFailure(response.status, `HTTP_${response.status}`, text.slice(0, 200) || `the stream's server answered ${response.status}`)
      }
      link.succeeded('round')
      const next = response.headers.get('stream-next-offset') ?? offset
      const closed = response.headers.get('stream-closed') === 'true'
      caughtUp = response.headers.get('stream-up-to-date') === 'true' || response.status === 204
      const events = response.status === 204 ? [] : eventsOf(await response.arrayBuffer(), response.headers.get('content-type') ?? '')
      if (next !== null && (events.length > 0 || next !== offset)) {
        const answer = await host.request({ op: 'follow', id, url, from: offset, to: next, events })
        if (answer.status === 'locked') {
          await sleep(options.pollMs ?? 1000) // open for writing here: copied once it is let go
          continue
        }
        if (answer.status !== 'followed')
          throw new SessionfoldError(answer.status === 'conflict' ? 'SESSION_EXISTS' : 'INVALID_ARGUMENT', 'detail' in answer ? answer.detail : answer.status)
        host.set({ offset: next, copied: host.state().copied + events.length })
      }
      if (closed && caughtUp) {
        host.set({ status: 'closed' })
        return
      }
      if (caughtUp && !live && options.live === false) await sleep(options.pollMs ?? 1000)
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof SessionfoldError && err.code !== 'STORAGE_UNAVAILABLE') throw err
      caughtUp = false
      await link.retry('round', err)
    }
  }
}

/**
 * The events a read's body makes: each JSON message an event when it is one (`{ type, data?,
 * time? }`, as the session's own stream gives them, `seq` dropped), else `{ type: 'message',
 * data: message }`; a body of another type one `message` event (its text, or base64 when binary).
 */
function eventsOf(body: ArrayBuffer, contentType: string): unknown[] {
  const bytes = new Uint8Array(body)
  if (bytes.byteLength === 0) return []
  const type = contentType.split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json') {
    const messages = JSON.parse(new TextDecoder().decode(bytes)) as unknown[]
    return messages.map((m) => {
      if (isPlainObject(m) && typeof m.type === 'string' && Object.keys(m).every((k) => ['seq', 'type', 'data', 'time'].includes(k))) {
        const { seq: _, ...event } = m
        return event
      }
      return { type: 'message', data: m }
    })
  }
  if (type.startsWith('text/')) return [{ type: 'message', data: new TextDecoder().decode(bytes) }]
  return [{ type: 'message', data: toBase64(bytes) }]
}
