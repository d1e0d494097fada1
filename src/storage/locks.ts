// "Is this session open for writing?" is asked in one place, so that the answer can come from
// this engine alone (here), lock files shared by Node processes, or Web Locks shared by tabs.
import { SessionfoldError, where } from '../core/errors'
import type { SessionId } from '../core/model'

export interface WriterLocks {
  /** Takes the session's write lock, or rejects with SESSION_LOCKED. Resolves with its release. */
  acquire(id: SessionId): Promise<() => Promise<void>>
  /** True while some client holds the session open for writing. */
  isHeld(id: SessionId): Promise<boolean>
  /**
   * Whether another engine was refused the session's lock since `since` (ms since the epoch),
   * asked by one that holds it for a while (a busy Durable Stream) before it keeps it longer.
   * Optional: a holder that cannot ask lets go every so often all the same.
   */
  wanted?(id: SessionId, since: number): Promise<boolean>
}

export function locked(id: SessionId): SessionfoldError {
  return new SessionfoldError('SESSION_LOCKED', `${where(id)} is already open for writing`, { sessionId: id })
}

/** Locks that only this engine sees. */
export function createLocalLocks(): WriterLocks {
  const held = new Set<SessionId>()
  return {
    async acquire(id) {
      if (held.has(id)) throw locked(id)
      held.add(id)
      let released = false
      return async () => {
        if (!released) held.delete(id)
        released = true
      }
    },
    async isHeld(id) {
      return held.has(id)
    },
    // No other engine sees these locks.
    wanted: async () => false,
  }
}
