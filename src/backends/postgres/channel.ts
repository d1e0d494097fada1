// The LISTEN/NOTIFY channel of one session's growth notices. One channel per session, so that a
// notice reaches only the engines that follow that session: with one channel per store, every
// engine listening on it was woken for every append anywhere in the store, and dropped most.
import { createHash } from 'node:crypto'

/**
 * The channel of session `id` of the store in `schema`: `sf_` and 24 hex digits of the SHA-256
 * of the schema and the id (ids may be longer than a channel name may be, 63 bytes). Two
 * sessions sharing a channel would only cost a spurious notice: its payload names the session.
 */
export function growthChannelOf(schema: string, id: string): string {
  return `sf_${createHash('sha256').update(`${schema}\0${id}`).digest('hex').slice(0, 24)}`
}
