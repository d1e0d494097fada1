// The HTTP side of Durable Streams (PROTOCOL.md 1.0) shared by the handler's parts: header
// names, the headers every answer carries, bodies read within a bound, base64, the cursors
// of live reads, and the wake-ups of readers waiting at a stream's tail.
import { toBase64 } from '../../core/base64'
import { readBytes } from '../../sync/server/body'
import type { StreamBody, StreamState } from '../../core/streams'

export const H = {
  offset: 'Stream-Next-Offset',
  cursor: 'Stream-Cursor',
  upToDate: 'Stream-Up-To-Date',
  closed: 'Stream-Closed',
  seq: 'Stream-Seq',
  ttl: 'Stream-TTL',
  expiresAt: 'Stream-Expires-At',
  forkedFrom: 'Stream-Forked-From',
  forkOffset: 'Stream-Fork-Offset',
  forkSubOffset: 'Stream-Fork-Sub-Offset',
  producerId: 'Producer-Id',
  producerEpoch: 'Producer-Epoch',
  producerSeq: 'Producer-Seq',
  expectedSeq: 'Producer-Expected-Seq',
  receivedSeq: 'Producer-Received-Seq',
  sseEncoding: 'Stream-SSE-Data-Encoding',
} as const

/** Headers on every answer: CORS (the protocol's own headers exposed) and the browser security headers of §12.7. */
export function baseHeaders(allowOrigin: string): Record<string, string> {
  return {
    'access-control-allow-origin': allowOrigin,
    'access-control-expose-headers': `${[H.offset, H.cursor, H.upToDate, H.closed, H.producerEpoch, H.producerSeq, H.expectedSeq, H.receivedSeq, H.ttl, H.expiresAt, H.sseEncoding].join(', ')}, etag, content-type, location`,
    'x-content-type-options': 'nosniff',
    'cross-origin-resource-policy': 'cross-origin',
  }
}

/**
 * A CORS preflight's answer (OPTIONS): the methods and the protocol's request headers allowed.
 * Only a preflight's are read by a browser (the Fetch standard's CORS check), so the other
 * answers go without these 400 bytes.
 */
export function preflightHeaders(base: Record<string, string>): Record<string, string> {
  return {
    ...base,
    'access-control-allow-methods': 'GET, POST, PUT, DELETE, HEAD, OPTIONS',
    'access-control-allow-headers': `content-type, authorization, if-none-match, ${[H.seq, H.ttl, H.expiresAt, H.closed, H.producerId, H.producerEpoch, H.producerSeq, H.forkedFrom, H.forkOffset, H.forkSubOffset].join(', ')}`,
  }
}

/** A request body larger than the bound: answered 413, nothing written. */
export class TooLarge extends Error {}

/** The body, read within `max` bytes (TooLarge past it). */
export function readBody(request: Request, max: number): Promise<Uint8Array> {
  return readBytes(request, max, (detail) => new TooLarge(detail))
}

/** A body as the engine takes it: a JSON stream's values (an array is its elements), or bytes. */
export function streamBody(bytes: Uint8Array, json: boolean): StreamBody {
  if (!json) return { base64: toBase64(bytes) }
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch (err) {
    return { badJson: (err as Error).message }
  }
  return { json: Array.isArray(value) ? value : [value] }
}

const CURSOR_EPOCH_MS = Date.UTC(2024, 9, 9)
const CURSOR_INTERVAL_MS = 20_000

/** A live answer's cursor (PROTOCOL.md §10.1): the 20 s interval now, or past the client's when it is not behind. */
export function responseCursor(client: string | null): string {
  const now = Math.floor((Date.now() - CURSOR_EPOCH_MS) / CURSOR_INTERVAL_MS)
  const given = client === null ? Number.NaN : Number.parseInt(client, 10)
  if (!(given >= now)) return String(now)
  return String(given + Math.max(1, Math.ceil((1 + Math.floor(Math.random() * 3600)) / (CURSOR_INTERVAL_MS / 1000))))
}

/** What an append through this handler brought: messages `[from, stream.length)` of a JSON stream, as a read's body. */
export interface Fresh {
  from: number
  stream: StreamState
  body: string
}

/** A reader's watch on a stream's tail: it hears every wake from its start, so one between a read and the next wait is not lost. */
export interface TailWatch {
  /** Resolves at once when a wake came since the last wait; else at the next wake, after `ms`, or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void>
  /** The last append's messages, when they start at `from` (a reader there needs no read of the store). */
  fresh(from: number): Fresh | undefined
  stop(): void
}

/** Readers waiting at the tail of a stream, woken by an append through this handler (others: by their poll). */
export class Tails {
  readonly #watching = new Map<string, Set<(fresh: Fresh | undefined) => void>>()

  /** Wakes the readers of `id`, handing them `fresh` (the append's messages) when it has them. */
  wake(id: string, fresh?: Fresh): void {
    for (const f of this.#watching.get(id) ?? []) f(fresh)
  }

  watch(id: string): TailWatch {
    const set = this.#watching.get(id) ?? new Set()
    this.#watching.set(id, set)
    let woken = false
    let last: Fresh | undefined
    let resolveWait: (() => void) | undefined
    const heard = (fresh: Fresh | undefined) => {
      woken = true
      last = fresh
      resolveWait?.()
    }
    set.add(heard)
    return {
      wait: (ms, signal) => {
        if (woken || signal.aborted || ms <= 0) {
          woken = false
          return Promise.resolve()
        }
        return new Promise((resolve) => {
          const done = () => {
            clearTimeout(timer)
            signal.removeEventListener('abort', done)
            resolveWait = undefined
            woken = false
            resolve()
          }
          const timer = setTimeout(done, ms)
          resolveWait = done
          signal.addEventListener('abort', done, { once: true })
        })
      },
      fresh: (from) => (last?.from === from ? last : undefined),
      stop: () => {
        set.delete(heard)
        if (set.size === 0 && this.#watching.get(id) === set) this.#watching.delete(id)
      },
    }
  }
}
