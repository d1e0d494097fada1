// Tombstones (DESIGN §15): what a store keeps of a deleted session so the delete reaches every
// store it syncs with and stays done. One record per deleted id, `['_deleted', id]` among the
// store's own key-value records (so every backend, and the record codec, keeps them alike): the
// lives of the id that were deleted, each `[createdAt, deletedAt]`. About 50 bytes of JSON per
// deleted life, kept for good: a copy of that life that comes back from a device that was
// offline must be refused, however late it comes.
//
// A delete writes the tombstone first, then deletes the session (whose backend records the
// delete in its change feed, so changesSince finds it after a cursor): a delete interrupted
// between the two leaves the session whole, named by a tombstone, and the same delete again
// finishes it.
import type { Tombstone } from '../core/changes'
import type { SessionId } from '../core/model'
import { isSessionId, isTime } from '../core/limits'
import { deletedKey, deletedPrefix } from '../storage/records/keys'
import type { KeyValueStore } from '../storage/types'

/** The lives of one id that were deleted, as stored. */
interface Stored {
  v: 1
  lives: [createdAt: number, deletedAt: number][]
}

function parse(id: SessionId, text: string | undefined): Tombstone[] {
  if (text === undefined) return []
  let stored: Partial<Stored>
  try {
    stored = JSON.parse(text) as Partial<Stored>
  } catch {
    return [] // a damaged record says nothing; the next delete of the id writes it again
  }
  if (stored.v !== 1 || !Array.isArray(stored.lives)) return []
  return stored.lives
    .filter((l): l is [number, number] => Array.isArray(l) && isTime(l[0]) && isTime(l[1]))
    .map(([createdAt, deletedAt]) => ({ id, createdAt, deletedAt }))
}

/** A store's tombstones. Without key-value records (a storage not composed), it keeps none. */
export class Tombstones {
  constructor(private readonly records: KeyValueStore | undefined) {}

  /** The deleted lives of `id`. */
  async of(id: SessionId): Promise<Tombstone[]> {
    if (!this.records) return []
    return parse(id, await this.records.get(deletedKey(id)))
  }

  /** The tombstone of life `createdAt` of `id`, if it was deleted. */
  async find(id: SessionId, createdAt: number): Promise<Tombstone | undefined> {
    return (await this.of(id)).find((t) => t.createdAt === createdAt)
  }

  /** Whether any life of any id was deleted here (one listing): a store that deleted nothing is spared a lookup a session. */
  async any(): Promise<boolean> {
    return this.records !== undefined && (await this.records.list(deletedPrefix, { limit: 1 })).length > 0
  }

  /** Keeps `t` (durably), unless that life is known deleted already. */
  async add(t: Tombstone): Promise<void> {
    if (!this.records) return
    const had = await this.of(t.id)
    if (had.some((h) => h.createdAt === t.createdAt)) return
    const lives = [...had, t].sort((a, b) => a.createdAt - b.createdAt).map((l): [number, number] => [l.createdAt, l.deletedAt])
    await this.records.put(deletedKey(t.id), JSON.stringify({ v: 1, lives } satisfies Stored), { durability: 'durable' })
  }

  /**
   * Tombstones in id order after `after`, of about `limit` ids (every life of an id together),
   * of the ids `only` allows: `last` is the last id read, `done` when there are no more.
   */
  async page(
    after: SessionId | undefined,
    limit: number,
    only?: ReadonlySet<SessionId>,
  ): Promise<{ tombstones: Tombstone[]; last?: SessionId; done: boolean }> {
    if (!this.records) return { tombstones: [], done: true }
    const tombstones: Tombstone[] = []
    if (only) {
      const ids = [...only].sort().filter((id) => after === undefined || id > after)
      const taken = ids.slice(0, limit)
      for (const id of taken) tombstones.push(...(await this.of(id)))
      return { tombstones, ...(taken.length > 0 ? { last: taken[taken.length - 1]! } : {}), done: taken.length === ids.length }
    }
    const keys = await this.records.list(deletedPrefix, { limit, ...(after !== undefined ? { after: deletedKey(after) } : {}) })
    const ids = keys.map((k) => k[1]).filter(isSessionId)
    for (const id of ids) tombstones.push(...(await this.of(id)))
    const last = keys.length > 0 ? keys[keys.length - 1]![1] : undefined
    return { tombstones, ...(last !== undefined ? { last } : {}), done: keys.length < limit }
  }
}
