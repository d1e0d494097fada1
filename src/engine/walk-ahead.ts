// The first walk of changesSince (changes-feed.ts) looks sessions up ahead of where it is:
// each lookup (and a small session's events) is a round trip of its own on PostgreSQL, a
// transaction on IndexedDB, a few calls on the file system's thread pool, so a walk that waits
// for one before asking for the next pays them end to end (a store of 2,000 sessions of 2
// events walked at a fifteenth of the events/s of 40 sessions of 1,000). The walk still takes
// the sessions one by one, in id order, against the batch's budget; only the reads overlap.
//
// How many at once grows while the sessions are small and taken whole (1, 2, 4 … AHEAD), so a
// walk of big sessions, a batch each, does not read far past where its batch ends. A session
// of more than AHEAD_EVENTS events is looked up again when its turn comes (its events are read
// then, as before); a small one's header and events are read together, back to back. A
// storage with getSessions (PostgreSQL, IndexedDB, memory) is asked for a group of sessions in
// one call once half the look-ahead was taken: one statement or transaction for about eight
// small sessions where each had two (a small session's pass, in BENCHMARKS.md's many-sessions
// rows: PostgreSQL 395 to 191 µs, Chromium 943 to 321 µs).
import { isSessionfoldError } from '../core/errors'
import type { SessionEvent, SessionId } from '../core/model'
import type { ReadRange, SessionInfo } from '../storage/types'
import type { StoreReader } from './reader'

/** Lookups in flight at most. */
const AHEAD = 16
/** A session of at most this many events is read whole when looked up ahead. */
const AHEAD_EVENTS = 64

type Reader = Pick<StoreReader, 'find' | 'pages'> & Partial<Pick<StoreReader, 'findMany'>>

/** A session looked up ahead: what find said (or its error), and a small session's events. */
export interface Looked {
  id: SessionId
  info?: SessionInfo
  err?: unknown
  /** Every event of a small session, read right after its header. */
  events?: SessionEvent[]
}

export class WalkAhead {
  readonly #queue: Promise<Looked>[] = []
  readonly #ids: AsyncIterator<SessionId> | Iterator<SessionId>
  #width = 1
  #done = false

  constructor(
    private readonly reader: Reader,
    ids: AsyncIterable<SessionId> | Iterable<SessionId>,
  ) {
    this.#ids = Symbol.asyncIterator in ids ? ids[Symbol.asyncIterator]() : ids[Symbol.iterator]()
  }

  /**
   * The next session in id order, undefined after the last. Never rejects for a lookup: its
   * error is in `err`. A storage that looks many sessions up at once (getSessions) is asked for
   * them in groups, once half the look-ahead was taken; else each is looked up on its own.
   */
  async next(): Promise<Looked | undefined> {
    const many = this.reader.findMany
    if (this.#queue.length <= (many ? this.#width / 2 : this.#width - 1)) {
      const ids: SessionId[] = []
      while (!this.#done && this.#queue.length + ids.length < this.#width) {
        const r = await this.#ids.next()
        if (r.done) this.#done = true
        else if (many) ids.push(r.value)
        else this.#queue.push(lookUp(this.reader, r.value))
      }
      if (many && ids.length > 0) this.#queue.push(...lookUpAll(this.reader, many, ids))
    }
    return this.#queue.shift()
  }

  /** The last session was taken whole and the batch has room: look further ahead. */
  widen(): void {
    this.#width = Math.min(AHEAD, this.#width * 2)
  }

  /** The walk stopped: no more ids are read (lookups under way end on their own). */
  async stop(): Promise<void> {
    this.#done = true
    await this.#ids.return?.()
  }

  /** A reader whose `pages` answers from `looked.events` when they cover the range. */
  readerFor(looked: Looked): Pick<StoreReader, 'pages'> {
    const { events } = looked
    if (!events) return this.reader
    return {
      pages: (id: SessionId, range: ReadRange) => {
        const from = range.from ?? 0
        const to = range.to ?? events.length
        return from >= 0 && to <= events.length ? once(events.slice(from, to)) : this.reader.pages(id, range)
      },
    }
  }
}

/**
 * `ids` looked up in one call. A damaged session fails the group (CORRUPT_LOG): then each is
 * looked up on its own, which tells whose the damage is. Any other failure (storage that does
 * not answer) is every session's, as its own lookup's would be, without asking again.
 */
function lookUpAll(reader: Reader, many: NonNullable<Reader['findMany']>, ids: SessionId[]): Promise<Looked>[] {
  if (ids.length === 1) return [lookUp(reader, ids[0]!)]
  const all = many(ids, AHEAD_EVENTS).then(
    (reads) => (reads.length === ids.length ? reads : undefined), // an adapter that answered for too few: asked one by one
    (err: unknown) => (isSessionfoldError(err, 'CORRUPT_LOG') ? undefined : { err }),
  )
  return ids.map(async (id, i) => {
    const reads = await all
    if (!reads) return lookUp(reader, id)
    if ('err' in reads) return { id, err: reads.err }
    const read = reads[i]
    if (!read) return { id }
    const info = { header: read.header, length: read.length }
    return read.events && read.length > 0 ? { id, info, events: read.events } : { id, info }
  })
}

async function lookUp(reader: Reader, id: SessionId): Promise<Looked> {
  let info: SessionInfo | undefined
  try {
    info = await reader.find(id)
  } catch (err) {
    return { id, err }
  }
  if (!info || info.length === 0 || info.length > AHEAD_EVENTS) return { id, info }
  const events: SessionEvent[] = []
  try {
    for await (const page of reader.pages(id, { from: 0, to: info.length })) events.push(...page)
  } catch {
    return { id, info } // read again in its turn, which reports what it finds
  }
  return events.length === info.length ? { id, info, events } : { id, info }
}

async function* once(page: SessionEvent[]): AsyncIterable<SessionEvent[]> {
  if (page.length > 0) yield page
}
