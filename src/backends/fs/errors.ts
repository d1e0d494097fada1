// How the fs adapter words its failures: a platform error (mapped by the guard) names the
// operation and the session, and damage names the file and the byte where it was found.
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { toStorageError } from '../../storage/guard'
import { LOG_FILE } from './layout'
import type { FsPromises } from './options'
import { join } from './host'

/** The code of a Node file-system error ('ENOENT', 'ENOSPC', ...). */
export const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code

/** The names in folder `dir`; none when it is missing (or is no folder any more: removed meanwhile). */
export async function namesIn(fs: Pick<FsPromises, 'readdir'>, dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir)
  } catch (err) {
    if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return []
    throw err
  }
}

/** `err` from operation `op` (on session `id`, or the store) as a SessionfoldError. */
export function storageError(err: unknown, id: SessionId | undefined, op: string): SessionfoldError {
  return toStorageError(err, id, (code) => {
    const subject = id === undefined ? 'the store' : where(id)
    return code === 'STORAGE_QUOTA_EXCEEDED'
      ? `${op} of ${subject} failed: no space left (${errno(err)})`
      : `${op} of ${subject} failed: ${(err as Error)?.message ?? String(err)}`
  })
}

/** CORRUPT_LOG for damage found at byte `offset` of a session's log file. */
export function corrupt(log: { id: SessionId; dir: string }, offset: number, what: string, seq?: number): SessionfoldError {
  return new SessionfoldError('CORRUPT_LOG', `log of ${where(log.id, seq)} is damaged at byte ${offset} of ${join(log.dir, LOG_FILE)}: ${what}`, {
    sessionId: log.id,
    seq,
  })
}
