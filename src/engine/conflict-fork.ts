// A sync conflict resolved without loss (DESIGN §15, `connect`'s onConflict: 'fork'): this
// store and the server hold different events at one seq of a session. The server's history
// keeps the id; this store's events after the point where the two part move to a new session,
// a fork of the common prefix (origin 'fork', forkedFrom the session) with the same seqs, which
// the replication then pushes like any new session. Both steps hold the session's writer lock,
// so the move waits while a writer has it open ('locked': tried again by the next round).
//
// Each step can be repeated after a crash: the fork's id is derived from the session's life,
// the parting seq and this copy's chain, so a second try finds the fork it made (and finishes
// it) rather than making another; the replacement is a delete and a re-create of that life,
// which the replication finishes by pulling the session whole if it was cut between the two.
import type { ConflictFork } from '../core/changes'
import type { SessionHeader, SessionId } from '../core/model'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import { CHAIN_ZERO, chainOver } from '../core/chain'
import { hash53 } from '../core/hash'
import { MAX_SESSION_ID_LENGTH } from '../core/limits'
import { encodeEvent, type EncodedEvent } from '../core/validate'
import type { WriterLocks } from '../storage/locks'
import { sameHeader, type ImportWriter } from './apply-changes'
import { checkBatch } from './change-batch'
import type { LiveSessions } from './live-sessions'
import type { StoreReader } from './reader'
import type { SessionIndex } from './session-index'

/** What resolving a conflict needs of the engine. */
export interface ConflictForkHost {
  reader: Pick<StoreReader, 'find' | 'pages'>
  locks: WriterLocks
  maxEventBytes: number
  sessions: Pick<LiveSessions, 'withImportWriter' | 'replaceLog'>
  index: Pick<SessionIndex, 'row' | 'deleted'> | undefined
  now(): number
}

/** The id of the fork that takes a copy's events from `at` on: the same for a retry of the same move. */
export function forkIdOf(header: SessionHeader, at: number, chain: string): SessionId {
  const tag = `-f${hash53(`${header.id}\u0000${header.createdAt}\u0000${at}\u0000${chain}`)}`
  return `${header.id.slice(0, MAX_SESSION_ID_LENGTH - tag.length)}${tag}`
}

/**
 * `serverCopy`: a change batch holding the server's whole copy of one session (one entry from
 * seq 0), checked like any batch (INVALID_ARGUMENT, nothing written).
 */
export async function forkConflict(host: ConflictForkHost, serverCopy: unknown): Promise<ConflictFork> {
  const { entries } = checkBatch(serverCopy, host.maxEventBytes)
  const entry = entries[0]
  if (entries.length !== 1 || entry!.from !== 0) {
    throw new SessionfoldError('INVALID_ARGUMENT', `a conflict is resolved with one session's whole copy (one entry from seq 0), got ${entries.length} entries`)
  }
  const server = entry!
  const id = server.header.id
  let release: () => Promise<void>
  try {
    release = once(await host.locks.acquire(id))
  } catch (err) {
    if (isSessionfoldError(err, 'SESSION_LOCKED')) return 'locked'
    throw err
  }
  try {
    const info = await host.reader.find(id)
    if (!info || !sameHeader(info.header, server.header)) return 'none'
    const local: EncodedEvent[] = []
    for await (const page of host.reader.pages(id, { from: 0, to: info.length })) for (const e of page) local.push(encodeEvent(e, id, Number.MAX_SAFE_INTEGER))
    let at = 0
    while (at < local.length && at < server.events.length && local[at]!.json === server.events[at]!.json) at++
    if (at === local.length) return 'none'
    const forkedAs = forkIdOf(
      info.header,
      at,
      chainOver(
        CHAIN_ZERO,
        local.map((e) => e.json),
      ),
    )
    if ((await writeFork(host, info.header, forkedAs, at, local)) === 'locked') return 'locked'
    // The session takes the server's history: its views here get the new values (reset).
    const row = await host.index?.row(id)
    await host.sessions.replaceLog(server.header, server.events, release, async () => host.index?.deleted(id, row))
    return { forkedAs, at }
  } finally {
    await release()
  }
}

/** Makes the fork (or finishes the one a cut try made): seed `[0, at)`, then this copy's own events. */
async function writeFork(
  host: ConflictForkHost,
  header: SessionHeader,
  forkedAs: SessionId,
  at: number,
  local: readonly EncodedEvent[],
): Promise<'locked' | undefined> {
  const made = await host.reader.find(forkedAs)
  if (made && (made.header.forkedFrom !== header.id || made.header.seedLength !== at)) {
    throw new SessionfoldError('SESSION_EXISTS', `${where(forkedAs)}, the fork a conflict of ${where(header.id)} makes, exists as another session`, {
      sessionId: forkedAs,
    })
  }
  if (made && made.length >= local.length) return undefined
  return host.sessions.withImportWriter(forkedAs, async (writer: ImportWriter) => {
    if (!made) {
      const fork: SessionHeader = {
        version: header.version,
        id: forkedAs,
        createdAt: host.now(),
        seedLength: at,
        delegationDepth: header.delegationDepth,
        origin: 'fork',
        forkedFrom: header.id,
      }
      if (header.cwd !== undefined) fork.cwd = header.cwd
      await writer.create(fork, local.slice(0, at))
    }
    await writer.append(local.slice(made ? made.length : at))
  })
}

function once(f: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined
  return () => (done ??= f())
}
