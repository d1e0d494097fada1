// `sessionfold delete <id>... [--tree]`: deletes sessions, all or none. Every named session
// must exist and none of them (nor, with --tree, any descendant) may be open for writing by
// anyone: the command takes the writer lock of every session it will delete before it
// deletes the first, so no writer can open one, append to it or spawn under it meanwhile,
// and holds them all until it is done.
import type { SessionInfo } from '../storage/types'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionId } from '../core/model'
import type { Engine } from '../engine'
import type { WriterLocks } from '../storage/locks'
import { descendants, parentsFirst } from './lineage'
import type { Output } from './output'

/**
 * Locks for the engine that deletes: a session already locked by this command (`held`) is
 * handed to the engine's delete as it is; any other is taken from the store's locks.
 */
export function handOverLocks(locks: WriterLocks, held: ReadonlyMap<SessionId, unknown>): WriterLocks {
  return {
    acquire: (id) => (held.has(id) ? Promise.resolve(async () => {}) : locks.acquire(id)),
    isHeld: (id) => locks.isHeld(id),
  }
}

export async function deleteSessions(
  engine: Engine,
  out: Output,
  locks: WriterLocks,
  held: Map<SessionId, () => Promise<void>>,
  ids: SessionId[],
  tree: boolean,
): Promise<number> {
  try {
    // 1. Every named session exists (a damaged one can be deleted: that is one reason to).
    const targets = new Map<SessionId, SessionInfo | undefined>()
    for (const id of ids) {
      let info: SessionInfo | undefined
      try {
        info = await engine.reader.find(id)
        if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `${where(id)} does not exist; nothing was deleted`, { sessionId: id })
      } catch (err) {
        if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
      }
      targets.set(id, info)
    }
    // 2. Lock them, then (with --tree) find their descendants and lock those, until a walk
    // finds no session it has not locked: with every parent locked, no catalog can grow.
    const lock = async (id: SessionId) => {
      if (held.has(id)) return
      try {
        held.set(id, await locks.acquire(id))
      } catch (err) {
        if (isSessionfoldError(err, 'SESSION_LOCKED'))
          throw new SessionfoldError('SESSION_LOCKED', `${where(id)} is open for writing; nothing was deleted`, { sessionId: id })
        throw err
      }
    }
    for (const id of targets.keys()) await lock(id)
    for (let grown = tree; grown; ) {
      grown = false
      for (const id of ids) {
        const found = await descendants(engine, id)
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
    // 3. Children before their parents. Deleting is one rename per session, so a run that is
    // interrupted (a crash, a full disk) stops between two sessions; children first means what
    // is left is still whole from the top: every remaining session is still reachable from
    // the parent it was to be deleted with (that parent's catalog lists the deleted ones as
    // "unavailable", as for any deleted child), and the same command run again finishes the
    // job. Parents first would leave orphans that no catalog reaches and no --tree finds.
    const readable = [...targets.values()].filter((i): i is SessionInfo => i !== undefined)
    const order = [
      ...parentsFirst(readable)
        .map((i) => i.header.id)
        .reverse(),
      ...[...targets].filter(([, i]) => !i).map(([id]) => id),
    ]
    const deleted: SessionId[] = []
    for (const id of order) {
      await engine.deleteSession(id)
      deleted.push(id)
    }
    if (out.json) await out.value({ deleted })
    else await out.line(`deleted ${deleted.length} session${deleted.length === 1 ? '' : 's'}: ${deleted.join(', ')}`)
    return 0
  } finally {
    for (const release of held.values()) await release().catch(() => {})
    held.clear()
  }
}
