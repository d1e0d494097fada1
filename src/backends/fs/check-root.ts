// An fs store's folder, checked when the store opens: a path that is a file, or a folder this
// process cannot make or write in, fails openStore itself with STORAGE_UNAVAILABLE naming the
// path, rather than the first createSession with ENOTDIR or EACCES.
import { randomBytes } from 'node:crypto'
import { mkdir, open, stat, unlink } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { SessionfoldError } from '../../core/errors'
import { platformErrorCode } from '../../storage/guard'
import { errno } from './errors'

export async function checkStoreDir(dir: string): Promise<void> {
  const path = resolve(dir)
  const fail = (what: string, err?: unknown) => {
    // A full disk stays STORAGE_QUOTA_EXCEEDED; everything else is STORAGE_UNAVAILABLE.
    const code = err === undefined ? 'STORAGE_UNAVAILABLE' : platformErrorCode(err)
    const why = err === undefined ? '' : `: ${(err as Error)?.message ?? String(err)}`
    return new SessionfoldError(code, `the store folder ${path} ${what}${why}`, { cause: err })
  }
  const st = await stat(path).catch((err: unknown) => {
    if (errno(err) === 'ENOENT') return undefined
    throw fail(errno(err) === 'ENOTDIR' ? 'cannot be a folder: a part of its path is a file' : 'cannot be read', err)
  })
  if (st && !st.isDirectory()) throw fail('is a file, not a folder')
  if (!st) {
    await makeFolder(path).catch((err: unknown) => {
      throw fail(errno(err) === 'ENOTDIR' ? 'cannot be made: a part of its path is a file' : 'cannot be made', err)
    })
  }
  // Permissions alone do not say (root, read-only mounts, ACLs): writing a file does.
  const probe = join(path, `.write-check-${process.pid}-${randomBytes(4).toString('hex')}`)
  try {
    await (await open(probe, 'wx')).close()
  } catch (err) {
    throw fail('cannot be written in', err)
  }
  await unlink(probe).catch(() => {})
}

/**
 * mkdir -p, one level at a time. Not fs.mkdir's recursive mode: on a pseudo file system such as
 * /proc, where mkdir says ENOENT under a folder that exists, Node's recursion never ends.
 */
async function makeFolder(path: string, depth = 0): Promise<void> {
  try {
    await mkdir(path)
  } catch (err) {
    if (errno(err) === 'EEXIST' && (await stat(path)).isDirectory()) return
    if (errno(err) !== 'ENOENT' || depth > 256 || dirname(path) === path) throw err
    await makeFolder(dirname(path), depth + 1)
    await mkdir(path).catch((again: unknown) => {
      if (errno(again) !== 'EEXIST') throw again
    })
  }
}
