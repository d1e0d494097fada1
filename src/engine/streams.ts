// Durable Streams in the engine (DESIGN §16): each stream is a session, and its protocol state
// (content type, expiry, closure, Stream-Seq, idempotent producers) a record beside its log.
// Every change holds the session's writer lock (so handlers in several processes over one store
// take turns), and a change that moves the record and appends is made safe against a crash
// between the two: the record takes the change as an intent naming the log's length, then the
// events are appended. A reader that finds an intent applies it when the log grew past that
// length (the append landed), and drops it otherwise; so the intent, left in place, is the record
// (an append writes the record once). Appends queued for one stream go out together: one lock,
// one record write and one log write for all of them.
import { SessionfoldError, isSessionfoldError } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { EventRegistry } from './event-registry'
import { mediaType, modeOf, type StreamAnswer, type StreamRequest, type StreamState } from '../core/streams'
import { encodeEvent, type EncodedEvent } from '../core/validate'
import type { KeyValueStore } from '../storage/types'
import type { ImportWriter } from './apply-changes'
import type { LiveSessions } from './live-sessions'
import type { StoreReader } from './reader'
import { appendTo, bodyEvents, sameConfig, sessionRecord, stateOf, withoutIntent, type Outcome, type StreamRecord } from './stream-append'
import { GAP_PAUSE_MS, GAP_WAIT_MS, inProducerOrder, MAX_BATCH, type Queued } from './stream-batch'
import { StreamWriters } from './stream-writers'
import { eventsTo, forkPart, readBody } from './stream-read'

/** What the streams need of the engine. */
export interface StreamsHost {
  reader: Pick<StoreReader, 'find' | 'pages' | 'texts'>
  kv: KeyValueStore | undefined
  sessions: Pick<LiveSessions, 'holdImportWriter'>
  maxEventBytes: number
  /** Event definitions: a session's own stream takes and reads its events by them, as any append and read does (event-registry.ts). */
  events?: Pick<EventRegistry, 'check' | 'read'>
  remove(id: SessionId): Promise<void>
  now(): number
  /** Told after each write (replications push at once). */
  wrote(): void
  /** Throws CLOSED once the engine closed. */
  open(): void
  /** Told of a failure no request hears of (letting go of an idle stream's writer). */
  onError(err: SessionfoldError): void
}

const recordKey = (id: SessionId) => ['session', id, 'stream']
/** A stream record's puts: durable, and often (once an append: fs writes it over in place, one sync). */
const DURABLE = { durability: 'durable', often: true } as const
const touchKey = (id: SessionId) => ['session', id, 'stream-touched']
const forkKey = (source: SessionId, fork: SessionId) => ['session', source, 'stream-fork', fork]
type Found = { status: 'not-found' | 'gone' } | { status: 'ok'; stream: StreamState; record: StreamRecord; header: SessionHeader }
/** Runs stream requests on one engine: writes one at a time per stream here, under its writer lock; reads at once. */
export class Streams {
  readonly #writers: StreamWriters
  /** Streams whose writer is held here: their record and length, as the last append left them. */
  readonly #known = new Map<SessionId, Found>()
  /** Per stream: the appends waiting for their turn that one more append may join. */
  readonly #joinable = new Map<SessionId, Queued[]>()

  constructor(private readonly host: StreamsHost) {
    this.#writers = new StreamWriters(host.sessions, host.onError, (id) => this.#known.delete(id))
  }

  /** Lets go of the writers held of streams `ids` (an app's delete or writer needs them), once the writes queued for them are done. */
  async letGo(ids: readonly SessionId[]): Promise<void> {
    await Promise.all(ids.map((id) => this.#writers.letGo(id)))
  }

  /** Lets go of every writer held (the engine closes). */
  close(): Promise<void> {
    return this.#writers.close()
  }

  /** Answers `request` (see core/streams.ts). */
  run(request: StreamRequest): Promise<StreamAnswer> {
    this.host.open()
    if (!this.host.kv) throw new SessionfoldError('STORAGE_UNAVAILABLE', 'this storage keeps no records beside its logs: it cannot serve streams')
    // Reads take no lock and wait for no append queued before them (#record settles an append under way by the log's length).
    // A HEAD of a stream whose writer is held here is what its last append left (every append answered is in it).
    const known = request.op === 'head' ? this.#known.get(request.id) : undefined
    if (known?.status === 'ok') return Promise.resolve({ status: 'ok', stream: known.stream })
    if (request.op === 'head' || request.op === 'read') return this.#run(request)
    const { id } = request
    if (request.op === 'append') return new Promise((resolve, reject) => this.#submit({ request, resolve, reject }))
    this.#joinable.delete(id) // an append after this must not go out before it
    // Forgotten when it runs, not before: an append under way until then sets it again.
    return this.#writers.queue(id, () => {
      this.#known.delete(id)
      return this.#run(request)
    })
  }

  /** Appends queued behind the stream's write in progress go out together, in the order they came. */
  #submit(queued: Queued): void {
    const { id } = queued.request
    const joining = this.#joinable.get(id)
    if (joining && joining.length < MAX_BATCH) return void joining.push(queued)
    const batch = [queued]
    this.#joinable.set(id, batch)
    void this.#writers.queue(id, () => {
      if (this.#joinable.get(id) === batch) this.#joinable.delete(id)
      return this.#appendBatch(id, batch)
    })
  }

  async #run(request: StreamRequest): Promise<StreamAnswer> {
    switch (request.op) {
      case 'head': {
        const found = await this.#find(request.id)
        return found.status === 'ok' ? { status: 'ok', stream: found.stream } : found
      }
      case 'read':
        return this.#read(request.id, request.from, request.maxBytes, request.to)
      case 'create':
        return this.#create(request)
      case 'append':
        return new Promise((resolve, reject) => void this.#appendBatch(request.id, [{ request, resolve, reject }]))
      case 'delete':
        return this.#delete(request.id)
      case 'follow':
        return this.#follow(request)
    }
  }

  /** The stream, its record brought up to date (an expired stream deleted), or why there is none. */
  async #find(id: SessionId, owned = false): Promise<Found> {
    const info = await this.host.reader.find(id)
    if (!info) return { status: 'not-found' }
    const record = await this.#record(id, info.length)
    if (record.gone) return { status: 'gone' }
    if (await this.#expired(id, record)) {
      await this.#removeStream(id, info.header, owned)
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

  async #read(id: SessionId, from: number, maxBytes: number, to = Number.POSITIVE_INFINITY): Promise<StreamAnswer> {
    const found = await this.#find(id)
    if (found.status !== 'ok') return found
    await this.#touch(id, found.record)
    // Past the end: the stream as it is, nothing read (the handler answers 400).
    const end = Math.min(to, found.stream.length)
    const { count, body } = await readBody(this.host.reader, id, found.record.mode, Math.min(from, end), end, maxBytes, this.host.events)
    return { status: 'read', stream: found.stream, from, count, body }
  }

  async #create(request: Extract<StreamRequest, { op: 'create' }>): Promise<StreamAnswer> {
    const { id, config, fork } = request
    const found = await this.#find(id, true)
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
      const split = at > source.stream.length ? undefined : await forkPart(this.host.reader, fork.from, source.record.mode, at, sub, source.stream.length)
      if (!split) return { status: 'bad-fork-offset', detail: `${fork.from} has no position ${at} (and ${sub} past it)` }
      const parted = split.whole
      seed = await eventsTo(this.host.reader, fork.from, parted)
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
      const locked = await this.#writers.locked(id, async (writer) => {
        await writer.create(header, seed)
        // Kept unless it says nothing a session's own stream does not (a fork of a session, with no TTL, open).
        if (JSON.stringify(record) !== JSON.stringify(sessionRecord())) await this.host.kv!.put(recordKey(id), JSON.stringify(record), DURABLE)
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
   * Appends `batch` (requests to stream `id`, in their order) under one writer lock: each decided
   * against the record the ones before it left, their events appended in one write. The record
   * is written once, before the events, as an intent naming the log's length; it stays so (a
   * reader resolves it by the log's length), so an append costs one record write and the log's.
   * When the write fails, every request of the batch fails with it.
   */
  async #appendBatch(id: SessionId, batch: Queued[]): Promise<void> {
    inProducerOrder(batch)
    const answers: StreamAnswer[] = []
    /** Appends that came before the one their producer sent ahead of them: tried again in a moment. */
    const later = new Set<Queued>()
    try {
      const locked = await this.#writers.locked(id, async (writer) => {
        answers.length = 0
        const found = this.#known.get(id) ?? (await this.#find(id, true))
        if (found.status !== 'ok') {
          for (const _ of batch) answers.push(found)
          return
        }
        const at = found.stream.length
        let record = found.record
        const events: EncodedEvent[] = []
        later.clear()
        for (const queued of batch) {
          const { request } = queued
          const stream = stateOf(record, at + events.length)
          const outcome: Outcome = appendTo(record, stream, request, this.host)
          if (
            outcome.answer?.status === 'gap' &&
            outcome.answer.expected < outcome.answer.received &&
            Date.now() < (queued.gapUntil ??= Date.now() + GAP_WAIT_MS)
          ) {
            later.add(queued)
            answers.push(outcome.answer)
            continue
          }
          if (outcome.answer) {
            answers.push(outcome.answer)
            continue
          }
          record = outcome.next
          events.push(...outcome.events)
          const { producer } = request
          answers.push({ status: 'appended', stream: stateOf(record, at + events.length), ...(producer ? { producerSeq: producer[2] } : {}) })
        }
        // What is known stays the last append's while this one is written (a HEAD answers it), and is
        // forgotten when this one fails: where its record and log stand is then read again.
        try {
          const changed = JSON.stringify(record) !== JSON.stringify(found.record)
          if (changed) await this.#write(writer, id, found.record, record, at, events)
          else if (events.length > 0) await writer.append(events)
          // Only what was taken resets a TTL's countdown: a refused or duplicate append writes nothing.
          if (changed || events.length > 0) await this.#touch(id, record)
        } catch (err) {
          this.#known.delete(id)
          throw err
        }
        // Nobody else changes it while this engine holds its writer (expiry aside).
        if (record.ttl === undefined && record.expiresAt === undefined)
          this.#known.set(id, { status: 'ok', stream: stateOf(record, at + events.length), record, header: found.header })
        else this.#known.delete(id)
      })
      if (locked) answers.splice(0, answers.length, ...batch.map((): StreamAnswer => ({ status: 'locked' })))
    } catch (err) {
      for (const { reject } of batch) reject(err)
      return
    }
    if (answers.some((a) => a.status === 'appended')) this.host.wrote()
    for (const [i, queued] of batch.entries()) {
      if (later.has(queued)) setTimeout(() => this.#submit(queued), GAP_PAUSE_MS)
      else queued.resolve(answers[i]!)
    }
  }

  /**
   * Moves stream `id`'s record from `record` to `next` with `events` appended at log length `at`
   * (see the top of this file): the intent written durably, then the events. The intent stays:
   * once they landed it reads as `next`, so the record is written once. When the append fails,
   * the record is put back (another writer growing the log would make the intent read as landed).
   */
  async #write(writer: ImportWriter, id: SessionId, record: StreamRecord, next: StreamRecord, at: number, events: EncodedEvent[]): Promise<void> {
    const kv = this.host.kv!
    if (events.length === 0) return kv.put(recordKey(id), JSON.stringify(next), DURABLE)
    await kv.put(recordKey(id), JSON.stringify({ ...record, intent: { at, next } }), DURABLE)
    try {
      await writer.append(events)
    } catch (err) {
      await kv.put(recordKey(id), JSON.stringify(record), DURABLE).catch(() => {})
      throw err
    }
  }

  /**
   * A copy of another server's stream (`store.follow`) moves on: its events appended (the session
   * made at the first), the offset kept with them, so a restart resumes where the copy ends;
   * 'conflict' when the copy is not at `from` (another follower moved it, or it follows another URL).
   */
  async #follow(request: Extract<StreamRequest, { op: 'follow' }>): Promise<StreamAnswer> {
    const { id, url, from, to } = request
    let answer: StreamAnswer | undefined
    const locked = await this.#writers.locked(id, async (writer) => {
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
      await this.#write(writer, id, record, next, length, events)
      answer = { status: 'followed', stream: stateOf(next, length + events.length) }
    })
    if (locked) return { status: 'locked' }
    if (answer?.status === 'followed') this.host.wrote()
    return answer!
  }

  async #delete(id: SessionId): Promise<StreamAnswer> {
    const found = await this.#find(id, true)
    if (found.status !== 'ok') return found
    const forks = (await this.host.kv?.list(['session', id, 'stream-fork'], { limit: 1 })) ?? []
    if (forks.length > 0) {
      // Forks stand on it: gone to clients, kept until the last of them goes.
      const locked = await this.#writers.locked(id, async () => {
        await this.host.kv!.put(recordKey(id), JSON.stringify({ ...found.record, gone: true }), DURABLE)
      })
      return locked ? { status: 'locked' } : { status: 'deleted' }
    }
    await this.#removeStream(id, found.header, true)
    return { status: 'deleted' }
  }

  /** Deletes a stream's session; then its source, if that was deleted and this was its last fork. */
  async #removeStream(id: SessionId, header: SessionHeader, owned: boolean): Promise<void> {
    // Its writer, when held here, let go first (at once from a write queued for it; else after those queued).
    await (owned ? this.#writers.release(id) : this.#writers.letGo(id))
    await this.host.remove(id)
    this.host.wrote()
    const source = header.origin === 'fork' ? header.forkedFrom : undefined
    if (source === undefined || !this.host.kv) return
    const info = await this.host.reader.find(source)
    if (!info) return
    await this.host.kv.delete(forkKey(source, id))
    const record = await this.#record(source, info.length)
    if (record.gone && (await this.host.kv.list(['session', source, 'stream-fork'], { limit: 1 })).length === 0)
      await this.#removeStream(source, info.header, false)
  }
}
