// A session's history rows (time travel) in its HISTORY_DIR: one file per row, named by its
// position (`<at>.json`), each exactly the row's JSON, written to a temp file and renamed into
// place (not synced: see put), so a reader finds a row whole, or, after a crash, damaged.
import { join } from 'node:path'
import { SessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { notFound } from '../../storage/guard'
import type { HistoryRows } from '../../storage/types'
import { errno } from './errors'
import { HISTORY_DIR, scratchName, sessionDir, tmpDir } from './layout'
import type { FsSettings } from './options'

const ROW_NAME = /^([1-9]\d{0,15})\.json$/
/** Listings kept (sessions read as of a point lately). */
const MAX_LISTED = 256

export function createHistoryFiles(
  { fs, root }: Pick<FsSettings, 'fs' | 'root'>,
  sessionExists: (id: SessionId) => Promise<boolean>,
): HistoryRows {
  const dirOf = (id: SessionId) => join(sessionDir(root, id), HISTORY_DIR)
  /** Each folder's listing as last read, by its mtime: a read of a long log's history stats the folder rather than list its hundreds of rows. */
  const listed = new Map<SessionId, { mtimeMs: number; positions: number[] }>()

  /** The positions stored, ascending; SESSION_NOT_FOUND without the session. */
  async function positions(id: SessionId): Promise<number[]> {
    let names: string[]
    let mtimeMs: number
    try {
      mtimeMs = (await fs.stat(dirOf(id))).mtimeMs
      const known = listed.get(id)
      if (known && known.mtimeMs === mtimeMs) return known.positions
      names = await fs.readdir(dirOf(id))
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err
      listed.delete(id)
      if (!(await sessionExists(id))) throw notFound(id)
      return []
    }
    const found: number[] = []
    for (const name of names) {
      const m = ROW_NAME.exec(name)
      if (m) found.push(Number(m[1]))
    }
    found.sort((a, b) => a - b)
    if (listed.size >= MAX_LISTED) listed.delete(listed.keys().next().value!)
    listed.set(id, { mtimeMs, positions: found })
    return found
  }

  return {
    async put(id, at, row) {
      if (!(await sessionExists(id))) throw notFound(id)
      const tmp = join(tmpDir(root), scratchName(id, 'ckpt'))
      try {
        await fs.mkdir(dirOf(id), { recursive: true })
        // Not synced: a history row is a cache that a writer makes every thousand events or so,
        // and an fdatasync each cost appends on the same disk a third of their rate. A crash can
        // leave one empty or cut: reads pass over it to the row before, verify reports it.
        const fh = await fs.open(tmp, 'w')
        try {
          await fh.writeFile(JSON.stringify(row))
        } finally {
          await fh.close()
        }
        await fs.rename(tmp, join(dirOf(id), `${at}.json`))
        listed.delete(id)
      } catch (err) {
        await fs.rm(tmp, { force: true }).catch(() => {})
        throw errno(err) === 'ENOENT' ? notFound(id) : err
      }
    },
    async get(id, at) {
      const all = await positions(id)
      let best: number | undefined
      for (const p of all) if (p <= at) best = p
      if (best === undefined) return undefined
      let raw: string
      try {
        raw = await fs.readFile(join(dirOf(id), `${best}.json`), 'utf8')
      } catch (err) {
        if (errno(err) === 'ENOENT') return undefined // removed meanwhile (thinned, or the session deleted)
        throw err
      }
      try {
        return { at: best, row: JSON.parse(raw) as unknown }
      } catch {
        throw new SessionfoldError('CORRUPT_LOG', `history row ${best} of ${where(id)} is not JSON`, { sessionId: id })
      }
    },
    list: positions,
    async remove(id, at) {
      listed.delete(id)
      for (const p of at) {
        try {
          await fs.unlink(join(dirOf(id), `${p}.json`))
        } catch (err) {
          if (errno(err) !== 'ENOENT') throw err
        }
      }
      if (!(await sessionExists(id))) throw notFound(id)
    },
  }
}
