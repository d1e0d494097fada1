// The on-disk layout of an fs store, named once: the adapter, the writer locks, growth
// watching and the command line all find their files here.
//   <root>/sessions/<folder>/header.json      the header, written once inside a temp folder renamed into place
//                            events.log       records (record-format.ts), appended and fdatasync'ed before an append resolves
//                            events.idx       the sparse offset index (offset-index.ts): a hint, checked on use
//                            checkpoint.json  the checkpoint row, exactly its JSON shape (temp file + fsync + rename)
//                            summary.json the session index's row of it (['session', id, '_summary']; stores of this version's first
//                                         versions kept it in kv/_summary, still read there, and removed there when written)
//                            history/<at>.json  history rows (time travel): the row after the first <at> events (temp file + rename)
//                            kv/<name>        the session's key-value records (its chain marks), name = recordName(key parts after the id)
//   <root>/tmp/              sessions, checkpoints and indexes in the making, renamed into place when whole
//   <root>/trash/            deleted sessions' folders, renamed here and then removed
//   <root>/locks/<folder>.lock  writer locks (src/backends/fs/locks.ts)
//   <root>/feed.log, feed.id, feed.boot  the change feed, its identity, the boot it was last written in (feed.ts)
//   <root>/meta/<key>        meta records (replication cursors, the codec's key record), replaced whole by rename
//   <root>/kv/<name>         the store's own key-value records (of no session, of the session index neither), replaced whole by rename
//   <root>/index/            the session index's records (keys ['_index', …], src/storage/records/keys.ts), apart so a list reads its page:
//            state           ['_index', 'state']
//            <L>/<T>+<id>    an entry ['_index', L, T, id] (L: ar, ax, cr or cx; T: 12 hex digits; id case-safe as in recordName), empty,
//            <L>/<T0:3>/<T3:12>+<id>, <L>/<T0:3>/<T3:5>/<T5:12>+<id>, ... down to <T9:11>/<T11>+<id>
//                            in its list's folder while that holds fewer than 256 entries, else a level down in a folder named by
//                            the time part's next digits (and so on; the last level takes any), so a store written over days keeps
//                            its entries in four folders and one written in a burst grows them where it is dense (stores of this
//                            version's first days kept every entry at the deepest level, read as they are); a list walks the folders in
//                            order from its cursor (index-files.ts). A delete removes the folders it leaves empty, up to <L>, and a
//                            put makes them again (again when one went meanwhile).
//            other/<name>    any other key of the index, name = recordName(its parts after '_index')
//                            Stores written before the index have no index/: it is a cache, rebuilt when missing.
//
// Session ids to folder names. Ids are [A-Za-z0-9_-]{1,128}, which is safe on Linux but not
// everywhere: macOS and Windows fold case ("Agent" and "agent" would share a folder) and
// Windows reserves device names (CON, NUL, LPT1, ...). So a folder is named "s-" + the id in
// lower case, plus "." and a hex mask of the upper-case positions when there are any:
// "Agent" -> "s-agent.1", "CON" -> "s-con.7". At most 2 + 128 + 1 + 32 = 163 characters.
import { SESSION_ID_PATTERN } from '../../core/limits'
import type { SessionId } from '../../core/model'
import { assertSessionId } from '../../core/validate'
import { join, randomHex } from './host'

export const HEADER_FILE = 'header.json'
export const LOG_FILE = 'events.log'
export const INDEX_FILE = 'events.idx'
export const CHECKPOINT_FILE = 'checkpoint.json'
/** The session index's row of a session: in its folder, beside the checkpoint, so a session with no records of its own has no kv/ folder (a 4 KiB block). */
export const SUMMARY_FILE = 'summary.json'
export const HISTORY_DIR = 'history'
/** Key-value records (kv.ts): the store's in `<root>/kv/`, a session's in its folder's `kv/`. */
export const RECORDS_DIR = 'kv'

/** The change feed (feed.ts), in the store's root: one record per write, its identity, and the boot it was last written in. */
export const FEED_FILE = 'feed.log'
export const FEED_ID_FILE = 'feed.id'
export const FEED_BOOT_FILE = 'feed.boot'
export const metaDir = (root: string): string => join(root, 'meta')

export const sessionsDir = (root: string): string => join(root, 'sessions')
export const tmpDir = (root: string): string => join(root, 'tmp')
export const trashDir = (root: string): string => join(root, 'trash')
export const locksDir = (root: string): string => join(root, 'locks')

/** The folder of session `id`, holding its HEADER_FILE, LOG_FILE, INDEX_FILE, CHECKPOINT_FILE and SUMMARY_FILE. */
export const sessionDir = (root: string, id: SessionId): string => join(sessionsDir(root), folderOf(id))

/** The writer lock file of session `id`. */
export const lockFile = (root: string, id: SessionId): string => join(locksDir(root), `${folderOf(id)}.lock`)

/**
 * A fresh name in tmpDir or trashDir for something of session `id`: its folder in the making
 * or on its way out, or (`what`) its checkpoint ('ckpt'), index ('idx'), log ('log') or header ('hdr') being rewritten.
 */
export function scratchName(id: SessionId, what?: 'ckpt' | 'idx' | 'log' | 'hdr'): string {
  return `${folderOf(id)}.${what === undefined ? '' : `${what}.`}${randomHex(6)}`
}

const PREFIX = 's-'

export function folderOf(id: SessionId): string {
  assertSessionId(id)
  return PREFIX + caseSafe(id)
}

/**
 * `text` ([A-Za-z0-9_-]) as a name that no file system folds into another: in lower case,
 * plus "." and a hex mask of the upper-case positions when there are any.
 */
function caseSafe(text: string): string {
  let mask = ''
  let any = false
  for (let i = 0; i < text.length; i += 4) {
    let nibble = 0
    for (let b = 0; b < 4 && i + b < text.length; b++) {
      const c = text.charCodeAt(i + b)
      if (c >= 65 && c <= 90) nibble |= 1 << b
    }
    if (nibble) any = true
    mask += nibble.toString(16)
  }
  const lower = text.toLowerCase()
  return any ? `${lower}.${mask.replace(/0+$/, '')}` : lower
}

/** `name` as caseSafe made it, or undefined for a name it does not make. */
function caseRestored(name: string): string | undefined {
  const [lower = '', mask, ...rest] = name.split('.')
  if (rest.length > 0 || lower !== lower.toLowerCase()) return undefined
  if (mask !== undefined && !/^[0-9a-f]*[1-9a-f]$/.test(mask)) return undefined
  const chars = [...lower]
  for (let n = 0; n < (mask?.length ?? 0); n++) {
    const nibble = parseInt(mask![n]!, 16)
    for (let b = 0; b < 4; b++) {
      const i = n * 4 + b
      if (!(nibble & (1 << b))) continue
      if (i >= chars.length || !/[a-z]/.test(chars[i]!)) return undefined
      chars[i] = chars[i]!.toUpperCase()
    }
  }
  const text = chars.join('')
  return caseSafe(text) === name ? text : undefined
}

/** The file name of a key-value record's key parts (checked by the caller): case-safe parts joined by "+". */
export const recordName = (parts: readonly string[]): string => parts.map(caseSafe).join('+')

/** The key parts a record's file name stands for, or undefined for names we did not make (temp files among them). */
export function partsOfRecordName(name: string): string[] | undefined {
  const parts = name.split('+').map(caseRestored)
  return parts.every((p): p is string => p !== undefined && /^[A-Za-z0-9_-]{1,128}$/.test(p)) ? parts : undefined
}

/** The folder of the store's own key-value records (those of no session). */
export const recordsDir = (root: string): string => join(root, RECORDS_DIR)
/** The folder of session `id`'s key-value records, inside its folder (so they go with it). */
export const sessionRecordsDir = (root: string, id: SessionId): string => join(sessionDir(root, id), RECORDS_DIR)

/** The session index's folder (its keys' places: index-files.ts). */
export const sessionIndexDir = (root: string): string => join(root, 'index')
/** In sessionIndexDir: the index's state, and the folder of its keys that are neither the state nor an entry. */
export const INDEX_STATE_FILE = 'state'
export const INDEX_OTHER_DIR = 'other'
/** Hex digits of an index entry's time part that name each folder level under its list's folder (index-files.ts); an entry's file holds the rest of them. */
export const INDEX_LEVELS: readonly number[] = [3, 2, 2, 2, 2]

/** The id a folder name stands for, or undefined for names we did not make. */
export function idOfFolder(name: string): SessionId | undefined {
  if (!name.startsWith(PREFIX)) return undefined
  const id = caseRestored(name.slice(PREFIX.length))
  return id !== undefined && SESSION_ID_PATTERN.test(id) ? id : undefined
}
