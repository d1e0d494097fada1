// Growth notices for a PostgreSQL store: every append transaction runs pg_notify on channel
// `sessionfold:<schema>` with `<sessionId>:<new length>`, delivered at commit to every engine
// LISTENing, on any machine. Notifications are not stored: one sent while our listening
// connection is down (a restart, a network cut) is lost. So the sessions followed here are
// also polled (their lengths, in one query) every pollMs, and all at once when the listener
// has reconnected. A notice carries no data: the engine reads what is new from the store.
import type { Sql } from 'postgres'
import { SessionfoldError } from '../../src/errors'
import type { GrowthChannel } from './index'

export interface PgGrowthOptions {
  /** The store's connection (the adapter's); LISTEN runs on the driver's own listening connection. */
  sql: Sql
  /** The store's schema (validated `^[a-z_][a-z0-9_]{0,62}$`). */
  schema: string
  /** How often followed sessions are polled, notices or not. Default 1000 ms. */
  pollMs?: number
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** The channel the adapter notifies on for `schema`. */
export const growthChannelName = (schema: string) => `sessionfold:${schema}`

interface Watched {
  count: number
  /** The length last seen (by a poll or a notice); undefined until the first poll. */
  seen?: number
}

export function pgGrowth(options: PgGrowthOptions): GrowthChannel {
  const { sql, schema } = options
  if (!SCHEMA_NAME.test(schema)) {
    throw new SessionfoldError('INVALID_ARGUMENT', `schema ${JSON.stringify(schema)} must match ${SCHEMA_NAME.source}`)
  }
  const pollMs = options.pollMs ?? 1000
  if (!Number.isInteger(pollMs) || pollMs < 10) throw new SessionfoldError('INVALID_ARGUMENT', `pollMs must be an integer of at least 10 (got ${String(pollMs)})`)
  const S = sql(schema)
  const channel = growthChannelName(schema)

  let onGrow: ((sessionId: string) => void) | undefined
  let closed = false
  let listening: Promise<{ unlisten(): Promise<void> } | undefined> | undefined
  const watched = new Map<string, Watched>()
  let timer: ReturnType<typeof setInterval> | undefined
  let polling: Promise<void> | undefined
  let again = false

  const tell = (id: string) => {
    if (closed) return
    try {
      onGrow?.(id)
    } catch {
      // the listener's own problem; other sessions still hear
    }
  }

  /** One query for the lengths of every followed session; those that changed since last seen are told. */
  async function pollOnce(): Promise<void> {
    const ids = [...watched.keys()]
    if (ids.length === 0 || closed) return
    let rows: { id: string; length: string }[]
    try {
      rows = await sql<{ id: string; length: string }[]>`SELECT id, length FROM ${S}.sessions WHERE id = ANY(${ids}::text[])`
    } catch {
      return // unreachable for now: the next poll (or the reconnect) looks again
    }
    for (const row of rows) {
      const w = watched.get(row.id)
      if (!w) continue
      const length = Number(row.length)
      const before = w.seen
      w.seen = length
      if (before !== undefined && length !== before) tell(row.id)
    }
  }

  /** Polls now, or right after the poll under way (which may have missed what prompted this). */
  function poll(): Promise<void> {
    if (polling) {
      again = true
      return polling
    }
    polling = (async () => {
      do {
        again = false
        await pollOnce()
      } while (again && !closed)
    })().finally(() => (polling = undefined))
    return polling
  }

  function onNotice(payload: string) {
    const at = payload.lastIndexOf(':')
    if (at <= 0) return // not ours
    const id = payload.slice(0, at)
    const length = Number(payload.slice(at + 1))
    const w = watched.get(id)
    // Seen now, so the next poll does not tell it again.
    if (w && Number.isFinite(length) && (w.seen === undefined || length > w.seen)) w.seen = length
    tell(id)
  }

  return {
    announce() {}, // the adapter notifies inside its append transaction, for every engine at once
    listen(fn) {
      onGrow = fn
      if (listening || closed) return
      // The driver re-LISTENs by itself after its connection is lost; onlisten runs each time
      // LISTEN is in place (the first time too), and what was missed meanwhile is polled.
      listening = sql
        .listen(channel, onNotice, () => void poll())
        .then((meta) => meta as { unlisten(): Promise<void> }, () => undefined) // refused now: the driver retries
      void listening
    },
    watch(sessionId) {
      let w = watched.get(sessionId)
      if (!w) watched.set(sessionId, (w = { count: 0 }))
      w.count++
      if (!timer && !closed) {
        timer = setInterval(() => void poll(), pollMs)
        ;(timer as { unref?: () => void }).unref?.()
      }
      void poll() // its length now, to compare the next ones with
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
      }
    },
    close() {
      closed = true
      onGrow = undefined
      watched.clear()
      if (timer) clearInterval(timer)
      timer = undefined
      // postgres 3.4.9 re-LISTENs after a reconnect with a new listener record, which the
      // unlisten of the first one no longer finds: the channel's LISTEN may then stay on the
      // driver's listening connection until sql.end(); `closed` keeps it from reaching anyone.
      void listening?.then((meta) => meta?.unlisten()).catch(() => {})
    },
  }
}
