// How the PostgreSQL adapter words its failures. A driver or server error becomes the storage
// contract's code: a full disk (SQLSTATE 53100) is STORAGE_QUOTA_EXCEEDED; a refused, lost or
// timed-out connection, a server shutting down, a statement cancelled by statement_timeout,
// and anything else the server refuses are STORAGE_UNAVAILABLE. Messages name the operation and
// the session, never the password of the connection URL.
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { passwordOf } from './options'

/** The SQLSTATE of a server error, or the driver's code ('ECONNREFUSED', 'CONNECTION_CLOSED', ...). */
export const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** SQLSTATE 53100 (disk_full); 53200 (out_of_memory) and 53300 (too_many_connections) pass, so they are unavailability. */
const QUOTA = new Set(['53100'])

/** `text` with every occurrence of `secret` masked. */
export function redact(text: string, secret: string | undefined): string {
  if (!secret) return text
  let out = text
  for (const s of new Set([secret, encodeURIComponent(secret)])) out = out.split(s).join('***')
  return out
}

/** What the driver or server said: SQLSTATE or driver code, and its message. */
function detailOf(err: unknown): string {
  const { message } = (err ?? {}) as { message?: unknown }
  const code = codeOf(err)
  const text = typeof message === 'string' && message !== '' ? message : String(err)
  return code !== undefined && !text.includes(code) ? `${code}: ${text}` : text
}

/**
 * `err` from operation `op` (on session `id`, or the store) as a SessionfoldError: one
 * already is stays as it is; the driver's error is kept as `cause` with the password masked.
 */
export function storageError(err: unknown, op: string, id: SessionId | undefined, secret: string | undefined): SessionfoldError {
  if (err instanceof SessionfoldError) return err
  const subject = id === undefined ? 'the PostgreSQL store' : `${where(id)} in the PostgreSQL store`
  const detail = redact(detailOf(err), secret)
  if (err instanceof Error && secret) err.message = redact(err.message, secret)
  if (QUOTA.has(codeOf(err) ?? '')) {
    return new SessionfoldError('STORAGE_QUOTA_EXCEEDED', `${op} of ${subject} failed: the database server's disk is full; nothing was written (${detail})`, {
      sessionId: id,
      cause: err,
    })
  }
  return new SessionfoldError('STORAGE_UNAVAILABLE', `${op} of ${subject} failed: ${detail}`, { sessionId: id, cause: err })
}

/** CORRUPT_LOG for a stored value of session `id` that cannot be read back. */
export function corrupt(id: SessionId, what: string, seq?: number): SessionfoldError {
  return new SessionfoldError('CORRUPT_LOG', `${where(id, seq)} in the PostgreSQL store: ${what}`, { sessionId: id, seq })
}

/** `text` with the password of `url` masked (for any message printed). */
export const masked = (text: string, url: string | undefined): string => (url === undefined ? text : redact(text, passwordOf(url)))
