// The append pipeline, the engine's one way of writing a log: validate and number the events,
// send them to storage, and once they are durable fold them in seq order and hand the session
// on (change feed, checkpoint policy, other engines). Appends from clients, spawns, forks,
// imports and store-to-store sync all come through here.
import { appendInputSchema, parseInput } from '../core/inputs'
import type { EventRegistry } from './event-registry'
import type { StorageAdapter } from '../storage/types'
import { SessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { AppendResult } from '../core/protocol'
import { TURN_END } from '../core/units/payloads'
import { encodeEventBody, eventFromBody, type EncodedEvent } from '../core/validate'
import { foldEvent, type UnitSlot } from './units'

/** In-flight appends of one session may hold this many encoded bytes before new ones wait. */
const WRITE_BUFFER_BYTES = 16 * 1024 * 1024

/** Where one live session's log stands. */
export interface LogState {
  /** Last seq folded. */
  asOfSeq: number
  /** Durable length: the seq after the last durable, folded event. */
  durable: number
  /** Length including appends in flight: the seq the next append gets. */
  nextSeq: number
  /** A position at which the fold calls `reached` (where a history row is due), if any. */
  mark?: number
  /** Folds run in seq order, each on the one before. */
  folds: Promise<void>
  inflight: number
  inflightBytes: number
  /** The first failure among appends in flight: the ones behind it report it too. */
  failed?: unknown
}

/** What the pipeline reads and moves of a live session. */
export interface PipelineSession {
  readonly header: SessionHeader
  readonly slots: readonly UnitSlot[]
  readonly log: LogState
}

export interface AppendPipelineOptions<S extends PipelineSession> {
  storage: Pick<StorageAdapter, 'createSession' | 'append' | 'deleteSession'>
  /** Checks each event an app appends against its type's definition, and stamps its version. */
  events: Pick<EventRegistry, 'check'>
  maxEventBytes: number
  now: () => number
  /** Called once `events` more (of `bytes` bytes, the last at `lastTime`) are durable and folded (`turnEnded`: one was a turn/end). */
  folded: (session: S, events: number, turnEnded: boolean, bytes: number, lastTime: number) => void
  /** Called when the fold reaches `log.mark` events, before the rest of that batch is folded (a history row is due there). */
  reached?: (session: S, position: number) => void
  /** Called with each batch once durable and folded, in seq order, before `folded` (the chain steps over it: chains.ts). */
  appended?: (session: S, encoded: readonly EncodedEvent[]) => void
}

/** A log of `length` durable, folded events with nothing in flight. */
export function newLogState(length: number): LogState {
  return { asOfSeq: length - 1, durable: length, nextSeq: length, folds: Promise.resolve(), inflight: 0, inflightBytes: 0 }
}

const totalBytes = (encoded: readonly EncodedEvent[]) => encoded.reduce((n, e) => n + e.json.length, 0)

export class AppendPipeline<S extends PipelineSession> {
  constructor(private readonly options: AppendPipelineOptions<S>) {}

  /** Stores a new session with its seed (a fork's copies, else none). */
  create(header: SessionHeader, seed: readonly EncodedEvent[]): Promise<void> {
    return this.options.storage.createSession(header, seed)
  }

  /** Deletes a session's log, checkpoint and header. */
  remove(id: SessionId): Promise<void> {
    return this.options.storage.deleteSession(id)
  }

  /** Appends event inputs (`{ type, data?, time? }`, one or a list), as the engine's own callers give them. */
  appendInputs(session: S, input: unknown, options?: unknown): Promise<AppendResult> {
    const id = session.header.id
    const inputs = Array.isArray(input) ? input : [input]
    const now = this.options.now()
    return this.appendBodies(
      session,
      inputs.map((e) => encodeEventBody(e, id, { maxBytes: this.options.maxEventBytes, now })),
      options,
    )
  }

  /**
   * Appends events already encoded as bodies (`encodeEventBody`, as clients send them):
   * checked again, numbered, made durable and folded. All-or-nothing per call.
   * `expectedSeq`: the seq the first event must receive, else SEQ_CONFLICT.
   */
  async appendBodies(session: S, bodies: unknown, options?: unknown): Promise<AppendResult> {
    const id = session.header.id
    const log = session.log
    if (!Array.isArray(bodies) || bodies.length === 0)
      throw new SessionfoldError('INVALID_ARGUMENT', `append to ${where(id)} needs at least one event`, { sessionId: id })
    const expected = options === undefined ? undefined : parseInput(appendInputSchema, options, 'append options', id).expectedSeq
    while (log.inflightBytes > WRITE_BUFFER_BYTES) await log.folds // bounded write buffer
    const first = log.nextSeq
    const { events, maxEventBytes } = this.options
    // Bad events first (what the request itself gets wrong), as the client's own checks come first.
    const encoded = bodies.map((b: unknown, i) => events.check(eventFromBody(b as string, first + i, id, maxEventBytes), id))
    if (expected !== undefined && expected !== first) {
      throw new SessionfoldError('SEQ_CONFLICT', `append to ${where(id)} expected seq ${expected}, but the next seq is ${first}`, {
        sessionId: id,
        seq: expected,
      })
    }
    return this.write(session, encoded)
  }

  /** Appends events numbered elsewhere (a spawn's first events, an import): the first must be the next seq. */
  appendNumbered(session: S, encoded: readonly EncodedEvent[]): Promise<AppendResult> {
    const first = encoded[0]?.event.seq
    if (first !== session.log.nextSeq) {
      const id = session.header.id
      throw new SessionfoldError('SEQ_CONFLICT', `append to ${where(id, first)} conflicts: the next seq is ${session.log.nextSeq}`, {
        sessionId: id,
        seq: first,
      })
    }
    return this.write(session, encoded)
  }

  /** Waits until every append in flight has settled. */
  async settle(session: S): Promise<void> {
    while (session.log.inflight > 0) await session.log.folds
  }

  /** Sends validated, numbered events to storage, then folds them in seq order. */
  private write(session: S, encoded: readonly EncodedEvent[]): Promise<AppendResult> {
    const log = session.log
    const bytes = totalBytes(encoded)
    const first = encoded[0]!.event.seq
    log.nextSeq = first + encoded.length
    log.inflight++
    log.inflightBytes += bytes
    const durable = this.options.storage.append(session.header.id, encoded)
    durable.catch(() => {}) // observed on the chain below
    const step = log.folds.then(async () => {
      try {
        if (log.failed !== undefined) throw log.failed
        try {
          await durable
        } catch (err) {
          log.failed = err
          throw err
        }
        // e.event was parsed from the stored JSON: what a cold read sees, so live and cold agree.
        let turnEnded = false
        for (const { event } of encoded) {
          foldEvent(session.slots, event)
          if (event.type === TURN_END) turnEnded = true
          if (event.seq + 1 === log.mark) this.options.reached?.(session, log.mark)
        }
        log.durable = log.asOfSeq + 1 + encoded.length
        log.asOfSeq = log.durable - 1
        this.options.appended?.(session, encoded)
        this.options.folded(session, encoded.length, turnEnded, bytes, encoded[encoded.length - 1]!.event.time)
      } finally {
        log.inflightBytes -= bytes
        if (--log.inflight === 0) {
          // Appends numbered after a failed one failed too: number from what is durable again.
          log.nextSeq = log.durable
          log.failed = undefined
        }
      }
    })
    log.folds = step.catch(() => {})
    return step.then(() => ({ firstSeq: first, lastSeq: first + encoded.length - 1 }))
  }
}
