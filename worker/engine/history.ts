// History rows: a sparse history of checkpoint rows, so a session can be read as of any point
// (store.observe(id, { at }), DESIGN §9) by restoring one row and folding a bounded number of
// events, whatever the log's length. Like the latest row they are a cache: checked on every read
// (witness, checksum, versions, schemas, no unit beyond the point read), never authoritative,
// written only by a session's writer (a read never writes back), and rebuilt by the writer when
// they are missing (a log imported or synced in has none at first).
//
// Where rows go: the first checkpoint row written at least HISTORY_EVERY events after the newest
// history row is kept as a history row too, provided the row is at most 1/HISTORY_SHARE of the
// bytes of the events since that row. Rows of small states (the usual case) land every
// HISTORY_EVERY events or so, a few hundred bytes per thousands of events; rows of a large state
// (a catalog of many children) land further apart, so the history stays under 5 % of the log.
import type { CheckpointRow, HistoryRows } from '../../adapters/types'
import { SessionfoldError, where } from '../../src/errors'
import type { SessionHeader, SessionId } from '../../src/model'
import type { ProjectionDefinition } from '../../src/projection'
import { checkpointRowOf, foldEvent, restoreSlots, type UnitSlot } from '../units'
import type { StoreReader } from './reader'

/** Events between history rows, at least. */
export const HISTORY_EVERY = 1024
/** A history row takes at most 1/HISTORY_SHARE of the bytes of the events since the row before it. */
export const HISTORY_SHARE = 20

/** One live session's history bookkeeping (in its CheckpointState). */
export interface HistoryState {
  /** The position of the newest history row, once looked up (0: none). */
  at?: number
  /** Bytes of events folded here since that row (an underestimate after an open: rows land later, never too close). */
  bytes: number
  /** The size of the last checkpoint row built (0 until one is). */
  rowBytes: number
}

/** Whether the next checkpoint row would be kept as a history row: the checkpoint policy writes one then, whatever its pacing. */
export function historyDue(h: HistoryState, at: number): boolean {
  return at >= HISTORY_EVERY && at - (h.at ?? 0) >= HISTORY_EVERY && h.rowBytes * HISTORY_SHARE <= h.bytes
}

/** What the keeper needs of a live session. */
export interface HistorySession {
  readonly header: SessionHeader
  readonly checkpoint: { readonly history: HistoryState }
}

export class HistoryKeeper {
  /** Rebuilds running, by session: one at a time per session, stopped by close(). */
  readonly #rebuilds = new Map<SessionId, { stop: AbortController; done: Promise<void> }>()
  #closed = false

  constructor(
    private readonly history: HistoryRows,
    private readonly reader: StoreReader,
    private readonly defs: readonly ProjectionDefinition[],
    private readonly onError: (err: SessionfoldError) => void,
  ) {}

  /**
   * After the checkpoint row `row` (of `bytes` bytes, the state after the first `at` events) was
   * stored: keeps it as a history row too when one is due. The first time, looks up the newest
   * history row, and starts a rebuild when rows are missing behind this point.
   */
  async afterRow(session: HistorySession, row: CheckpointRow, bytes: number, at: number): Promise<void> {
    const h = session.checkpoint.history
    const id = session.header.id
    h.rowBytes = bytes
    if (at < HISTORY_EVERY || this.#rebuilds.has(id) || this.#closed) return
    if (h.at === undefined) {
      const positions = await this.history.list(id)
      h.at = positions.at(-1) ?? 0
      if (at - h.at >= 2 * HISTORY_EVERY) {
        // Rows missing behind this point (a log imported, synced, or written before history
        // rows existed): folded again from the newest row, in the background. The rows depend
        // only on the durable events before them, so the writer need not stay for it.
        this.#rebuild(session, h.at, at)
        return
      }
    }
    if (at - h.at >= HISTORY_EVERY && bytes * HISTORY_SHARE <= h.bytes) {
      await this.history.put(id, at, row)
      h.at = at
      h.bytes = 0
    }
  }

  #rebuild(session: HistorySession, from: number, to: number): void {
    const id = session.header.id
    const stop = new AbortController()
    const done = rebuildRows(this, session, from, to, stop.signal)
      .catch((err: unknown) => {
        if (stop.signal.aborted) return // stopped by close: the next writer goes on from the newest row
        this.onError(new SessionfoldError(
          err instanceof SessionfoldError ? err.code : 'STORAGE_UNAVAILABLE',
          `history rows of ${where(id)} were not rebuilt: ${(err as Error)?.message ?? err}`,
          { sessionId: id, cause: err },
        ))
      })
      .finally(() => this.#rebuilds.delete(id))
    this.#rebuilds.set(id, { stop, done })
  }

  /** Waits for the rebuild of `id`, if one runs (tests, and a writer that wants it whole). */
  async settled(id: SessionId): Promise<void> {
    await this.#rebuilds.get(id)?.done
  }

  /** Stops every rebuild (the rows written so far stay), and waits for them. */
  async close(): Promise<void> {
    this.#closed = true
    for (const r of this.#rebuilds.values()) r.stop.abort()
    await Promise.all([...this.#rebuilds.values()].map((r) => r.done))
  }

  /** @internal For rebuildRows. */
  get parts(): { history: HistoryRows; reader: StoreReader; defs: readonly ProjectionDefinition[] } {
    return { history: this.history, reader: this.reader, defs: this.defs }
  }
}

/** Folds `[from, to)` again from the history row at `from` (or from nothing), writing the rows that are due on the way; the session's newest row is then the last written. */
async function rebuildRows(keeper: HistoryKeeper, session: HistorySession, from: number, to: number, signal: AbortSignal): Promise<void> {
  const { history, reader, defs } = keeper.parts
  const { header } = session
  const id = header.id
  const start = from > 0 ? await history.get(id, from).catch(() => undefined) : undefined
  const restored = restoreSlots(defs, header, start?.row, from)
  // A start row that cannot be trusted: from the beginning (rows before it stay; reads check them).
  const trusted = restored.kept > 0 && start !== undefined
  const slots: UnitSlot[] = trusted ? restored.slots : restoreSlots(defs, header, undefined, 0).slots
  let last = trusted ? start.at : 0
  let bytes = 0
  for await (const page of reader.pages(id, { from: trusted ? restored.from : 0, to, signal })) {
    for (const e of page) {
      if (signal.aborted) return
      foldEvent(slots, e)
      bytes += JSON.stringify(e).length
      const pos = e.seq + 1
      if (pos - last < HISTORY_EVERY || pos <= from) continue
      const built = checkpointRowOf(header, slots)
      if (built.bytes * HISTORY_SHARE > bytes) continue
      await history.put(id, pos, built.row)
      last = pos
      bytes = 0
    }
  }
  const h = session.checkpoint.history
  h.at = Math.max(h.at ?? 0, last)
}
