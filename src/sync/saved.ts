// What a replication keeps in its store between runs (one meta record per server and token):
// its two cursors, and the work a run left to do, so that a reload or a reconnect finishes it
// rather than forgetting it: sessions to move to a fork, to push again (the server skipped
// them) and to fetch again (skipped here: open for writing).
import type { ChangeCursor } from '../core/changes'
import type { SessionId } from '../core/model'

export interface Saved {
  push: ChangeCursor | null
  /** The server's cursor: opaque, sealed by the server. */
  pull: string | null
  fork: SessionId[]
  pushAgain: SessionId[]
  pullAgain: SessionId[]
}

/** The record read back (a field it lacks, or holds in another shape, is empty: sending again what the server has is harmless). */
export function readSaved(text: string): Saved {
  const s = JSON.parse(text) as Record<string, unknown>
  const ids = (v: unknown): SessionId[] => (Array.isArray(v) ? v.filter((id): id is string => typeof id === 'string') : [])
  return {
    push: typeof s.push === 'object' ? (s.push as ChangeCursor | null) : null,
    pull: typeof s.pull === 'string' ? s.pull : null,
    fork: ids(s.fork),
    pushAgain: ids(s.pushAgain),
    pullAgain: ids(s.pullAgain),
  }
}

/** The record to keep: lists only when not empty (a record of a run with nothing left to do is its cursors). */
export function writeSaved(s: Saved): string {
  const lists: Partial<Saved> = {}
  for (const key of ['fork', 'pushAgain', 'pullAgain'] as const) if (s[key].length > 0) lists[key] = [...new Set(s[key])]
  return JSON.stringify({ push: s.push, pull: s.pull, ...lists })
}

/**
 * Sessions to do again (push or pull), each with the events it holds back from the server
 * (counted in `pending`): a try takes them all, and gives them back if it fails, so that a
 * dropped request loses none; the record keeps those waiting and those taken.
 */
export class Again {
  readonly #waiting = new Map<SessionId, number>()
  readonly #taken = new Map<SessionId, number>()

  get size(): number {
    return this.#waiting.size
  }

  add(id: SessionId, events = 0): void {
    this.#waiting.set(id, (this.#waiting.get(id) ?? 0) + events)
  }

  /** The events of the sessions waiting (not those a try has taken: that try counts them). */
  events(): number {
    let n = 0
    for (const events of this.#waiting.values()) n += events
    return n
  }

  /** Every session waiting or taken: what the record keeps. */
  ids(): SessionId[] {
    return [...new Set([...this.#waiting.keys(), ...this.#taken.keys()])]
  }

  /** Runs `again` on the sessions waiting, which it takes; if it fails they wait again (with any it added back). */
  async take(again: (ids: SessionId[]) => Promise<void>): Promise<void> {
    for (const [id, events] of this.#waiting) this.#taken.set(id, events)
    this.#waiting.clear()
    try {
      await again([...this.#taken.keys()])
    } catch (err) {
      for (const [id, events] of this.#taken) if (!this.#waiting.has(id)) this.#waiting.set(id, events)
      throw err
    } finally {
      this.#taken.clear()
    }
  }
}
