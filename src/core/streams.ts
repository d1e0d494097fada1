// Durable Streams (DESIGN §16): what the protocol's HTTP handler (src/streams/server) asks the
// engine (src/engine/streams.ts), and the engine's answers. Each stream is a session of the
// store; the engine keeps the protocol's own state of a stream (content type, expiry, closure,
// Stream-Seq, idempotent producers) in a record beside the session's log, and changes it with
// the session's writer lock held, so that handlers in several processes over one store agree.
import type { SessionId } from './model'

/** A stream's configuration as a PUT gives it (and as HEAD shows it). */
export interface StreamConfig {
  /** The MIME type, as given (matched without its parameters and case). */
  contentType: string
  /** A sliding time to live, seconds (reset by each read and write). */
  ttl?: number
  /** An absolute expiry, RFC 3339 as given. */
  expiresAt?: string
  closed?: boolean
}

/** A request body: JSON values (each a message), bytes as base64, or JSON that does not parse (why). */
export type StreamBody = { json: unknown[] } | { base64: string } | { badJson: string }

/** An idempotent producer's headers: id, epoch, seq. */
export type ProducerTuple = [id: string, epoch: number, seq: number]

export type StreamRequest =
  | { op: 'head'; id: SessionId }
  | {
      op: 'create'
      id: SessionId
      config: StreamConfig
      /** A fork: its source, and where it parts (a position; the source's tail when absent), plus `sub` messages past it. */
      fork?: { from: SessionId; at?: number; sub?: number; contentTypeGiven: boolean }
      body?: StreamBody
    }
  | {
      op: 'append'
      id: SessionId
      /** The request's Content-Type (absent: none given). */
      contentType?: string
      body?: StreamBody
      close: boolean
      streamSeq?: string
      producer?: ProducerTuple
    }
  /** Messages from `from` up to about `maxBytes` of body (one at least), and not past `to` (the stream's length when not given). */
  | { op: 'read'; id: SessionId; from: number; maxBytes: number; to?: number }
  | { op: 'delete'; id: SessionId }
  | {
      op: 'follow'
      id: SessionId
      /** The followed stream's URL, and the offsets this copy was at and is now at (null: the start). */
      url: string
      from: string | null
      to: string
      /** Event inputs (`{ type, data?, time? }`) from the stream's messages. */
      events: unknown[]
    }

/** A stream as it stands: its configuration, its tail (events), closure. */
export interface StreamState extends StreamConfig {
  /** The tail position: the session's length. */
  length: number
  /** 'events': a session's own stream (each message an event); 'json': messages kept as given; 'bytes'. */
  mode: StreamMode
  closed: boolean
  /** A session copying a stream of another server (`store.follow`): its URL and the offset copied up to. */
  follow?: { url: string; offset: string }
}

export type StreamMode = 'events' | 'json' | 'bytes'

export type StreamAnswer =
  | { status: 'not-found' | 'gone' | 'locked' }
  | { status: 'ok'; stream: StreamState }
  | { status: 'created' | 'exists'; stream: StreamState }
  | { status: 'conflict' | 'source-missing' | 'source-gone' | 'bad-fork-offset' | 'type-mismatch'; detail: string }
  | { status: 'bad-body'; detail: string }
  | { status: 'too-large'; detail: string }
  | { status: 'appended'; stream: StreamState; producerSeq?: number }
  | { status: 'duplicate'; stream: StreamState; producerSeq: number }
  | { status: 'closed'; stream: StreamState }
  | { status: 'seq-regression'; detail: string }
  | { status: 'followed'; stream: StreamState }
  | { status: 'stale-epoch'; epoch: number }
  | { status: 'epoch-seq' }
  | { status: 'gap'; expected: number; received: number }
  /** Messages `[from, from + count)`: a JSON array's text (a JSON stream, a session's events), or the bytes. */
  | { status: 'read'; stream: StreamState; from: number; count: number; body: string | Uint8Array }
  | { status: 'deleted' }

/**
 * Offsets: a position (an event's seq, or the tail) as 16 decimal digits, then `_` and 16 more
 * (zero): sortable as text, and the shape the protocol's reference server gives (clients and
 * the conformance suite write its zero offset, `0000000000000000_0000000000000000`, by hand).
 */
export function encodeOffset(position: number): string {
  return `${String(position).padStart(16, '0')}_0000000000000000`
}

/** A position from an offset, undefined when it is not one of ours (`-1` and `now` are the caller's). */
export function decodeOffset(offset: string): number | undefined {
  const m = /^(\d{16})_\d{16}$/.exec(offset)
  const n = m ? Number(m[1]) : Number.NaN
  return Number.isSafeInteger(n) ? n : undefined
}

/** The MIME type without parameters, lower case: what two content types are compared by. */
export function mediaType(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase()
}

/** How a content type's messages are kept: JSON values one by one, or bytes. */
export function modeOf(contentType: string): 'json' | 'bytes' {
  return mediaType(contentType) === 'application/json' ? 'json' : 'bytes'
}
