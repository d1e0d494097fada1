// A session's checkpoint row in its CHECKPOINT_FILE: exactly the row's JSON, replaced whole
// (a temp file, synced, renamed into place), so a reader finds the old row or the new one.
import { join } from 'node:path'
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { notFound } from '../../storage/guard'
import type { CheckpointRow } from '../../storage/types'
import { writeDurable } from './durable'
import { errno } from './errors'
import { CHECKPOINT_FILE, scratchName, sessionDir, tmpDir } from './layout'
import type { FsSettings } from './options'

export interface CheckpointFile {
  /** The row as stored, unvalidated; undefined when there is none. SESSION_NOT_FOUND without the session. */
  read(id: SessionId): Promise<unknown>
  write(id: SessionId, row: CheckpointRow): Promise<void>
  remove(id: SessionId): Promise<void>
}

export function createCheckpointFile(
  { fs, root }: Pick<FsSettings, 'fs' | 'root'>,
  sessionExists: (id: SessionId) => Promise<boolean>,
): CheckpointFile {
  const fileOf = (id: SessionId) => join(sessionDir(root, id), CHECKPOINT_FILE)
  return {
    async read(id) {
      let raw: string
      try {
        raw = await fs.readFile(fileOf(id), 'utf8')
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err
        if (!(await sessionExists(id))) throw notFound(id)
        return undefined
      }
      try {
        return JSON.parse(raw) as unknown
      } catch {
        throw new SessionfoldError('CORRUPT_LOG', `checkpoint of ${where(id)} is not JSON`, { sessionId: id })
      }
    },
    async write(id, row) {
      if (!(await sessionExists(id))) throw notFound(id)
      const tmp = join(tmpDir(root), scratchName(id, 'ckpt'))
      try {
        await writeDurable(fs, tmp, JSON.stringify(row))
        await fs.rename(tmp, fileOf(id))
      } catch (err) {
        await fs.rm(tmp, { force: true }).catch(() => {})
        throw errno(err) === 'ENOENT' ? notFound(id) : err
      }
    },
    async remove(id) {
      try {
        await fs.unlink(fileOf(id))
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err
        if (!(await sessionExists(id))) throw notFound(id)
      }
    },
  }
}
