// Checkpoint rows, history rows and meta records, written once over a backend's key-value
// records (keys.ts): each row its JSON, replaced whole. A row is a cache the engine checks; a
// meta record (a replication's cursors, the codec's key record) is put durably.
import { SessionfoldError, isSessionfoldError, where } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { assertMeta, assertPosition, assertSessionId, notFound } from '../guard'
import { MAX_KEY_LIST } from '../kv'
import type { CheckpointRow, HistoryRows, KeyValueStore, RecordKey } from '../types'
import { checkpointKey, historyKey, historyPrefix, metaKey, positionOf } from './keys'

/** Whether session `id` is there (rows of no session are SESSION_NOT_FOUND). */
export type Exists = (id: SessionId) => Promise<boolean>

export interface StoreRows {
  getCheckpoint(id: SessionId): Promise<unknown>
  putCheckpoint(id: SessionId, row: CheckpointRow): Promise<void>
  deleteCheckpoint(id: SessionId): Promise<void>
  history: HistoryRows
  getMeta(key: string): Promise<string | undefined>
  putMeta(key: string, value: string): Promise<void>
}

/** Every key under `prefix`, page after page. */
export async function listAll(kv: KeyValueStore, prefix: RecordKey): Promise<string[][]> {
  const out: string[][] = []
  for (;;) {
    const page = await kv.list(prefix, { limit: MAX_KEY_LIST, ...(out.length > 0 ? { after: out[out.length - 1] } : {}) })
    out.push(...page)
    if (page.length < MAX_KEY_LIST) return out
  }
}

export function storeRows(kv: KeyValueStore, exists: Exists): StoreRows {
  const present = async (id: SessionId) => {
    if (!(await exists(id))) throw notFound(id)
  }
  const parse = (id: SessionId, text: string, what: string): unknown => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      throw new SessionfoldError('CORRUPT_LOG', `${what} of ${where(id)} is not JSON`, { sessionId: id })
    }
  }
  const json = (id: SessionId, row: unknown, what: string): string => {
    try {
      const text = JSON.stringify(row)
      if (typeof text === 'string') return text
    } catch (err) {
      throw new SessionfoldError('INVALID_ARGUMENT', `${what} of ${where(id)} is not JSON: ${(err as Error).message}`, { sessionId: id })
    }
    throw new SessionfoldError('INVALID_ARGUMENT', `${what} of ${where(id)} is not JSON`, { sessionId: id })
  }
  /** A put of session `id`'s row: SESSION_NOT_FOUND in the row's terms without the session. */
  const putRow = async (id: SessionId, key: RecordKey, text: string, durability: 'cache' | 'whole') => {
    try {
      await kv.put(key, text, { durability })
    } catch (err) {
      throw isSessionfoldError(err, 'SESSION_NOT_FOUND') ? notFound(id) : err
    }
  }
  /** The session's history positions, ascending (SESSION_NOT_FOUND without the session). */
  const positions = async (id: SessionId): Promise<number[]> => {
    const found: number[] = []
    for (const key of await listAll(kv, historyPrefix(id))) {
      const at = key.length === 4 ? positionOf(key[3]) : undefined
      if (at !== undefined) found.push(at)
    }
    if (found.length === 0) await present(id)
    return found.sort((a, b) => a - b)
  }

  return {
    async getCheckpoint(id) {
      assertSessionId(id)
      const text = await kv.get(checkpointKey(id))
      if (text === undefined) {
        await present(id)
        return undefined
      }
      return parse(id, text, 'checkpoint')
    },
    async putCheckpoint(id, row) {
      assertSessionId(id)
      // Whole: a crash leaves the old row or the new one (on files: synced before its rename).
      await putRow(id, checkpointKey(id), json(id, row, 'checkpoint'), 'whole')
    },
    async deleteCheckpoint(id) {
      assertSessionId(id)
      await present(id)
      await kv.delete(checkpointKey(id))
    },
    history: {
      async put(id, at, row) {
        assertSessionId(id)
        assertPosition(id, at)
        await putRow(id, historyKey(id, at), json(id, row, `history row ${at}`), 'cache')
      },
      async get(id, at) {
        assertSessionId(id)
        assertPosition(id, at, 0)
        let best: number | undefined
        for (const p of await positions(id)) if (p <= at) best = p
        if (best === undefined) return undefined
        const text = await kv.get(historyKey(id, best))
        if (text === undefined) return undefined // removed meanwhile (thinned, or the session deleted)
        return { at: best, row: parse(id, text, `history row ${best}`) }
      },
      async list(id) {
        assertSessionId(id)
        return positions(id)
      },
      async remove(id, at) {
        assertSessionId(id)
        for (const p of at) assertPosition(id, p)
        await present(id)
        for (const p of at) await kv.delete(historyKey(id, p))
      },
    },
    async getMeta(key) {
      assertMeta(key)
      return kv.get(metaKey(key))
    },
    async putMeta(key, value) {
      assertMeta(key, value)
      await kv.put(metaKey(key), value, { durability: 'durable' })
    },
  }
}
