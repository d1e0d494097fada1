// The store-wide session index (`store.sessions()`): a row per session and sorted lists of
// entries (session-rows.ts), kept over the store's key-value records for every backend alike,
// and a cache like checkpoints: rebuilt from the logs when missing or from another feed.
//
// It follows the store's change feed: a pass reads the feed after the position the index has
// reached (its state record), and for each session written since, reads its row and moves it
// on by the events it gained (a row already that long, written by another engine, is left as
// it is). This engine's own writes come with what they wrote (a hint: no read back). So the
// cost of a pass is the change since the last one, whatever the store holds; and every engine
// on the store (tabs, processes) keeps the same rows, each moving a row only forward.
import { SessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import { resolveSessionQuery, type ResolvedSessionQuery, type SessionsPage } from '../core/session-list'
import { recordsOf } from '../storage/records'
import { indexEntryKey, indexStateKey, summaryKey } from '../storage/records/keys'
import type { ChangeFeed, KeyValueStore, StorageAdapter } from '../storage/types'
import type { WriterLocks } from '../storage/locks'
import type { StoreReader } from './reader'
import {
  entriesOf,
  extendRow,
  freshRow,
  hintOf,
  parseRow,
  readable,
  readPage,
  readRows,
  removeEntries,
  writeRows,
  writeRowsForward,
  type IndexHint,
  type IndexRow,
  type RowMove,
} from './session-rows'

export interface SessionIndexOptions {
  records: KeyValueStore
  feed: ChangeFeed
  reader: Pick<StoreReader, 'find' | 'pages' | 'ids'>
  locks: Pick<WriterLocks, 'isHeld'>
  onError: (err: SessionfoldError) => void
  /** Where the backend can hear other engines' writes to the store (fs: a watch of its feed file): starts listening, returns the stop. */
  wake?: (onChange: () => void) => () => void
}

/**
 * How soon after a write of this engine a pass runs, while a list of this engine watches: writes
 * within it cost one pass. Without one, LAZY_MS: a list elsewhere reads the feed itself (and moves
 * the row from the log if this engine has not yet), so the writer's own pass may wait, and a
 * steady stream of appends pays for a pass every LAZY_MS rather than every few appends.
 */
const SOON_MS = 10
const LAZY_MS = 1000
/** How often the feed is looked at while some list is watched: other engines' writes show this soon. */
export const POLL_MS = 50
/** The same where the backend wakes the index on other engines' writes: the poll only catches what a watch missed. */
const WOKEN_POLL_MS = 500
/**
 * A feed entry may come before its events (fs records it first): a session whose log is shorter
 * than its entry says is looked at again, SOON_MS apart, this many times while a list watches
 * (after that, as before: the writer's own pass or the next entry moves its row).
 */
const BEHIND_TRIES = 30
/** The index's state (how far it read the feed) is stored at most this often, and at close: a restart after a crash reads that much of the feed again. */
const STATE_EVERY_MS = 1000
/** Feed entries read per call. */
const FEED_PAGE = 1000
/** Sessions whose rows a pass reads and writes together (a query, a transaction each step). */
const GROUP = 128

interface IndexState {
  feed: string
  at: string
}

export class SessionIndex {
  private state: IndexState | undefined
  /** When the state was last stored, and whether it moved since. */
  private stateStored = 0
  private stateDirty = false
  private loading: Promise<void> | undefined
  private readonly hints = new Map<SessionId, IndexHint>()
  /** Sessions to look at in the next pass besides the feed's (a row found damaged). */
  private readonly pending = new Set<SessionId>()
  /** Sessions the feed named at a length their log had not reached yet (see BEHIND_TRIES). */
  private readonly behind = new Map<SessionId, { want: number; tries: number }>()
  private passing: Promise<void> | undefined
  private again = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private poll: ReturnType<typeof setInterval> | undefined
  private watchers = 0
  private stopWake: (() => void) | undefined
  private closed = false
  /** close() has begun: no pass is scheduled any more (close runs the last one). */
  private closing = false
  /** Told after a pass changed rows, or a session here was deleted or opened or closed for writing. */
  readonly listeners = new Set<() => void>()

  constructor(private readonly o: SessionIndexOptions) {}

  /** This engine wrote session `hint.header.id` (a creation, an append, a metadata change). */
  wrote(hint: IndexHint): void {
    const known = this.hints.get(hint.header.id)
    if (!known || known.header.createdAt !== hint.header.createdAt || known.length <= hint.length) this.hints.set(hint.header.id, hint)
    this.soon()
  }

  /** A live session of this engine was written (its events up to `log.durable`, the last at `lastEventAt`). */
  wroteLive(live: Parameters<typeof hintOf>[0], lastEventAt: number): void {
    const hint = hintOf(live, lastEventAt)
    if (hint) this.wrote(hint)
    else this.soon()
  }

  /** Something was written that the feed will tell (an import, another engine's notice). */
  soon(): void {
    if (this.closing || this.timer) return
    this.timer = setTimeout(
      () => {
        this.timer = undefined
        this.pass().catch((err) => this.o.onError(err as SessionfoldError))
      },
      this.watchers > 0 ? SOON_MS : LAZY_MS,
    )
  }

  /** Another engine wrote to the store (a notice on the backend's channel): a pass soon, while a list watches. */
  heard(): void {
    if (this.watchers > 0) this.soon()
  }

  /** Session `id` was deleted here: its entries go (its row went with it). */
  async deleted(id: SessionId, before: IndexRow | undefined): Promise<void> {
    this.hints.delete(id)
    if (before) await removeEntries(this.o.records, before)
    this.tell()
  }

  /** The row of `id` as stored, if any and readable. */
  async row(id: SessionId): Promise<IndexRow | undefined> {
    return (await readRows(this.o.records, [id]))[0]
  }

  /** For verify: the row of `id` as stored (`stored`: whether there is one, readable or not), and the lists it lacks an entry in. */
  async check(id: SessionId): Promise<{ stored: boolean; row: IndexRow | undefined; missing: string[] }> {
    const [text] = await readable(this.o.records, [summaryKey(id)])
    const row = parseRow(id, text)
    const missing: string[] = []
    for (const [list, time] of row ? entriesOf(row) : []) if ((await this.o.records.get(indexEntryKey(list, time, id))) === undefined) missing.push(list)
    return { stored: text !== undefined, row, missing }
  }

  /** A session opened or closed for writing: lists show `running` anew. */
  tell(): void {
    for (const f of this.listeners) {
      try {
        f()
      } catch (err) {
        this.o.onError(err as SessionfoldError)
      }
    }
  }

  /** Calls `listener` after each change, and looks at the feed every POLL_MS meanwhile; returns the stop. */
  subscribe(listener: () => void): () => void {
    const stop = this.watch()
    this.listeners.add(listener)
    return () => {
      stop()
      this.listeners.delete(listener)
    }
  }

  private watch(): () => void {
    if (this.watchers++ === 0 && !this.closing) {
      this.stopWake = this.o.wake?.(() => this.heard())
      this.poll = setInterval(() => this.soon(), this.stopWake ? WOKEN_POLL_MS : POLL_MS)
      ;(this.poll as { unref?: () => void }).unref?.()
    }
    let ended = false
    return () => {
      if (ended) return
      ended = true
      if (--this.watchers === 0) this.unwatch()
    }
  }

  private unwatch(): void {
    clearInterval(this.poll)
    this.stopWake?.()
    this.poll = this.stopWake = undefined
  }

  /** Up to `count` rows of `query`'s list after `after` (a page's `next`), caught up with the feed first. */
  async page(query: ResolvedSessionQuery, count: number, after: string | undefined): Promise<SessionsPage> {
    await this.pass()
    const { rows, next } = await readPage(
      {
        records: this.o.records,
        read: (keys) => readable(this.o.records, keys),
        exists: async (id) => (await this.o.reader.find(id)) !== undefined,
        repair: (id) => {
          this.pending.add(id)
          this.soon()
        },
      },
      query,
      count,
      after,
    )
    const running = await Promise.all(rows.map((r) => this.o.locks.isHeld(r.id)))
    return { items: rows.map((r, i) => ({ ...r, tags: [...r.tags], running: running[i]! })), next }
  }

  /** One pass (joined by calls made while one runs: they get the pass after it). */
  pass(): Promise<void> {
    if (this.passing) {
      this.again = true
      return this.passing
    }
    const run = async () => {
      try {
        do {
          this.again = false
          await this.passOnce()
        } while (this.again && !this.closed)
      } finally {
        this.passing = undefined
      }
    }
    return (this.passing = run())
  }

  /**
   * Stops: what this engine wrote and the index has not yet is written first (one more pass),
   * unless `write` is false (the storage stopped answering): the next engine then catches up
   * from the change feed, and a pass under way is left to fail on its own.
   */
  async close({ write = true }: { write?: boolean } = {}): Promise<void> {
    if (this.closing) return
    this.closing = true
    clearTimeout(this.timer)
    this.timer = undefined
    this.unwatch()
    this.listeners.clear()
    if (!write) {
      this.closed = true
      return
    }
    try {
      if (this.hints.size > 0 || this.pending.size > 0) await this.pass()
      else await this.passing
      if (this.stateDirty) await this.storeState()
    } catch (err) {
      this.o.onError(err as SessionfoldError)
    } finally {
      this.closed = true
    }
  }

  private async passOnce(): Promise<void> {
    if (this.closed) return
    await (this.loading ??= this.load().finally(() => (this.loading = undefined)))
    const state = this.state!
    const ids = new Set<SessionId>([...this.pending, ...this.hints.keys(), ...this.behind.keys()])
    this.pending.clear()
    /** The length each session named in the feed reached, by its entries. */
    const want = new Map<SessionId, number>()
    let at = state.at
    for (;;) {
      const entries = await this.o.feed.read(at, FEED_PAGE)
      for (const e of entries) {
        ids.add(e.id)
        want.set(e.id, Math.max(want.get(e.id) ?? 0, e.to))
      }
      if (entries.length > 0) at = entries[entries.length - 1]!.at
      if (entries.length < FEED_PAGE) break
    }
    // Lists hear of every write the feed told, moved here or already by its writer's engine.
    let changed = at !== state.at
    const all = [...ids]
    for (let i = 0; i < all.length; i += GROUP) {
      const group = all.slice(i, i + GROUP)
      const done = await this.refresh(group)
      for (const [k, id] of group.entries()) {
        const late = this.behind.get(id)
        const named = want.get(id)
        const length = named === undefined ? late?.want : Math.max(named, late?.want ?? 0)
        const { moved, reached } = done[k]!
        if (moved) changed = true
        this.behind.delete(id)
        const tries = (late?.tries ?? 0) + 1
        if (length !== undefined && reached < length && this.watchers > 0 && tries <= BEHIND_TRIES) this.behind.set(id, { want: length, tries })
      }
    }
    if (this.behind.size > 0) this.soon()
    if (at !== state.at) {
      this.state = { feed: state.feed, at }
      this.stateDirty = true
    }
    if (this.stateDirty && (this.closing || Date.now() - this.stateStored >= STATE_EVERY_MS)) await this.storeState()
    if (changed) this.tell()
  }

  /** Stores the state (a lagging one costs a later load a re-read of the feed since: rows only move forward). */
  private async storeState(): Promise<void> {
    this.stateDirty = false
    this.stateStored = Date.now()
    await this.o.records.put(indexStateKey, JSON.stringify({ v: 1, ...this.state }))
  }

  /** Reads the state, or rebuilds the index when there is none (or it follows another feed). */
  private async load(): Promise<void> {
    if (this.state) return
    const feed = await this.o.feed.id()
    const stored = parseState(await this.o.records.get(indexStateKey))
    if (stored && stored.feed === feed) {
      this.state = stored
      return
    }
    // Rebuilt: every session looked at; entries of sessions deleted since go when a page meets them.
    const at = await this.o.feed.head()
    const group: SessionId[] = []
    for await (const id of this.o.reader.ids()) {
      group.push(id)
      if (group.length === GROUP) await this.refresh(group.splice(0))
    }
    await this.refresh(group)
    this.state = { feed, at }
    await this.storeState()
  }

  /** Brings the rows of `ids` up to their logs (or this engine's hints), written together: for each, whether it moved and its length (-1: no session). */
  private async refresh(ids: readonly SessionId[]): Promise<{ moved: boolean; reached: number }[]> {
    const stored = await readRows(this.o.records, ids)
    const out: { moved: boolean; reached: number }[] = []
    const moves: RowMove[] = []
    const read = { logs: false }
    for (const [i, id] of ids.entries()) {
      const before = stored[i]
      const next = await this.nextRow(id, before, read)
      if (next === undefined || typeof next === 'number') {
        out.push({ moved: next === undefined && before !== undefined, reached: next ?? -1 })
        continue
      }
      moves.push({ before, next })
      out.push({ moved: true, reached: next.length })
    }
    if (!read.logs) await writeRows(this.o.records, moves)
    else {
      // Logs were read since the rows were: a row changed meanwhile stays, and is looked at again.
      const left = await writeRowsForward(this.o.records, moves)
      for (const [k, m] of moves.entries()) if (left[k]) this.pending.add(m.next.id)
      if (left.includes(true)) this.soon()
    }
    return out
  }

  /** The row `id` moves to from `stored`: a number when it stays (the length it has), undefined when there is no session (deleted, or not made yet). */
  private async nextRow(id: SessionId, stored: IndexRow | undefined, read: { logs: boolean }): Promise<IndexRow | number | undefined> {
    const hint = this.hints.get(id)
    this.hints.delete(id)
    if (hint && !(stored && stored.createdAt === hint.header.createdAt && stored.length >= hint.length)) {
      return { ...freshRow(hint.header), length: hint.length, lastEventAt: hint.lastEventAt, title: hint.title, tags: [...hint.tags] }
    }
    read.logs = true
    const info = await this.o.reader.find(id)
    // None: deleted (its row went with it, its entries go as pages meet them), or not made yet.
    if (!info) return undefined
    const same = stored && stored.createdAt === info.header.createdAt
    if (same && stored.length === info.length) return info.length
    let row = same && stored.length < info.length ? stored : freshRow(info.header)
    for await (const page of this.o.reader.pages(id, { from: row.length, to: info.length })) row = extendRow(row, page)
    return row
  }
}

/** A page of the session list (`query` checked); STORAGE_UNAVAILABLE without an index. */
export function sessionsPage(index: SessionIndex | undefined, kind: string, query: unknown, count: number, after: string | undefined): Promise<SessionsPage> {
  const q = resolveSessionQuery(query)
  if (!index) throw new SessionfoldError('STORAGE_UNAVAILABLE', `the ${kind} storage has no change feed or records, which the session list is kept over`)
  return index.page(q, count, after)
}

/** The index of `storage`, where it has a feed and composed records (every adapter of this package). */
export function sessionIndexOf(storage: StorageAdapter, o: Omit<SessionIndexOptions, 'records' | 'feed'>): SessionIndex | undefined {
  const records = recordsOf(storage)
  return records && storage.feed ? new SessionIndex({ ...o, records, feed: storage.feed }) : undefined
}

function parseState(text: string | undefined): IndexState | undefined {
  if (text === undefined) return undefined
  try {
    const v = JSON.parse(text) as { v?: unknown; feed?: unknown; at?: unknown }
    return v.v === 1 && typeof v.feed === 'string' && typeof v.at === 'string' ? { feed: v.feed, at: v.at } : undefined
  } catch {
    return undefined
  }
}
