// Following: another engine (another tab, thread or process) appended to a session that this
// engine keeps live without writing it. What is new is read from storage, folded and pushed.
import { SessionfoldError, where } from '../../src/errors'
import type { SessionHeader } from '../../src/model'
import { foldEvent, type UnitSlot } from '../units'
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
  onError: (err: SessionfoldError) => void
}

/**
 * Folds what storage holds beyond the session's durable length. Appends made while it reads
 * are picked up by the next call; calls run one at a time per session, on its fold chain.
 */
export function follow<S extends FollowedSession>(session: S, context: FollowContext<S>): Promise<void> {
  const { log } = session
  const id = session.header.id
  const step = log.chain.then(async () => {
    if (session.writer || !context.isCurrent(session)) return
    const info = await context.reader.find(id)
    if (!info || info.length <= log.durable) return
    for await (const page of context.reader.pages(id, { from: log.durable, to: info.length })) {
      for (const e of page) foldEvent(session.slots, e)
      log.durable += page.length
      log.asOfSeq = log.durable - 1
      log.nextSeq = log.durable
      context.folded(session)
    }
  })
  log.chain = step.catch((err: unknown) => {
    context.onError(err instanceof SessionfoldError ? err : new SessionfoldError('STORAGE_UNAVAILABLE', `could not follow ${where(id)}: ${(err as Error)?.message ?? err}`, { sessionId: id, cause: err }))
  })
  return log.chain
}
