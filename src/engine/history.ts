// History rows: a sparse history of checkpoint rows, so a session can be read as of any point
// (store.observe(id, { at }), DESIGN §9) by restoring one row and folding a bounded number of
// events, whatever the log's length. Like the latest row they are a cache: checked on every read
// (witness, checksum, versions, schemas, no unit beyond the point read), never authoritative,
// written only by a session's writer (a read never writes back), and rebuilt by the writer when
// they are missing (a log imported or synced in has none at first).
//
// Where rows go: every HISTORY_EVERY events after the newest history row, the append pipeline
// stops its fold at that position (LogState.mark) and the row of the states there is built at
// once and stored in the background, provided it takes at most 1/HISTORY_SHARE of the bytes of
// the events since the row before. Rows of small states (the usual case) land exactly every
// HISTORY_EVERY events, a few hundred bytes per thousand events; rows of a large state land
// further apart, or not at all, so the history stays under 5 % of the log.
import type { HistoryRows } from '../storage/types'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { ProjectionDefinition } from '../core/projection'
import { checkpointRowOf, foldEvent, restoreSlots, type UnitSlot } from './units'
import type { StoreReader } from './reader'

/** Events between history rows, at least. */
export const HISTORY_EVERY = 1024
/** A history row takes at most 1/HISTORY_SHARE of the bytes of the events since the row before it. */
export const HISTORY_SHARE = 20

/** One live session's history bookkeeping (in its CheckpointState). */
export interface HistoryState {
  /** The position of the newest history row, once looked up (0: none). */
  at?: number
  /** The lookup of the newest row is under way. */
  looking?: boolean
  /** Bytes of events folded here since that row (an underestimate after an open: rows land later, never too close). */
  bytes: number
  /** The size of the last row built (0 until one is): no row is built while it could not be kept. */
  rowBytes: number
}

/** What the keeper needs of a live session. */
export interface HistorySession {
  readonly header: SessionHeader
  readonly slots: readonly UnitSlot[]
  readonly checkpoint: { readonly history: HistoryState }
  /** `mark`: where the fold calls reached() next (the append pipeline's LogState). */
  readonly log: { mark?: number }
}

export class HistoryKeeper {
  /** Rebuilds running, by session: one at a time per session, stopped by close(). */
  readonly #rebuilds = new Map<SessionId, { stop: AbortController; done: Promise<void> }>()
  /** Rows being stored, by session, in order. */
  readonly #writes = new Map<SessionId, Promise<void>>()
  #closed = false

  constructor(
    private readonly history: HistoryRows,
    private readonly reader: StoreReader,
    private readonly defs: readonly ProjectionDefinition[],
    private readonly onError: (err: SessionfoldError) => void,
  ) {}

  /**
   * After a writer folded a batch (of `bytes` bytes) up to position `at`. The first time, looks up
   * the newest history row (and starts a rebuild when rows are missing behind this point); then
   * marks where the next row is due, so the fold builds it there, mid-batch (reached). A row
   * that did not fit the byte budget there is built at the end of a later batch, once it fits.
   */
  afterFold(session: HistorySession, at: number, bytes: number): void {
    const h = session.checkpoint.history
    h.bytes += bytes
    // Looked up half-way to the first row, so its mark is set before the fold gets there.
    if (at < HISTORY_EVERY / 2 || this.#closed || this.#rebuilds.has(session.header.id) || h.looking) return
    if (h.at === undefined) {
      h.looking = true
      this.#track(
        session.header.id,
        this.#lookup(session, at).finally(() => (h.looking = false)),
      )
      return
    }
    const mark = session.log.mark
    if ((mark !== undefined && mark > at) || at < HISTORY_EVERY) return // the fold builds it there
    if (at - h.at >= HISTORY_EVERY) this.#keep(session, at)
    else session.log.mark = h.at + HISTORY_EVERY
  }

  /** The fold reached the mark: the row of the states after exactly `at` events. */
  reached(session: HistorySession, at: number): void {
    session.log.mark = undefined
    if (this.#closed || this.#rebuilds.has(session.header.id) || session.checkpoint.history.looking) return
    this.#keep(session, at)
  }

  /** Builds the row of the states now (at `at`) and stores it in the background, when it fits the byte budget. */
  #keep(session: HistorySession, at: number): void {
    const h = session.checkpoint.history
    if (h.rowBytes * HISTORY_SHARE > h.bytes) return
    const built = checkpointRowOf(session.header, session.slots)
    h.rowBytes = built.bytes
    if (built.bytes * HISTORY_SHARE > h.bytes) return
    h.at = at
    h.bytes = 0
    session.log.mark = at + HISTORY_EVERY
    this.#track(session.header.id, this.history.put(session.header.id, at, built.row))
  }

  async #lookup(session: HistorySession, at: number): Promise<void> {
    const h = session.checkpoint.history
    h.at = (await this.history.list(session.header.id)).at(-1) ?? 0
    session.log.mark = h.at + HISTORY_EVERY
    if (at - h.at >= 2 * HISTORY_EVERY) {
      // Rows missing behind this point (a log imported, synced, or written before history rows
      // existed): folded again from the newest row, in the background. The rows depend only on
      // the durable events before them, so the writer need not stay for it.
      this.#rebuild(session, h.at, at)
      h.at = at // counted as covered: the rows after it come as appends go on
      h.bytes = 0
      session.log.mark = at + HISTORY_EVERY
    }
  }

  /** Runs `write` after the session's earlier ones; a failure is told, not thrown (rows are a cache). */
  #track(id: SessionId, write: Promise<void>): void {
    const before = this.#writes.get(id) ?? Promise.resolve()
    const done = before
      .then(() => write)
      .catch((err: unknown) => {
        if (this.#closed && isSessionfoldError(err, 'CLOSED')) return
        this.onError(
          new SessionfoldError(
            err instanceof SessionfoldError ? err.code : 'STORAGE_UNAVAILABLE',
            `a history row of ${where(id)} was not written: ${(err as Error)?.message ?? err}`,
            { sessionId: id, cause: err },
          ),
        )
      })
    this.#writes.set(id, done)
    void done.finally(() => {
      if (this.#writes.get(id) === done) this.#writes.delete(id)
    })
  }

  #rebuild(session: HistorySession, from: number, to: number): void {
    const id = session.header.id
    const stop = new AbortController()
    const done = this.#rebuildRows(session, from, to, stop.signal)
      .catch((err: unknown) => {
        if (stop.signal.aborted) return // stopped by close: the next writer goes on from the newest row
        this.onError(
          new SessionfoldError(
            err instanceof SessionfoldError ? err.code : 'STORAGE_UNAVAILABLE',
            `history rows of ${where(id)} were not rebuilt: ${(err as Error)?.message ?? err}`,
            { sessionId: id, cause: err },
          ),
        )
      })
      .finally(() => this.#rebuilds.delete(id))
    this.#rebuilds.set(id, { stop, done })
  }

  /** Waits for the rows of `id` being written and its rebuild, if one runs (tests, and a writer that wants them whole). */
  async settled(id: SessionId): Promise<void> {
    while (this.#writes.has(id) || this.#rebuilds.has(id)) {
      await this.#writes.get(id)
      await this.#rebuilds.get(id)?.done
    }
  }

  /** Stops every rebuild (the rows written so far stay), and waits for them and the rows being written. */
  async close(): Promise<void> {
    this.#closed = true
    for (const r of this.#rebuilds.values()) r.stop.abort()
    await Promise.all([...this.#rebuilds.values()].map((r) => r.done))
    await Promise.all([...this.#writes.values()])
  }

  /** Folds `[from, to)` again from the history row at `from` (or from nothing), writing the rows that are due on the way; the session's newest row is then the last written. */
  async #rebuildRows(session: HistorySession, from: number, to: number, signal: AbortSignal): Promise<void> {
    const { history, reader, defs } = this
    const { header } = session
    const id = header.id
    const start = from > 0 ? await history.get(id, from).catch(() => undefined) : undefined
    const restored = restoreSlots(defs, header, start?.row, from)
    // A start row that cannot be trusted: from the beginning (rows before it stay; reads check them).
    const trusted = restored.kept > 0 && start !== undefined
    const slots: UnitSlot[] = trusted ? restored.slots : restoreSlots(defs, header, undefined, 0).slots
    let last = trusted ? start.at : 0
    let bytes = 0
    let rowBytes = 0
    for await (const page of reader.pages(id, { from: trusted ? restored.from : 0, to, signal })) {
      for (const e of page) {
        if (signal.aborted) return
        foldEvent(slots, e)
        bytes += JSON.stringify(e).length
        const pos = e.seq + 1
        // A row that did not fit is not built again at every event: only once the bytes since would hold its last size.
        if (pos - last < HISTORY_EVERY || pos <= from || rowBytes * HISTORY_SHARE > bytes) continue
        const built = checkpointRowOf(header, slots)
        rowBytes = built.bytes
        if (built.bytes * HISTORY_SHARE > bytes) continue
        await history.put(id, pos, built.row)
        last = pos
        bytes = 0
      }
    }
    const h = session.checkpoint.history
    h.at = Math.max(h.at ?? 0, last)
  }
}
