// A store closing against storage that stopped answering: its writers' close checkpoints fail,
// each after the storage's deadline (at once, not one after another: endAll below).
// Storage reported unavailable once closing began then spares the close the session index's
// last pass, which only saves the next engine a catch-up from the change feed and would wait
// one more deadline. (An engine shared by a SharedWorker's tabs begins watching at its first
// tab's close: at worst the index skips that last pass, a cache.)
import { isSessionfoldError, type SessionfoldError } from '../core/errors'
import type { LiveSessions } from './live-sessions'

export class CloseWatch {
  #closing = false
  #unavailable = false

  /** `report`, noting storage reported unavailable once closing began. */
  wrap(report: (err: SessionfoldError) => void): (err: SessionfoldError) => void {
    return (err) => {
      this.#unavailable ||= this.#closing && isSessionfoldError(err, 'STORAGE_UNAVAILABLE')
      report(err)
    }
  }

  /** Closing begins (a host ends its handles' writers before it closes the engine). */
  begin(): void {
    this.#closing = true
  }

  /** Whether the close should still write what it need not (the index's last pass). */
  get writes(): boolean {
    return !this.#unavailable
  }
}

/**
 * Ends every writer of `sessions` and forgets every record (the engine closes). The writers end
 * together: against a store that stopped answering, that takes one call's deadline, not one a
 * session. Failures go to `onError`. (The session index is not told of each, as Engine.release
 * tells it: it closes right after, with its last pass.)
 */
export async function endAll(sessions: Pick<LiveSessions, 'all' | 'release' | 'remove'>, onError: (err: SessionfoldError) => void): Promise<void> {
  const end = async (live: ReturnType<LiveSessions['all']>[number]) => {
    if (live.writer) await sessions.release(live.header.id, 'writer').catch((err: SessionfoldError) => onError(err))
    sessions.remove(live)
  }
  await Promise.all(sessions.all().map(end))
}
