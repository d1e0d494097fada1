// Which boot of the machine this process runs in. The change feed's records are written to
// the page cache and not synced on their own (feed.ts): a process that dies leaves them in
// place for the others, and only a crash of the machine itself can lose the last of them. The
// feed knows one happened when the boot it last wrote in is not this one.
import { errno } from './errors'
import type { FsPromises } from './options'

/** Linux's identity of the running boot, a random UUID made at each start. */
export const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id'

/**
 * This boot's identity: Linux's boot id where there is one; elsewhere `t:` and the second the
 * machine started (from its uptime, so it can move by a second between two readings); `unknown`
 * for a file system that knows neither.
 */
export async function bootIdentity(fs: Pick<FsPromises, 'readFile' | 'uptime'>): Promise<string> {
  try {
    const id = (await fs.readFile(BOOT_ID_FILE, 'utf8')).trim()
    if (id !== '') return id
  } catch (err) {
    if (errno(err) !== 'ENOENT' && errno(err) !== 'EACCES' && errno(err) !== 'ENOTDIR') throw err
  }
  if (!fs.uptime) return 'unknown' // one boot as far as this store can tell
  return `t:${Math.round(Date.now() / 1000 - fs.uptime())}`
}

/**
 * Whether two identities name the same boot. Start times may differ by the rounding of two
 * readings; two real boots are apart by at least the first one's whole uptime.
 */
export function sameBoot(a: string, b: string): boolean {
  if (a.startsWith('t:') && b.startsWith('t:')) return Math.abs(Number(a.slice(2)) - Number(b.slice(2))) <= 2
  return a === b
}
