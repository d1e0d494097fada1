// Following: another engine (another tab, thread or process) appended to a session that this
// engine keeps live without writing it. What is new is read from storage, folded and pushed.
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionEvent, SessionHeader } from '../core/model'
import { foldEvent, type UnitSlot } from './units'
import type { LogState } from './append-pipeline'
import type { StoreReader } from './reader'

/** What following reads and moves of a live session. */
export interface FollowedSession {
  readonly header: SessionHeader
  readonly slots: readonly UnitSlot[]
  readonly log: LogState
  readonly writer?: unknown
}

export interface FollowContext<S extends FollowedSession> {
  reader: Pick<StoreReader, 'find' | 'pages'>
  /** False once the session is no longer the one kept live here (released, deleted, closed). */
  isCurrent: (session: S) => boolean
  /** Called after each page folded. */
  folded: (session: S) => void
  /** The session is gone from storage (deleted, or another life of its id in its place). */
  gone: (session: S) => void
  onError: (err: SessionfoldError) => void
}

/** Events a growth notice carried: seqs `from`, `from + 1`, … as parsed, not yet checked. */
export interface FollowTail {
  from: number
  events: readonly unknown[]
}

/** A follow step queued on a session's chain and not started yet: later calls join it. */
interface Queued {
  /** The length to read up to; undefined: look it up when the step starts. */
  known: number | undefined
  /** Events notices carried, folded without a read where they continue the log. */
  tails: FollowTail[]
  step: Promise<void>
}
const queued = new WeakMap<LogState, Queued>()

/** The events of `tail` past `durable`, if it reaches back to it and each is the event of its seq. */
function usable(tail: FollowTail, durable: number): SessionEvent[] | undefined {
  if (tail.from > durable || tail.from + tail.events.length <= durable) return undefined
  const events = tail.events.slice(durable - tail.from) as SessionEvent[]
  for (let i = 0; i < events.length; i++) {
    const e = events[i]
    if (typeof e !== 'object' || e === null || e.seq !== durable + i || typeof e.type !== 'string') return undefined
  }
  return events
}

/**
 * Folds what storage holds beyond the session's durable length: up to `known` when the caller
 * knows the length it reached (a growth notice carries it: no lookup, and nothing at all to
 * do when this engine already holds that much), else up to the length storage has now. Events
 * a notice carried (`tail`) are folded as they are where they continue the log; the rest is read.
 * Appends made while it reads are picked up by the next call; calls run one at a time per
 * session, on its fold chain, and calls made while one waits its turn join it: a burst of
 * notices costs one read, however many arrive while the engine is behind.
 */
export function follow<S extends FollowedSession>(session: S, context: FollowContext<S>, known?: number, tail?: FollowTail): Promise<void> {
  const { log } = session
  const id = session.header.id
  if (known !== undefined && known <= log.durable) return Promise.resolve()
  const waiting = queued.get(log)
  if (waiting) {
    if (waiting.known !== undefined) waiting.known = known === undefined ? undefined : Math.max(waiting.known, known)
    if (tail) waiting.tails.push(tail)
    return waiting.step
  }
  const entry: Queued = { known, tails: tail ? [tail] : [], step: Promise.resolve() }
  const step = log.folds.then(async () => {
    queued.delete(log)
    if (session.writer || !context.isCurrent(session)) return
    const fold = (page: readonly SessionEvent[]) => {
      for (const e of page) foldEvent(session.slots, e)
      log.durable += page.length
      log.asOfSeq = log.durable - 1
      log.nextSeq = log.durable
      context.folded(session)
    }
    for (const t of entry.tails.sort((a, b) => a.from - b.from)) {
      const events = usable(t, log.durable)
      if (events) fold(events)
    }
    let to = entry.known
    if (to === undefined) {
      const info = await context.reader.find(id)
      if (!info || info.header.createdAt !== session.header.createdAt) {
        context.gone(session)
        return
      }
      to = info.length
    }
    if (to <= log.durable) return
    for await (const page of context.reader.pages(id, { from: log.durable, to })) fold(page)
  })
  log.folds = step.catch((err: unknown) => {
    if (isSessionfoldError(err, 'SESSION_NOT_FOUND')) return context.gone(session) // deleted while it was read
    context.onError(
      err instanceof SessionfoldError
        ? err
        : new SessionfoldError('STORAGE_UNAVAILABLE', `could not follow ${where(id)}: ${(err as Error)?.message ?? err}`, { sessionId: id, cause: err }),
    )
  })
  entry.step = log.folds
  queued.set(log, entry)
  return log.folds
}
