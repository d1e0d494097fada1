// An append to a stream (DESIGN §16), decided before anything is written: the checks of the
// protocol in its order of precedence (closed, content type, producer, Stream-Seq, body), and
// what passes them as the events to append and the stream's next record.
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import {
  mediaType,
  type ProducerTuple,
  type StreamAnswer,
  type StreamBody,
  type StreamConfig,
  type StreamMode,
  type StreamRequest,
  type StreamState,
} from '../core/streams'
import { encodeEvent, encodeEventBody, isPlainObject, type EncodedEvent } from '../core/validate'
import type { EventRegistry } from './event-registry'

/** The protocol's state of a stream, kept beside its session's log (streams.ts). */
export interface StreamRecord {
  v: 1
  type: string
  mode: StreamMode
  ttl?: number
  expiresAt?: string
  closed?: true
  /** The producer tuple whose append closed the stream: its retry is a duplicate. */
  closedBy?: ProducerTuple
  streamSeq?: string
  producers?: Record<string, [epoch: number, seq: number]>
  /** Deleted while forks of it stand: gone to clients, kept for them. */
  gone?: true
  /** A fork's source, position and sub-offset as its PUT gave them (an idempotent PUT compares them). */
  fork?: [SessionId, number, number]
  /** The stream of another server this session copies (`store.follow`), and the offset copied up to. */
  follow?: { url: string; offset: string }
  /** A change whose events were being appended at log length `at` (see the top of this file). */
  intent?: { at: number; next: Omit<StreamRecord, 'intent'> }
}

/** A session's record as the protocol sees it (a session made by the SDK is a JSON stream of its events). */
export function sessionRecord(): StreamRecord {
  return { v: 1, type: 'application/json', mode: 'events' }
}

/** What an append comes to: an answer at once (nothing written), or events and the record that goes with them. */
export type Outcome = { answer: StreamAnswer; next?: undefined; events?: undefined } | { answer?: undefined; next: StreamRecord; events: EncodedEvent[] }

type Append = Extract<StreamRequest, { op: 'append' }>

/** Decides `request` against the stream's `record` and state. */
export function appendTo(record: StreamRecord, stream: StreamState, request: Append, host: Parameters<typeof bodyEvents>[4]): Outcome {
  const { producer, close } = request
  const sameTuple = producer !== undefined && record.closedBy?.every((v, i) => v === producer[i]) === true
  if (!request.body) {
    // Close only: idempotent; with a producer, sequenced like an append.
    if (record.closed)
      return { answer: sameTuple || !producer ? { status: 'duplicate', stream, producerSeq: producer?.[2] ?? -1 } : { status: 'closed', stream } }
    const next: StreamRecord = { ...record, closed: true }
    if (producer) {
      const checked = checkProducer(record, producer, stream)
      if (checked) return { answer: checked }
      next.producers = { ...record.producers, [producer[0]]: [producer[1], producer[2]] }
      next.closedBy = producer
    }
    if (!close) throw new SessionfoldError('INVALID_ARGUMENT', 'an append without a body must close the stream')
    return { next, events: [] }
  }
  if (record.closed) return { answer: sameTuple ? { status: 'duplicate', stream, producerSeq: producer![2] } : { status: 'closed', stream } }
  if (request.contentType === undefined || mediaType(request.contentType) !== mediaType(record.type)) {
    return { answer: { status: 'type-mismatch', detail: `the stream is ${record.type}, the body ${request.contentType ?? 'untyped'}` } }
  }
  const next: StreamRecord = { ...record }
  if (producer) {
    const checked = checkProducer(record, producer, stream)
    if (checked) return { answer: checked }
    next.producers = { ...record.producers, [producer[0]]: [producer[1], producer[2]] }
  }
  if (request.streamSeq !== undefined) {
    if (record.streamSeq !== undefined && request.streamSeq <= record.streamSeq) {
      return { answer: { status: 'seq-regression', detail: `Stream-Seq ${request.streamSeq} is not after ${record.streamSeq}` } }
    }
    next.streamSeq = request.streamSeq
  }
  const events = bodyEvents(record.mode, request.body, request.id, stream.length, host, false)
  if ('status' in events) return { answer: events }
  if (close) {
    next.closed = true
    if (producer) next.closedBy = producer
  }
  return { next, events }
}

/** The producer's check (PROTOCOL.md §5.2.1): undefined when the append is accepted. */
function checkProducer(record: StreamRecord, [id, epoch, seq]: [string, number, number], stream: StreamState): StreamAnswer | undefined {
  const state = record.producers?.[id]
  if (!state) return seq === 0 ? undefined : { status: 'gap', expected: 0, received: seq }
  const [current, last] = state
  if (epoch < current) return { status: 'stale-epoch', epoch: current }
  if (epoch > current) return seq === 0 ? undefined : { status: 'epoch-seq' }
  if (seq <= last) return { status: 'duplicate', stream, producerSeq: last }
  return seq === last + 1 ? undefined : { status: 'gap', expected: last + 1, received: seq }
}

/** Bytes per event of a bytes stream: base64 of this many characters (a multiple of 4) fits an event. */
function chunkChars(maxEventBytes: number): number {
  return Math.max(4, Math.floor((maxEventBytes - 256) / 4) * 4)
}

/**
 * The events a body makes, numbered from `from`: each JSON value one (a session's own stream
 * takes event-shaped values only), bytes in chunks that fit an event. An answer when the body
 * is refused: bad-body (400), too-large (413).
 */
export function bodyEvents(
  mode: StreamMode,
  body: StreamBody,
  id: SessionId,
  from: number,
  host: { maxEventBytes: number; now(): number; events?: Pick<EventRegistry, 'check'> },
  creating: boolean,
): EncodedEvent[] | StreamAnswer {
  if ('badJson' in body) return { status: 'bad-body', detail: `the body is not JSON: ${body.badJson}` }
  const now = host.now()
  const inputs: { type: string; data: unknown; time?: unknown }[] = []
  if ('json' in body) {
    if (mode === 'bytes') return { status: 'bad-body', detail: 'JSON values go to a JSON stream' }
    if (body.json.length === 0 && !creating) return { status: 'bad-body', detail: 'an empty JSON array appends nothing' }
    for (const value of body.json) {
      if (mode === 'json') inputs.push({ type: 'stream/json', data: value })
      else if (isPlainObject(value)) inputs.push(value as { type: string; data: unknown })
      else return { status: 'bad-body', detail: `a session's stream takes events ({ type, data?, time? }), got ${JSON.stringify(value)?.slice(0, 80)}` }
    }
  } else {
    if (mode !== 'bytes') return { status: 'bad-body', detail: 'bytes go to a stream that is not JSON' }
    const size = chunkChars(host.maxEventBytes)
    for (let at = 0; at < body.base64.length; at += size) inputs.push({ type: 'stream/bytes', data: body.base64.slice(at, at + size) })
  }
  const events: EncodedEvent[] = []
  try {
    for (const [i, input] of inputs.entries()) {
      const seq = from + i
      const parsed = JSON.parse(encodeEventBody(input, id, { maxBytes: host.maxEventBytes, now, seq })) as { type: string; time: number; data: never }
      const encoded = encodeEvent({ seq, ...parsed }, id, host.maxEventBytes)
      // A session's own stream takes its events as any append does: checked by their definitions.
      events.push(mode === 'events' && host.events ? host.events.check(encoded, id) : encoded)
    }
  } catch (err) {
    if (isSessionfoldError(err, 'EVENT_TOO_LARGE')) return { status: 'too-large', detail: err.message }
    if (isSessionfoldError(err, 'INVALID_ARGUMENT')) return { status: 'bad-body', detail: err.message }
    throw err
  }
  return events
}

export function stateOf(record: StreamRecord, length: number): StreamState {
  const state: StreamState = { contentType: record.type, mode: record.mode, length, closed: record.closed === true }
  if (record.ttl !== undefined) state.ttl = record.ttl
  if (record.expiresAt !== undefined) state.expiresAt = record.expiresAt
  if (record.follow) state.follow = record.follow
  return state
}

export function withoutIntent(record: StreamRecord): StreamRecord {
  const { intent: _, ...rest } = record
  return rest
}

/** Whether a PUT of a stream that exists asks for what it is (200) or for something else (409). */
export function sameConfig(record: StreamRecord, stream: StreamState, config: StreamConfig, fork: Extract<StreamRequest, { op: 'create' }>['fork']): boolean {
  const type = fork && !fork.contentTypeGiven ? record.type : config.contentType
  if (mediaType(type) !== mediaType(record.type)) return false
  if (config.ttl !== record.ttl && !(fork && config.ttl === undefined)) return false
  if (config.expiresAt !== record.expiresAt && !(fork && config.expiresAt === undefined)) return false
  if ((config.closed ?? false) !== stream.closed) return false
  if (!fork) return record.fork === undefined
  if (!record.fork || record.fork[0] !== fork.from) return false
  return (fork.at === undefined || fork.at === record.fork[1]) && (fork.sub ?? 0) === record.fork[2]
}
