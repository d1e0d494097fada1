// Durable Streams in the engine (DESIGN §16): each stream is a session, and its protocol state
// (content type, expiry, closure, Stream-Seq, idempotent producers) a record beside its log.
// Every change holds the session's writer lock (so handlers in several processes over one store
// take turns), and a change that moves the record and appends is made safe against a crash
// between the two: the record first takes the change as an intent naming the log's length, the
// events are appended, then the record is written without it. A reader that finds an intent
// applies it when the log grew past that length (the append landed), and drops it otherwise.
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { SessionEvent, SessionHeader, SessionId } from '../core/model'
import { mediaType, modeOf, type StreamAnswer, type StreamConfig, type StreamMode, type StreamRequest, type StreamState } from '../core/streams'
import { encodeEvent, type EncodedEvent } from '../core/validate'
import type { KeyValueStore } from '../storage/types'
import type { ImportWriter } from './apply-changes'
import type { LiveSessions } from './live-sessions'
import type { StoreReader } from './reader'
import { appendTo, bodyEvents, type Outcome, type StreamRecord } from './stream-append'
import { fromBase64, toBase64 } from '../core/base64'

/** What the streams need of the engine. */
export interface StreamsHost {
  reader: Pick<StoreReader, 'find' | 'pages'>
  kv: KeyValueStore | undefined
  sessions: Pick<LiveSessions, 'withImportWriter'>
  maxEventBytes: number
  remove(id: SessionId): Promise<void>
  now(): number
  /** Told after each write (replications push at once). */
  wrote(): void
  /** Throws CLOSED once the engine closed. */
  open(): void
}

const recordKey = (id: SessionId) => ['session', id, 'stream']
const touchKey = (id: SessionId) => ['session', id, 'stream-touched']
const forkKey = (source: SessionId, fork: SessionId) => ['session', source, 'stream-fork', fork]
/** How long a request waits for a session another writer has open before it answers 'locked'. */
const LOCK_WAIT_MS = 10_000

/** A session's record as the protocol sees it (a session made by the SDK is a JSON stream of its events). */
function sessionRecord(): StreamRecord {
  return { v: 1, type: 'application/json', mode: 'events' }
}

/** Runs stream requests on one engine: writes one at a time per stream here, under its writer lock; reads at once. */
export class Streams {
  readonly #queues = new Map<SessionId, Promise<unknown>>()

  constructor(private readonly host: StreamsHost) {}

  /** Answers `request` (see core/streams.ts). */
  run(request: StreamRequest): Promise<StreamAnswer> {
    this.host.open()
    if (!this.host.kv) throw new SessionfoldError('STORAGE_UNAVAILABLE', 'this storage keeps no records beside its logs: it cannot serve streams')
    // Reads take no lock and wait for no append queued before them (#record settles an append under way by the log's length).
    if (request.op === 'head' || request.op === 'read') return this.#run(request)
    const { id } = request
    const before = this.#queues.get(id) ?? Promise.resolve()
    const next = before.then(() => this.#run(request))
    const tail = next.catch(() => {})
    this.#queues.set(id, tail)
    void tail.then(() => {
      if (this.#queues.get(id) === tail) this.#queues.delete(id)
    })
    return next
  }

  async #run(request: StreamRequest): Promise<StreamAnswer> {
    switch (request.op) {
      case 'head': {
        const found = await this.#find(request.id)
        return found.status === 'ok' ? { status: 'ok', stream: found.stream } : found
      }
      case 'read':
        return this.#read(request.id, request.from, request.maxBytes)
      case 'create':
        return this.#create(request)
      case 'append':
        return this.#append(request)
      case 'delete':
        return this.#delete(request.id)
      case 'follow':
        return this.#follow(request)
    }
  }

  /** The stream, its record brought up to date (an expired stream deleted), or why there is none. */
  async #find(id: SessionId): Promise<{ status: 'not-found' | 'gone' } | { status: 'ok'; stream: StreamState; record: StreamRecord; header: SessionHeader }> {
    const info = await this.host.reader.find(id)
    if (!info) return { status: 'not-found' }
    const record = await this.#record(id, info.length)
    if (record.gone) return { status: 'gone' }
    if (await this.#expired(id, record)) {
      await this.#removeStream(id, info.header)
      return { status: 'not-found' }
    }
    return { status: 'ok', stream: stateOf(record, info.length), record, header: info.header }
  }

  async #record(id: SessionId, length: number): Promise<StreamRecord> {
    const text = await this.host.kv?.get(recordKey(id))
    if (text === undefined) return sessionRecord()
    const record = JSON.parse(text) as StreamRecord
    if (!record.intent) return record
    return length > record.intent.at ? { ...record.intent.next } : withoutIntent(record)
  }

  async #expired(id: SessionId, record: StreamRecord): Promise<boolean> {
    const now = this.host.now()
    if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now) return true
    if (record.ttl === undefined) return false
    const touched = Number((await this.host.kv?.get(touchKey(id))) ?? Number.NaN)
    return Number.isFinite(touched) && touched + record.ttl * 1000 <= now
  }

  /** A read or write resets a TTL's countdown. */
  async #touch(id: SessionId, record: StreamRecord): Promise<void> {
    if (record.ttl !== undefined) await this.host.kv?.put(touchKey(id), String(this.host.now())).catch(() => {})
  }

  async #read(id: SessionId, from: number, maxBytes: number): Promise<StreamAnswer> {
    const found = await this.#find(id)
    if (found.status !== 'ok') return found
    await this.#touch(id, found.record)
    const events: SessionEvent[] = []
    let bytes = 0
    if (from < found.stream.length) {
      read: for await (const page of this.host.reader.pages(id, { from, to: found.stream.length })) {
        for (const e of page) {
          if (events.length > 0 && bytes >= maxBytes) break read
          events.push(e)
          bytes += typeof e.data === 'string' ? e.data.length : JSON.stringify(e.data).length
        }
      }
    }
    return { status: 'read', stream: found.stream, events }
  }

  /** Runs `write` holding the session's writer lock (waiting for another writer a while): 'locked' when it never came. */
  async #locked(id: SessionId, write: (writer: ImportWriter) => Promise<void>): Promise<'locked' | undefined> {
    const deadline = Date.now() + LOCK_WAIT_MS
    for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
      if ((await this.host.sessions.withImportWriter(id, write)) === undefined) return undefined
      if (Date.now() > deadline) return 'locked'
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }

  async #create(request: Extract<StreamRequest, { op: 'create' }>): Promise<StreamAnswer> {
    const { id, config, fork } = request
    const found = await this.#find(id)
    if (found.status === 'gone') return { status: 'conflict', detail: `${id} was deleted while forks of it stand: its path cannot be used again until they go` }
    if (found.status === 'ok') {
      const same = sameConfig(found.record, found.stream, config, fork)
      return same ? { status: 'exists', stream: found.stream } : { status: 'conflict', detail: `${id} exists with another configuration` }
    }
    let record: StreamRecord = { v: 1, type: config.contentType, mode: modeOf(config.contentType) }
    let seed: EncodedEvent[] = []
    let header: SessionHeader = { version: 1, id, createdAt: this.host.now(), seedLength: 0, delegationDepth: 0, origin: 'root' }
    let extra: EncodedEvent[] = []
    /** The fork's own first event: the part of a source's event its sub-offset takes (bytes). */
    const own: EncodedEvent[] = []
    if (fork) {
      const source = await this.#find(fork.from)
      if (source.status !== 'ok') {
        const gone = source.status === 'gone'
        return gone
          ? { status: 'source-gone', detail: `${fork.from} was deleted (its forks keep it)` }
          : { status: 'source-missing', detail: `no stream ${fork.from} to fork` }
      }
      if (fork.contentTypeGiven && mediaType(config.contentType) !== mediaType(source.record.type))
        return { status: 'type-mismatch', detail: `${fork.from} is ${source.record.type}` }
      const at = fork.at ?? source.stream.length
      const sub = fork.sub ?? 0
      const split = at > source.stream.length ? undefined : await this.#part(fork.from, source.record.mode, at, sub, source.stream.length)
      if (!split) return { status: 'bad-fork-offset', detail: `${fork.from} has no position ${at} (and ${sub} past it)` }
      const parted = split.whole
      seed = await this.#events(fork.from, parted)
      if (split.rest !== undefined)
        own.push(encodeEvent({ seq: parted, type: 'stream/bytes', time: this.host.now(), data: split.rest }, id, this.host.maxEventBytes))
      record = { ...record, type: fork.contentTypeGiven ? config.contentType : source.record.type, mode: source.record.mode, fork: [fork.from, at, sub] }
      if (config.ttl === undefined && config.expiresAt === undefined) {
        if (source.record.ttl !== undefined) record.ttl = source.record.ttl
        if (source.record.expiresAt !== undefined) record.expiresAt = source.record.expiresAt
      }
      header = { ...header, origin: 'fork', forkedFrom: fork.from, seedLength: parted, delegationDepth: source.header.delegationDepth }
      if (source.header.cwd !== undefined) header.cwd = source.header.cwd
    }
    if (config.ttl !== undefined) record.ttl = config.ttl
    if (config.expiresAt !== undefined) record.expiresAt = config.expiresAt
    if (config.closed) record.closed = true
    if (request.body) {
      const made = bodyEvents(record.mode, request.body, id, seed.length + own.length, this.host, true)
      if ('status' in made) return made
      extra = made
    }
    extra = [...own, ...extra]
    try {
      const locked = await this.#locked(id, async (writer) => {
        await writer.create(header, seed)
        // Kept unless it says nothing a session's own stream does not (a fork of a session, with no TTL, open).
        if (JSON.stringify(record) !== JSON.stringify(sessionRecord()))
          await this.host.kv!.put(recordKey(id), JSON.stringify(record), { durability: 'durable' })
        if (record.ttl !== undefined) await this.host.kv!.put(touchKey(id), String(this.host.now()))
        if (fork) await this.host.kv!.put(forkKey(fork.from, id), '1', { durability: 'durable' })
        if (extra.length > 0) await writer.append(extra)
      })
      if (locked) return { status: 'locked' }
    } catch (err) {
      if (isSessionfoldError(err, 'SESSION_EXISTS')) return this.#create(request) // made meanwhile by another process: compare
      throw err
    }
    this.host.wrote()
    return { status: 'created', stream: stateOf(record, seed.length + extra.length) }
  }

  /**
   * Where a fork parts from `id` at position `at` and `sub` past it: JSON messages are events,
   * so `whole` is `at + sub`; bytes are counted through the events from `at`, and a part of an
   * event is `rest` (base64), the fork's own first event. Undefined past the source's end.
   */
  async #part(id: SessionId, mode: StreamMode, at: number, sub: number, length: number): Promise<{ whole: number; rest?: string } | undefined> {
    if (mode !== 'bytes' || sub === 0) return at + sub <= length ? { whole: at + sub } : undefined
    let left = sub
    let whole = at
    for await (const page of this.host.reader.pages(id, { from: at, to: length })) {
      for (const e of page) {
        const bytes = fromBase64(e.data as string)
        if (left < bytes.length) return { whole, rest: toBase64(bytes.subarray(0, left)) }
        left -= bytes.length
        whole++
        if (left === 0) return { whole }
      }
    }
    return undefined
  }

  /** The first `to` events of `id`, to seed a fork. */
  async #events(id: SessionId, to: number): Promise<EncodedEvent[]> {
    const out: EncodedEvent[] = []
    if (to === 0) return out
    for await (const page of this.host.reader.pages(id, { from: 0, to })) for (const e of page) out.push(encodeEvent(e, id, Number.MAX_SAFE_INTEGER))
    return out
  }

  async #append(request: Extract<StreamRequest, { op: 'append' }>): Promise<StreamAnswer> {
    const { id } = request
    let answer: StreamAnswer | undefined
    const locked = await this.#locked(id, async (writer) => {
      const found = await this.#find(id)
      if (found.status !== 'ok') {
        answer = found
        return
      }
      const outcome: Outcome = appendTo(found.record, found.stream, request, this.host)
      if (outcome.answer) {
        answer = outcome.answer
        return
      }
      const { next, events } = outcome
      const at = found.stream.length
      const recordChanges = JSON.stringify(next) !== JSON.stringify(found.record)
      if (recordChanges && events.length > 0) {
        await this.host.kv!.put(recordKey(id), JSON.stringify({ ...found.record, intent: { at, next } }), { durability: 'durable' })
      }
      if (events.length > 0) await writer.append(events)
      if (recordChanges) await this.host.kv!.put(recordKey(id), JSON.stringify(next), { durability: events.length > 0 ? 'whole' : 'durable' })
      await this.#touch(id, next)
      answer = { status: 'appended', stream: stateOf(next, at + events.length), ...(request.producer ? { producerSeq: request.producer[2] } : {}) }
    })
    if (locked) return { status: 'locked' }
    if (answer?.status === 'appended') this.host.wrote()
    return answer!
  }

  /**
   * A copy of another server's stream (`store.follow`) moves on: its events appended (the session
   * made at the first), the offset kept with them, so a restart resumes where the copy ends;
   * 'conflict' when the copy is not at `from` (another follower moved it, or it follows another URL).
   */
  async #follow(request: Extract<StreamRequest, { op: 'follow' }>): Promise<StreamAnswer> {
    const { id, url, from, to } = request
    let answer: StreamAnswer | undefined
    const locked = await this.#locked(id, async (writer) => {
      const info = await this.host.reader.find(id)
      if (!info) await writer.create({ version: 1, id, createdAt: this.host.now(), seedLength: 0, delegationDepth: 0, origin: 'root' }, [])
      const length = info?.length ?? 0
      const record = info ? await this.#record(id, length) : sessionRecord()
      if ((record.follow?.url ?? url) !== url || (record.follow?.offset ?? null) !== from) {
        answer = { status: 'conflict', detail: `${id} copies ${record.follow?.url ?? 'no stream'} up to ${record.follow?.offset ?? 'its start'}` }
        return
      }
      const events = bodyEvents('events', { json: request.events }, id, length, this.host, true)
      if ('status' in events) {
        answer = events
        return
      }
      const next: StreamRecord = { ...record, follow: { url, offset: to } }
      if (events.length > 0) await this.host.kv!.put(recordKey(id), JSON.stringify({ ...record, intent: { at: length, next } }), { durability: 'durable' })
      if (events.length > 0) await writer.append(events)
      await this.host.kv!.put(recordKey(id), JSON.stringify(next), { durability: events.length > 0 ? 'whole' : 'durable' })
      answer = { status: 'followed', stream: stateOf(next, length + events.length) }
    })
    if (locked) return { status: 'locked' }
    if (answer?.status === 'followed') this.host.wrote()
    return answer!
  }

  async #delete(id: SessionId): Promise<StreamAnswer> {
    const found = await this.#find(id)
    if (found.status !== 'ok') return found
    const forks = (await this.host.kv?.list(['session', id, 'stream-fork'], { limit: 1 })) ?? []
    if (forks.length > 0) {
      // Forks stand on it: gone to clients, kept until the last of them goes.
      const locked = await this.#locked(id, async () => {
        await this.host.kv!.put(recordKey(id), JSON.stringify({ ...found.record, gone: true }), { durability: 'durable' })
      })
      return locked ? { status: 'locked' } : { status: 'deleted' }
    }
    await this.#removeStream(id, found.header)
    return { status: 'deleted' }
  }

  /** Deletes a stream's session; then its source, if that was deleted and this was its last fork. */
  async #removeStream(id: SessionId, header: SessionHeader): Promise<void> {
    await this.host.remove(id)
    this.host.wrote()
    const source = header.origin === 'fork' ? header.forkedFrom : undefined
    if (source === undefined || !this.host.kv) return
    const info = await this.host.reader.find(source)
    if (!info) return
    await this.host.kv.delete(forkKey(source, id))
    const record = await this.#record(source, info.length)
    if (record.gone && (await this.host.kv.list(['session', source, 'stream-fork'], { limit: 1 })).length === 0) await this.#removeStream(source, info.header)
  }
}

function stateOf(record: StreamRecord, length: number): StreamState {
  const state: StreamState = { contentType: record.type, mode: record.mode, length, closed: record.closed === true }
  if (record.ttl !== undefined) state.ttl = record.ttl
  if (record.expiresAt !== undefined) state.expiresAt = record.expiresAt
  if (record.follow) state.follow = record.follow
  return state
}

function withoutIntent(record: StreamRecord): StreamRecord {
  const { intent: _, ...rest } = record
  return rest
}

/** Whether a PUT of a stream that exists asks for what it is (200) or for something else (409). */
function sameConfig(record: StreamRecord, stream: StreamState, config: StreamConfig, fork: Extract<StreamRequest, { op: 'create' }>['fork']): boolean {
  const type = fork && !fork.contentTypeGiven ? record.type : config.contentType
  if (mediaType(type) !== mediaType(record.type)) return false
  if (config.ttl !== record.ttl && !(fork && config.ttl === undefined)) return false
  if (config.expiresAt !== record.expiresAt && !(fork && config.expiresAt === undefined)) return false
  if ((config.closed ?? false) !== stream.closed) return false
  if (!fork) return record.fork === undefined
  if (!record.fork || record.fork[0] !== fork.from) return false
  return (fork.at === undefined || fork.at === record.fork[1]) && (fork.sub ?? 0) === record.fork[2]
}
