// Writer locks shared by every process on every machine using one PostgreSQL store: a lease row
// per session in S.leases, holding a token from a sequence, its owner and an expiry. A holder
// renews its leases every ttl/3; one that stops (a crashed process, a lost network) lets its
// lease expire, and the next acquire takes it over with a new token. The token is the fence:
// the adapter checks it in each append's transaction (tokenOf), so a writer whose lease was
// taken over can never append, even if it has not noticed yet.
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { Sql } from 'postgres'
import { SessionfoldError, where } from '../../core/errors'
import { PG_SCHEMA_PATTERN } from '../../core/limits'
import type { SessionId } from '../../core/model'
import { locked, type WriterLocks } from '../../storage/locks'

export interface PostgresLocksOptions {
  /** The store's connection (the adapter's). */
  sql: Sql
  /** The store's schema (validated: PG_SCHEMA_PATTERN). */
  schema: string
  /** Written into each lease row, for people reading the table. Default `<hostname>:<pid>:<random>`. */
  owner?: string
  /** How long a lease lives without renewal; renewed every ttl/3. Default 10 s. */
  ttlMs?: number
  /** Called when a renewal finds a lease of ours gone (expired and taken over, or deleted). */
  onLost?: (id: SessionId) => void
  /**
   * Bound on an acquire, an isHeld or a release, client side (default 75 000 ms, the adapter's
   * own bound with its default timeouts): a server that let us in and then stopped answering
   * fails the statement then, rather than holding an open, a release or a close for ever.
   */
  deadlineMs?: number
}

export interface PostgresLocks extends WriterLocks {
  /**
   * The token of this engine's lease on `id`, for the adapter's fence; undefined when none is
   * held here. A lease found lost keeps its (dead) token until released, so appends are refused.
   */
  tokenOf(id: SessionId): string | undefined
  /** Stops renewing and releases every lease held here. */
  close(): Promise<void>
}

/** `query`, or STORAGE_UNAVAILABLE for `id` once `ms` pass without its answer (whatever the driver still waits for). */
function bounded<T>(query: PromiseLike<T>, ms: number, id: SessionId): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new SessionfoldError('STORAGE_UNAVAILABLE', `the database had no answer within ${ms} ms about the write lease of ${where(id)}`, { sessionId: id }))
    }, ms)
    query.then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(err)
      },
    )
  })
}

/** The SQLSTATE class of errors that mean the server is gone or refuses us for now. */
const UNAVAILABLE_STATES = /^(08|57P0[1-3]|53300)/

/**
 * A failed statement as a SessionfoldError naming the session: a full disk is
 * STORAGE_QUOTA_EXCEEDED, anything else (refused/lost connection, server shutting down, a
 * missing table) STORAGE_UNAVAILABLE, since the lease cannot be known.
 */
function leaseError(err: unknown, id: SessionId, doing: string): SessionfoldError {
  if (err instanceof SessionfoldError) return err
  const e = err as { code?: string; message?: string } | null
  const details = { sessionId: id, cause: err }
  const text = e?.message ?? String(err)
  if (e?.code === '53100')
    return new SessionfoldError('STORAGE_QUOTA_EXCEEDED', `the write lease of ${where(id)} cannot be ${doing}: the database disk is full (${text})`, details)
  const reason = typeof e?.code === 'string' && UNAVAILABLE_STATES.test(e.code) ? 'the database is unavailable' : 'the database failed'
  return new SessionfoldError('STORAGE_UNAVAILABLE', `the write lease of ${where(id)} cannot be ${doing}: ${reason} (${text})`, details)
}

interface Lease {
  token: string
  lost: boolean
}

export function createPostgresLocks(options: PostgresLocksOptions): PostgresLocks {
  const { sql, schema, onLost } = options
  if (!PG_SCHEMA_PATTERN.test(schema)) {
    throw new SessionfoldError('INVALID_ARGUMENT', `schema ${JSON.stringify(schema)} must match ${PG_SCHEMA_PATTERN.source}`)
  }
  const ttlMs = options.ttlMs ?? 10_000
  if (!Number.isInteger(ttlMs) || ttlMs < 30 || ttlMs > 86_400_000) {
    throw new SessionfoldError('INVALID_ARGUMENT', `ttlMs must be an integer from 30 to 86400000 (got ${String(ttlMs)})`)
  }
  const deadlineMs = options.deadlineMs ?? 75_000
  if (!Number.isInteger(deadlineMs) || deadlineMs < 1) {
    throw new SessionfoldError('INVALID_ARGUMENT', `deadlineMs must be a positive integer (got ${String(deadlineMs)})`)
  }
  const owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
  const S = sql(schema) // the quoted identifier; every value below is a parameter
  const sequence = `"${schema}".lease_tokens` // a regclass given as a parameter

  /** Leases held here, and sessions whose acquire is under way ('pending'). */
  const held = new Map<SessionId, Lease | 'pending'>()
  let timer: ReturnType<typeof setInterval> | undefined
  let renewing = false

  const leases = () => [...held].filter((e): e is [SessionId, Lease] => e[1] !== 'pending' && !e[1].lost)

  /**
   * Renews every live lease held here in one statement; a lease it does not find (taken over
   * after it expired, or deleted) is lost. A failed renewal (the server is unreachable) is
   * retried at the next beat: if the lease expires meanwhile and someone takes it, its token
   * changed and the next renewal finds it lost; the fence never depended on us noticing.
   */
  async function renew(): Promise<void> {
    if (renewing) return
    const live = leases()
    if (live.length === 0) return
    renewing = true
    try {
      // Not bounded: nothing waits for it, and one at a time keeps a hung server from piling them up.
      const rows = await sql<{ session_id: string }[]>`
        UPDATE ${S}.leases AS l SET expires_at = now() + ${ttlMs}::double precision * interval '1 millisecond'
        FROM unnest(${live.map(([id]) => id)}::text[], ${live.map(([, l]) => l.token)}::bigint[]) AS h(id, token)
        WHERE l.session_id = h.id AND l.token = h.token
        RETURNING l.session_id`
      const renewed = new Set(rows.map((r) => r.session_id))
      for (const [id, lease] of live) {
        if (renewed.has(id) || held.get(id) !== lease) continue
        lease.lost = true
        try {
          onLost?.(id)
        } catch {
          // the callback's own problem: the lease is lost either way
        }
      }
    } catch {
      // unreachable for now: next beat
    } finally {
      renewing = false
    }
  }

  function startBeat() {
    if (timer) return
    timer = setInterval(() => void renew(), Math.max(10, Math.floor(ttlMs / 3)))
    ;(timer as { unref?: () => void }).unref?.()
  }

  function stopBeatIfIdle() {
    if (timer && leases().length === 0) {
      clearInterval(timer)
      timer = undefined
    }
  }

  async function releaseLease(id: SessionId, lease: Lease): Promise<void> {
    if (held.get(id) === lease) held.delete(id)
    stopBeatIfIdle()
    try {
      await bounded(sql`DELETE FROM ${S}.leases WHERE session_id = ${id} AND token = ${lease.token}::bigint`, deadlineMs, id)
    } catch {
      // unreachable: the lease expires after ttl and is taken over then
    }
  }

  return {
    async acquire(id) {
      const mine = held.get(id)
      if (mine === 'pending' || (mine && !mine.lost)) throw locked(id)
      held.set(id, 'pending')
      // Back to what it was (a lost lease keeps fencing off appends) when this acquire fails.
      const undo = () => (mine ? held.set(id, mine) : held.delete(id))
      let token: string | undefined
      try {
        const rows = await bounded(
          sql<{ token: string }[]>`
          INSERT INTO ${S}.leases (session_id, token, owner, expires_at)
          VALUES (${id}, nextval(${sequence}::regclass), ${owner}, now() + ${ttlMs}::double precision * interval '1 millisecond')
          ON CONFLICT (session_id) DO UPDATE
            SET token = nextval(${sequence}::regclass), owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
            WHERE ${S}.leases.expires_at < now()
          RETURNING token`,
          deadlineMs,
          id,
        )
        token = rows[0]?.token
      } catch (err) {
        // One that timed out may still commit: never renewed, that lease expires after ttlMs.
        undo()
        throw leaseError(err, id, 'taken')
      }
      if (token === undefined) {
        undo()
        throw locked(id)
      }
      const lease: Lease = { token: String(token), lost: false }
      held.set(id, lease)
      startBeat()
      let released = false
      return async () => {
        if (released) return
        released = true
        await releaseLease(id, lease)
      }
    },
    async isHeld(id) {
      const mine = held.get(id)
      if (mine && mine !== 'pending' && !mine.lost) return true
      try {
        const [row] = await bounded(
          sql<{ held: boolean }[]>`
          SELECT EXISTS (SELECT 1 FROM ${S}.leases WHERE session_id = ${id} AND expires_at > now()) AS held`,
          deadlineMs,
          id,
        )
        return row?.held === true
      } catch (err) {
        throw leaseError(err, id, 'read')
      }
    },
    tokenOf(id) {
      const mine = held.get(id)
      return mine && mine !== 'pending' ? mine.token : undefined
    },
    async close() {
      const all = [...held].filter((e): e is [SessionId, Lease] => e[1] !== 'pending')
      await Promise.all(all.map(([id, lease]) => releaseLease(id, lease)))
      if (timer) clearInterval(timer)
      timer = undefined
    },
  }
}
