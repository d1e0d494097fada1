// Deleting sessions, one or a tree (store.deleteSession(id, { tree }) and the CLI's delete), all
// or nothing: every session to delete is locked for writing before the first is deleted, so no
// writer can open one, append to it or spawn under it meanwhile, and the locks are held until
// the last is gone. With `tree`, a session's descendants (from the parent-owned catalogs) are
// locked too, again until a walk finds none it has not locked: with every parent locked, no
// catalog can grow. Then children before their parents: deleting is one step per session, so a
// delete that is interrupted (a crash, a full disk) stops between two sessions, and what is
// left is still whole from the top (the parent it was to be deleted with still names each
// remaining session), so the same call again finishes the job. Parents first would leave
// orphans that no catalog reaches and no tree delete finds.
import type { SubagentListEntry } from '../core/children'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionId } from '../core/model'
import type { WriterLocks } from '../storage/locks'
import type { SessionInfo } from '../storage/types'
import { assertSessionId } from '../core/validate'
import type { LiveSessions } from './live-sessions'
import type { StoreReader } from './reader'
import type { SessionIndex } from './session-index'
import type { Tombstones } from './tombstones'
import { descendants, parentsFirst } from './tree'

/** How sessions are deleted (`deleteSessions`). */
export interface DeleteOptions {
  /** Each named session with every descendant in its catalogs. Default false: that session alone. */
  tree?: boolean
  /** A named session that does not exist is SESSION_NOT_FOUND (the CLI); default: passed over quietly (the API). */
  mustExist?: boolean
}

/** What a delete needs of the engine. */
export interface DeleteHost {
  reader: Pick<StoreReader, 'find'>
  locks: WriterLocks
  listChildren(id: SessionId, options: { recursive: true }): Promise<SubagentListEntry[]>
  /** The session index, which forgets a deleted session's row and entries. */
  index: Pick<SessionIndex, 'row' | 'deleted'> | undefined
  /** Live sessions: a deleted one's views here hear it (its lock held by the delete). */
  sessions: Pick<LiveSessions, 'delete'>
  /** Tells other engines (other tabs). */
  onDelete: ((id: SessionId) => void) | undefined
  /** Where the tombstone of each deleted life is kept, written before its session goes. */
  tombstones: Pick<Tombstones, 'add'>
}

/** Deletes one session whose writer lock the delete holds (`info` undefined: its log is damaged, its header unread). */
async function remove(host: DeleteHost, id: SessionId, info: SessionInfo | undefined, deletedAt: number): Promise<void> {
  if (info) await host.tombstones.add({ id, createdAt: info.header.createdAt, deletedAt })
  const row = await host.index?.row(id)
  await host.sessions.delete(id, true)
  await host.index?.deleted(id, row)
  host.onDelete?.(id)
}

/** Deletes `ids` (with `tree`, each with its descendants), all or nothing, children first: the ids deleted, in that order. */
export async function deleteSessions(host: DeleteHost, ids: readonly SessionId[], options: DeleteOptions = {}): Promise<SessionId[]> {
  const held = new Map<SessionId, () => Promise<void>>()
  try {
    // 1. The named sessions that exist (a damaged one can be deleted: that is one reason to).
    const targets = new Map<SessionId, SessionInfo | undefined>()
    for (const id of ids) {
      assertSessionId(id)
      try {
        const info = await host.reader.find(id)
        if (info) targets.set(id, info)
        else if (options.mustExist) throw new SessionfoldError('SESSION_NOT_FOUND', `${where(id)} does not exist; nothing was deleted`, { sessionId: id })
      } catch (err) {
        if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
        targets.set(id, undefined)
      }
    }
    // 2. Lock them, then their descendants, until a walk finds no session it has not locked.
    const lock = async (id: SessionId) => {
      if (held.has(id)) return
      try {
        held.set(id, await host.locks.acquire(id))
      } catch (err) {
        if (isSessionfoldError(err, 'SESSION_LOCKED'))
          throw new SessionfoldError('SESSION_LOCKED', `${where(id)} is open for writing; nothing was deleted`, { sessionId: id })
        throw err
      }
    }
    for (const id of targets.keys()) await lock(id)
    for (let grown = options.tree === true; grown; ) {
      grown = false
      for (const id of ids) {
        if (!targets.has(id)) continue
        const found = await descendants(host, id)
        const problem = found.problems[0]
        if (problem) {
          throw new SessionfoldError(
            'CORRUPT_LOG',
            `the tree under ${where(id)} cannot be read whole: ${problem.message}; nothing was deleted (delete sessions by id instead)`,
            { sessionId: problem.id },
          )
        }
        for (const info of found.infos) {
          if (targets.has(info.header.id)) continue
          targets.set(info.header.id, info)
          await lock(info.header.id)
          grown = true
        }
      }
    }
    // 3. Children before their parents; a damaged session (no header to order by) last.
    const readable = [...targets.values()].filter((i): i is SessionInfo => i !== undefined)
    const order = [
      ...parentsFirst(readable)
        .map((i) => i.header.id)
        .reverse(),
      ...[...targets].filter(([, i]) => !i).map(([id]) => id),
    ]
    const now = Date.now()
    for (const id of order) await remove(host, id, targets.get(id), now)
    return order
  } finally {
    for (const release of held.values()) await release().catch(() => {})
  }
}
