// Growth notices for a PostgreSQL store. After each append commits, the adapter notifies the
// session's own channel (src/backends/postgres/channel.ts) with `<sessionId>:<new length>`. An
// engine LISTENs on the channels of the sessions it follows, and only those, on a connection of
// its own: an append wakes the engines that follow its session, not every engine on the store.
// A notice carries the length the log reached, and the new events themselves when they are
// small: the engine folds those without reading them back, else reads what is new up to that
// length (and nothing when it already holds as much).
//
// Notifications are not stored: one sent while our listening connection is down (a restart, a
// network cut) is lost, and a process killed between its commit and its notice sends none. So
// the followed sessions are also polled (their lengths, in one query) every pollMs, and each
// session as soon as its LISTEN is in place (growth before it is not missed), which after a
// reconnect is every followed session at once.
import type { Sql } from 'postgres'
import { growthChannelOf } from './channel'
import { SessionfoldError } from '../../core/errors'
import { PG_SCHEMA_PATTERN } from '../../core/limits'
import type { GrowthChannel, GrowthTail } from '../platform'

/** What the listening connection tells. */
export interface ListenHandlers {
  onnotify: (channel: string, payload: string) => void
  /** The connection closed: what it LISTENed to is gone. */
  onclose: () => void
}

export interface PgGrowthOptions {
  /** The store's connection (the adapter's): the polls run on it. */
  sql: Sql
  /**
   * Makes the connection notices come on: a `postgres()` instance of `max: 1`, with no idle
   * timeout, passing these handlers as its `onnotify` and `onclose`. Made on first follow.
   */
  connect: (handlers: ListenHandlers) => Sql
  /** The store's schema (validated: PG_SCHEMA_PATTERN). */
  schema: string
  /** How often followed sessions are polled, notices or not. Default 1000 ms. */
  pollMs?: number
}

/** LISTEN statements per round trip. */
const LISTEN_BATCH = 1000
/** Waits before LISTENing again after a failure: doubling from the first, up to the last. */
const RETRY_FIRST_MS = 100
const RETRY_MAX_MS = 5000

interface Watched {
  count: number
  channel: string
  /** The length last seen (by a poll or a notice); undefined until first seen. */
  seen?: number
  /** When its last notice came, in notices counted (`heard`): a poll begun before it is older. */
  heardAt: number
}

export function pgGrowth(options: PgGrowthOptions): GrowthChannel {
  const { sql, schema, connect } = options
  if (!PG_SCHEMA_PATTERN.test(schema)) {
    throw new SessionfoldError('INVALID_ARGUMENT', `schema ${JSON.stringify(schema)} must match ${PG_SCHEMA_PATTERN.source}`)
  }
  const pollMs = options.pollMs ?? 1000
  if (!Number.isInteger(pollMs) || pollMs < 10)
    throw new SessionfoldError('INVALID_ARGUMENT', `pollMs must be an integer of at least 10 (got ${String(pollMs)})`)
  const S = sql(schema)

  let onGrow: ((sessionId: string, length?: number, tail?: GrowthTail) => void) | undefined
  let closed = false
  /** Notices heard so far: a poll notes it when its query goes out. */
  let heard = 0
  const watched = new Map<string, Watched>()
  let timer: ReturnType<typeof setInterval> | undefined
  let polling: Promise<void> | undefined
  /** Sessions to poll right after the poll under way (undefined: all of them). */
  let again: Set<string> | undefined | null = null

  let listener: Sql | undefined
  /** Channels LISTENed on the listening connection as it is now. */
  const active = new Set<string>()
  let syncing: Promise<void> | undefined
  let resync = false
  let retryTimer: ReturnType<typeof setTimeout> | undefined
  let failures = 0

  const tell = (id: string, length?: number, tail?: GrowthTail) => {
    if (closed) return
    try {
      onGrow?.(id, length, tail)
    } catch {
      // the listener's own problem; other sessions still hear
    }
  }

  /**
   * A length a poll begun at `began` saw for a followed session: told when it is new (the first
   * sighting included). Shorter than a notice heard since the poll began is not a delete: the
   * poll read the row before that notice's commit (the next poll looks again).
   */
  function sighted(id: string, length: number, began: number) {
    const w = watched.get(id)
    if (!w) return
    const before = w.seen
    if (before === length) return
    if (before !== undefined && length < before && w.heardAt > began) return
    w.seen = length
    // Shorter than before (deleted and made again): no length, so that the engine looks.
    tell(id, before === undefined || length > before ? length : undefined)
  }

  /** One query for the lengths of `ids` (default: every followed session). */
  async function pollOnce(only?: Set<string>): Promise<void> {
    const ids = only ? [...only].filter((id) => watched.has(id)) : [...watched.keys()]
    if (ids.length === 0 || closed) return
    let rows: { id: string; length: string }[]
    const began = heard
    try {
      rows = await sql<{ id: string; length: string }[]>`SELECT id, length FROM ${S}.sessions WHERE id = ANY(${ids}::text[])`
    } catch {
      return // unreachable for now: the next poll (or the reconnect) looks again
    }
    for (const row of rows) sighted(row.id, Number(row.length), began)
    // A followed session that is no longer there was deleted (its notice may have been lost):
    // no length, so that the engine looks, and lets its views know.
    // (Each looked up again: one may have been let go while the query ran.)
    const found = new Set(rows.map((r) => r.id))
    for (const id of ids) {
      const w = watched.get(id)
      if (found.has(id) || !w || w.seen === -1 || w.heardAt > began) continue
      w.seen = -1
      tell(id)
    }
  }

  /** Polls `only` (default: all) now, or right after the poll under way. */
  function poll(only?: Set<string>): Promise<void> {
    if (polling) {
      if (again === null) again = only ? new Set(only) : undefined
      else if (again !== undefined) {
        if (only) for (const id of only) again.add(id)
        else again = undefined
      }
      return polling
    }
    polling = (async () => {
      let next: Set<string> | undefined | null = only
      while (next !== null && !closed) {
        await pollOnce(next)
        next = again
        again = null
      }
    })().finally(() => (polling = undefined))
    return polling
  }

  /** `<id>:<length>`, or `<id>:<length>:<from>:[<event>,…]` (schema.ts, append_group). */
  function onNotice(channel: string, payload: string) {
    const a = payload.indexOf(':')
    if (a <= 0) return // not ours
    const id = payload.slice(0, a)
    const w = watched.get(id)
    if (!w || w.channel !== channel) return // not followed here (any more)
    const b = payload.indexOf(':', a + 1)
    const length = Number(payload.slice(a + 1, b < 0 ? undefined : b))
    if (!Number.isSafeInteger(length) || length < 0) {
      // `<id>:deleted` (or a length we cannot read): whatever length comes next is news.
      w.seen = -1
      return tell(id)
    }
    if (w.seen !== undefined && length <= w.seen) return
    w.seen = length
    w.heardAt = ++heard // only a notice that moved what is seen makes a poll begun before it old
    let tail: GrowthTail | undefined
    if (b > 0) {
      const c = payload.indexOf(':', b + 1)
      const from = Number(payload.slice(b + 1, c))
      try {
        const events = c > 0 ? (JSON.parse(payload.slice(c + 1)) as unknown) : undefined
        if (Array.isArray(events) && Number.isSafeInteger(from) && from >= 0 && from + events.length === length) tail = { from, events }
      } catch {
        // no tail: the engine reads the events
      }
    }
    tell(id, length, tail)
  }

  function connection(): Sql {
    listener ??= connect({
      onnotify: onNotice,
      onclose() {
        if (closed) return
        active.clear()
        later()
      },
    })
    return listener
  }

  /** Brings the connection's LISTENs to the followed sessions' channels; retried until it does. */
  function later() {
    if (closed || retryTimer) return
    const wait = failures === 0 ? 0 : Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1))
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      void sync()
    }, wait)
    ;(retryTimer as { unref?: () => void }).unref?.()
  }

  function sync(): Promise<void> {
    if (syncing) {
      resync = true
      return syncing
    }
    syncing = (async () => {
      do {
        resync = false
        if (closed) return
        const want = new Map([...watched].map(([id, w]) => [w.channel, id]))
        const add = [...want.keys()].filter((c) => !active.has(c))
        const drop = [...active].filter((c) => !want.has(c))
        if (add.length === 0 && drop.length === 0) return
        try {
          // Channels are `sf_` and hex digits (channel.ts): safe to quote into the statement.
          const statements = [...add.map((c) => `LISTEN "${c}"`), ...drop.map((c) => `UNLISTEN "${c}"`)]
          for (let i = 0; i < statements.length; i += LISTEN_BATCH) {
            await connection().unsafe(statements.slice(i, i + LISTEN_BATCH).join(';'))
          }
        } catch {
          failures++
          later()
          return
        }
        failures = 0
        for (const c of add) active.add(c)
        for (const c of drop) active.delete(c)
        // What grew before these LISTENs were in place.
        if (add.length > 0) void poll(new Set(add.map((c) => want.get(c)!)))
      } while (resync)
    })().finally(() => (syncing = undefined))
    return syncing
  }

  return {
    announce() {}, // the adapter notifies after its commit, for every engine at once
    listen(fn) {
      onGrow = fn
    },
    watch(sessionId) {
      let w = watched.get(sessionId)
      if (!w) watched.set(sessionId, (w = { count: 0, channel: growthChannelOf(schema, sessionId), heardAt: 0 }))
      w.count++
      if (!timer && !closed) {
        timer = setInterval(() => void poll(), pollMs)
        ;(timer as { unref?: () => void }).unref?.()
      }
      if (!closed) void sync()
      let stopped = false
      const entry = w
      return () => {
        if (stopped) return
        stopped = true
        if (--entry.count > 0) return
        if (watched.get(sessionId) === entry) watched.delete(sessionId)
        if (watched.size === 0 && timer) {
          clearInterval(timer)
          timer = undefined
        }
        if (!closed) void sync()
      }
    },
    close() {
      closed = true
      onGrow = undefined
      watched.clear()
      if (timer) clearInterval(timer)
      if (retryTimer) clearTimeout(retryTimer)
      timer = retryTimer = undefined
      void listener?.end({ timeout: 1 }).catch(() => {})
    },
  }
}
