// Chain values (src/core/chain.ts) of the store's sessions: the witness of a prefix that every change
// batch entry past the seed carries, and that the receiving side checks (DESIGN §13).
//
// A session's writer here keeps its chain value at the log's end (PrefixState), stepping it as
// each append is folded, with the values at its last append ends (sends start there), and
// stores a mark every MARK_EVERY events: the chain value there, kept in pages of
// MARKS_PER_PAGE marks in the session's key-value records (`['session', id, 'chain', page]`),
// written as its checkpoint rows are (not per append) and when the writer lets go. The value at
// any position is then the mark at or below it and at most MARK_EVERY - 1 events read (more
// just after a writer elsewhere appended, before it stored its marks). Marks are a cache like
// checkpoints: checked (a sum, the session's life), rebuilt by the next writer when missing (a
// store written before chains existed), never written by a reader, and checked by verify.
import type { KeyValueStore } from '../storage/types'
import { CHAIN_ZERO, ChainState, eventJson } from '../core/chain'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { EncodedEvent } from '../core/validate'
import type { StoreReader } from './reader'
import { MARK_EVERY, MARKS_PER_PAGE, PAGE_SPAN, decodePage, encodePage, markPosition, pageKey } from './chain-marks'

export { MARK_EVERY, decodePage, encodePage, storedMarks } from './chain-marks'

/** Append ends whose values a writer keeps (a sync sends from where the last one ended). */
const RECENT = 32
/** Sessions not written here whose last computed value is kept (a server answering pulls). */
const COLD_CACHE = 256

/** A live session's chain bookkeeping (writers only). */
export interface PrefixState {
  /** The chain is known up to here (the log's durable end once caught up). */
  at: number
  value: ChainState
  /** Caught up with the log: each fold steps the chain. False while a catch-up reads. */
  known: boolean
  /** Values at recent append ends, oldest first. */
  recent: [position: number, value: string][]
  /** The current page (the one the next mark goes in): its index, marks and how many are stored. */
  page: { index: number; marks: string[]; stored: number }
  /** Pages being written, in order. */
  writing: Promise<void>
  /** The catch-up under way, and its stop (a writer letting go stops it: the next one goes on from the marks stored). */
  catchingUp?: { done: Promise<void>; stop: AbortController }
}

/** What the keeper needs of a live session. */
export interface ChainSession {
  readonly header: SessionHeader
  readonly log: { readonly durable: number }
  prefix?: PrefixState
}

export class ChainKeeper {
  /**
   * The last value computed for a session no writer keeps here: its life, position and value,
   * and (kept by a writer that let go) the page the next mark goes in, so that the next writer
   * of a log nobody wrote since (an import's writer, a batch after a batch) starts without a read.
   */
  readonly #cold = new Map<SessionId, { createdAt: number; at: number; value: string; page?: PrefixState['page'] }>()

  constructor(
    private readonly kv: KeyValueStore | undefined,
    private readonly reader: Pick<StoreReader, 'pages'>,
    private readonly onError: (err: SessionfoldError) => void,
  ) {}

  /** A writer takes the session: marks stored beyond its log (a log a machine crash cut back) go, then the chain catches up. */
  async attach(session: ChainSession): Promise<void> {
    if (session.prefix) return
    const id = session.header.id
    const length = session.log.durable
    const state: PrefixState = {
      at: 0,
      value: new ChainState(),
      known: false,
      recent: [],
      page: { index: 0, marks: [], stored: 0 },
      writing: Promise.resolve(),
    }
    const left = this.#cold.get(id)
    if (left?.page && left.createdAt === session.header.createdAt && left.at === length) {
      state.at = length
      state.value = new ChainState(left.value)
      state.page = { ...left.page, marks: [...left.page.marks] }
      state.known = true
      session.prefix = state
      return
    }
    const base = await this.#prepare(session.header, length)
    state.at = base.at
    state.value = new ChainState(base.value)
    state.page = base.page
    session.prefix = state
    if (state.at < length) this.#catchUp(session, state)
    else state.known = true
  }

  /** A session created here (with a fork's seed): its chain from the start. */
  created(session: ChainSession, seed: readonly EncodedEvent[]): void {
    const state: PrefixState = {
      at: 0,
      value: new ChainState(),
      known: true,
      recent: [],
      page: { index: 0, marks: [], stored: 0 },
      writing: Promise.resolve(),
    }
    session.prefix = state
    this.#step(
      session,
      state,
      seed.map((e) => e.json),
    )
  }

  /** Events `encoded` were folded into a written session: step its chain (or catch up later). */
  appended(session: ChainSession, encoded: readonly EncodedEvent[]): void {
    const state = session.prefix
    if (!state) return
    if (state.known && encoded[0]?.event.seq === state.at)
      this.#step(
        session,
        state,
        encoded.map((e) => e.json),
      )
    else if (state.known) this.#catchUp(session, state) // cannot happen with one writer; recover rather than trust
  }

  /** Stores the marks not yet stored (with a checkpoint row, and when the writer lets go). */
  save(session: ChainSession): Promise<void> {
    const state = session.prefix
    if (!state || !this.kv) return Promise.resolve()
    const page = state.page
    if (page.stored === page.marks.length) return state.writing
    return this.#write(session, state, page.index, [...page.marks])
  }

  /** The writer let go: marks stored, its bookkeeping dropped (its end kept for cold lookups). */
  async release(session: ChainSession): Promise<void> {
    const state = session.prefix
    if (!state) return
    if (state.catchingUp) {
      state.catchingUp.stop.abort()
      await state.catchingUp.done
    }
    await this.save(session)
    if (state.known && state.page.stored === state.page.marks.length) this.#remember(session.header, state.at, state.value.value, state.page)
    session.prefix = undefined
  }

  /** The session was deleted here: nothing kept of it. */
  forget(id: SessionId): void {
    this.#cold.delete(id)
  }

  /**
   * The chain value of `header`'s session at `position` (0 <= position <= its length): from the
   * writer's state where it is written here, else from the stored mark at or below it.
   */
  async at(header: SessionHeader, position: number, session?: ChainSession): Promise<string> {
    if (position === 0) return CHAIN_ZERO
    const state = session?.prefix
    if (state?.known) {
      if (position === state.at) return state.value.value
      for (const [p, v] of state.recent) if (p === position) return v
    }
    const id = header.id
    let base = { at: 0, value: CHAIN_ZERO }
    const cold = this.#cold.get(id)
    if (cold && cold.createdAt === header.createdAt && cold.at <= position) base = cold
    const mark = Math.floor(position / MARK_EVERY) * MARK_EVERY
    if (mark > base.at) {
      const live = state && state.page.index === Math.floor((mark - 1) / PAGE_SPAN) ? state.page.marks : undefined
      const found = await this.#markAtOrBelow(header, mark, live)
      if (found.at > base.at) base = found
    }
    const chain = new ChainState(base.value)
    let at = base.at
    if (at < position) {
      for await (const page of this.reader.pages(id, { from: at, to: position })) {
        for (const e of page) chain.push(eventJson(e))
        at += page.length
      }
    }
    if (at !== position)
      throw new SessionfoldError('CORRUPT_LOG', `${where(id, position)}: the log ends before the chain's position`, { sessionId: id, seq: position })
    const value = chain.value
    if (!state) this.#remember(header, position, value)
    return value
  }

  /** The chain steps over events (their JSON), marks where they fall, and an append end. */
  #step(session: ChainSession, state: PrefixState, jsons: readonly string[]): void {
    for (const json of jsons) {
      state.value.push(json)
      state.at++
      if (state.at % MARK_EVERY === 0) this.#mark(session, state, state.value.value)
    }
    state.recent.push([state.at, state.value.value])
    if (state.recent.length > RECENT) state.recent.shift()
  }

  /** A mark at state.at, into its page; a full page is stored at once. */
  #mark(session: ChainSession, state: PrefixState, value: string): void {
    const index = Math.floor((state.at - 1) / PAGE_SPAN)
    if (index !== state.page.index) state.page = { index, marks: [], stored: 0 }
    state.page.marks.push(value)
    if (state.page.marks.length === MARKS_PER_PAGE && this.kv) void this.#write(session, state, index, [...state.page.marks])
  }

  /** Stores page `index` with `marks`, after the writes before it. */
  #write(session: ChainSession, state: PrefixState, index: number, marks: string[]): Promise<void> {
    const { id, createdAt } = session.header
    state.writing = state.writing.then(async () => {
      try {
        await this.kv!.put(pageKey(id, index), encodePage(createdAt, marks))
        if (state.page.index === index) state.page.stored = Math.max(state.page.stored, marks.length)
      } catch (err) {
        if (isSessionfoldError(err, 'SESSION_NOT_FOUND') || isSessionfoldError(err, 'CLOSED')) return
        this.onError(
          err instanceof SessionfoldError
            ? err
            : new SessionfoldError('STORAGE_UNAVAILABLE', `chain marks of ${where(id)} were not stored: ${(err as Error)?.message ?? err}`, {
                sessionId: id,
                cause: err,
              }),
        )
      }
    })
    return state.writing
  }

  /** Reads the log from state.at to its durable end (and what is appended meanwhile), stepping the chain. */
  #catchUp(session: ChainSession, state: PrefixState): void {
    if (state.catchingUp) return
    state.known = false
    const id = session.header.id
    const stop = new AbortController()
    const done = (async () => {
      while (state.at < session.log.durable && !stop.signal.aborted) {
        for await (const page of this.reader.pages(id, { from: state.at, to: session.log.durable, signal: stop.signal }))
          this.#step(session, state, page.map(eventJson))
      }
      if (stop.signal.aborted) return
      state.known = true // no await since the last check: the next fold continues from here
      await this.save(session) // a rebuild's marks stored now, not at the next row
    })()
      .catch((err: unknown) => {
        if (stop.signal.aborted || isSessionfoldError(err, 'SESSION_NOT_FOUND') || isSessionfoldError(err, 'CLOSED')) return
        this.onError(
          err instanceof SessionfoldError
            ? err
            : new SessionfoldError('STORAGE_UNAVAILABLE', `the chain of ${where(id)} could not be rebuilt: ${(err as Error)?.message ?? err}`, {
                sessionId: id,
                cause: err,
              }),
        )
      })
      .finally(() => {
        state.catchingUp = undefined
      })
    state.catchingUp = { done, stop }
  }

  /**
   * Before a writer appends: stored marks beyond `length` go (they stand for events a machine
   * crash took back, and new events will take their seqs), and the highest mark left is where
   * the chain goes on from, with the page the next mark goes in.
   */
  async #prepare(header: SessionHeader, length: number): Promise<{ at: number; value: string; page: PrefixState['page'] }> {
    const start = { at: 0, value: CHAIN_ZERO, page: { index: 0, marks: [], stored: 0 } }
    if (!this.kv) return start
    const id = header.id
    for (const index of (await this.#pages(id)).reverse()) {
      if (markPosition(index, 0) > length) {
        await this.kv.delete(pageKey(id, index))
        continue
      }
      const marks = decodePage(await this.#get(id, index), header.createdAt)
      if (!marks || marks.length === 0) continue // damaged or not this life's: rebuilt from below
      const keep = Math.min(marks.length, Math.floor((length - index * PAGE_SPAN) / MARK_EVERY))
      const kept = marks.slice(0, keep)
      if (keep < marks.length) await this.kv.put(pageKey(id, index), encodePage(header.createdAt, kept))
      const page = keep === MARKS_PER_PAGE ? { index: index + 1, marks: [], stored: 0 } : { index, marks: kept, stored: keep }
      return { at: markPosition(index, keep - 1), value: kept[keep - 1]!, page }
    }
    return start
  }

  /** The mark at or below `position` (a multiple of MARK_EVERY): from `current` (a writer's page here) or storage, else the start. */
  async #markAtOrBelow(header: SessionHeader, position: number, current: readonly string[] | undefined): Promise<{ at: number; value: string }> {
    let index = Math.floor((position - 1) / PAGE_SPAN)
    let slot = (position - index * PAGE_SPAN) / MARK_EVERY - 1
    if (current && current.length > 0) {
      const s = Math.min(slot, current.length - 1)
      return { at: markPosition(index, s), value: current[s]! }
    }
    if (!this.kv) return { at: 0, value: CHAIN_ZERO }
    // The page of the position first; below it only when it is missing (a writer elsewhere has not stored it yet).
    for (let tries = 0; index >= 0 && tries < 2; index--, slot = MARKS_PER_PAGE - 1, tries++) {
      const marks = decodePage(await this.#get(header.id, index), header.createdAt)
      if (marks && marks.length > 0) {
        const s = Math.min(slot, marks.length - 1)
        return { at: markPosition(index, s), value: marks[s]! }
      }
    }
    // Further down: the highest page stored below.
    for (const i of (await this.#pages(header.id)).reverse()) {
      if (i > index) continue
      const marks = decodePage(await this.#get(header.id, i), header.createdAt)
      if (marks && marks.length > 0) return { at: markPosition(i, marks.length - 1), value: marks[marks.length - 1]! }
    }
    return { at: 0, value: CHAIN_ZERO }
  }

  /** A page as stored; undefined when it is missing or does not open (a cache: rebuilt). */
  async #get(id: SessionId, index: number): Promise<string | undefined> {
    try {
      return await this.kv!.get(pageKey(id, index))
    } catch (err) {
      if (isSessionfoldError(err, 'CORRUPT_LOG')) return undefined
      throw err
    }
  }

  /** The indexes of the session's stored pages, ascending. */
  async #pages(id: SessionId): Promise<number[]> {
    const keys = await this.kv!.list(['session', id, 'chain'], { limit: 10_000 })
    return keys
      .map((k) => Number(k[3]))
      .filter((n) => Number.isSafeInteger(n) && n >= 0)
      .sort((a, b) => a - b)
  }

  #remember(header: SessionHeader, at: number, value: string, page?: PrefixState['page']): void {
    this.#cold.delete(header.id)
    this.#cold.set(header.id, { createdAt: header.createdAt, at, value, ...(page ? { page } : {}) })
    if (this.#cold.size > COLD_CACHE) this.#cold.delete(this.#cold.keys().next().value!)
  }
}
