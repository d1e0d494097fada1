// Re-encrypting one session under the store's current data key (rotateKey): every envelope under
// an older key (its blocks, its sealed header, its checkpoint and history rows, its key-value records) is opened and
// sealed again with a fresh nonce, its payload as it was, so each block record keeps its exact
// length and the inner adapter replaces it in place (replaceRecords: all of a call, or none).
// The caller holds the session's writer lock. An envelope that does not open (damage, which verify
// reports) is left as it is: no key reads it, before or after.
import { isSessionfoldError } from '../../core/errors'
import type { SessionHeader, SessionId } from '../../core/model'
import type { EncodedEvent } from '../../core/validate'
import type { CheckpointRow, StorageAdapter } from '../types'
import { flat } from '../kv'
import { recordsOf } from '../records'
import { summaryKey } from '../records/keys'
import { fromBase64, toBase64 } from './base64'
import { Unreadable, type EnvelopeCodec } from './seal'

/** Block records gathered (JSON UTF-16 code units) before they go down in one replaceRecords call. */
const REPLACE_BYTES = 32 * 1024 * 1024

/** What re-encrypting one session did. */
export interface ResealReport {
  /** The session's events (for progress). */
  events: number
  /** Envelopes sealed again (blocks, header and rows). */
  resealed: number
  /** Envelopes that do not open, left as they are. */
  unreadable: number
}

export async function resealSession(inner: StorageAdapter, codec: EnvelopeCodec, id: SessionId): Promise<ResealReport | undefined> {
  const replace = inner.replaceRecords!.bind(inner) // rotateKey checked it is there
  const info = await inner.getSession(id)
  if (!info) return undefined
  const { length } = info
  const createdAt = info.header.createdAt
  const report: ResealReport = { events: length, resealed: 0, unreadable: 0 }

  /** The envelope `text` (base64) under the current key; undefined when it is already, or does not open. */
  async function fresh(aad: string, text: unknown): Promise<string | undefined> {
    if (text === undefined) return undefined
    const envelope = typeof text === 'string' ? fromBase64(text) : undefined
    try {
      if (!envelope) throw new Unreadable('not base64')
      const out = await codec.reseal(aad, envelope)
      if (out) report.resealed++
      return out && toBase64(out)
    } catch (err) {
      if (!(err instanceof Unreadable)) throw err
      report.unreadable++
      return undefined
    }
  }

  const sealed = (info.header as { sealed?: unknown }).sealed
  const headerEnvelope = sealed === undefined ? undefined : await fresh(`header ${id} ${createdAt}`, sealed)
  let header: SessionHeader | undefined = headerEnvelope === undefined ? undefined : ({ ...info.header, sealed: headerEnvelope } as SessionHeader)
  let records: EncodedEvent[] = []
  let bytes = 0
  const flush = async () => {
    if (records.length > 0 || header) await replace(id, header ? { records, header } : { records })
    records = []
    bytes = 0
    header = undefined
  }
  try {
    if (length > 0) {
      for await (const page of inner.readEvents(id, { to: length })) {
        for (const e of page) {
          // A block's record (its pointers hold no envelope): `time` is its event count.
          if (e.type !== '' || typeof e.data !== 'string') continue
          const data = await fresh(`events ${id} ${createdAt} ${e.seq} ${e.time}`, e.data)
          if (data === undefined) continue
          const event = { seq: e.seq, type: '', time: e.time, data }
          const json = JSON.stringify(event)
          records.push({ event, json })
          bytes += json.length
          if (bytes >= REPLACE_BYTES) await flush()
        }
      }
    }
    await flush()
    // Rows are caches: written again through the adapter's own calls.
    const row = await inner.getCheckpoint(id)
    const rowEnvelope = await fresh(`checkpoint ${id}`, (row as { sealed?: unknown } | undefined)?.sealed)
    if (rowEnvelope !== undefined) await inner.putCheckpoint(id, { sealed: rowEnvelope } as unknown as CheckpointRow)
    const history = inner.history
    for (const at of history ? await history.list(id) : []) {
      const found = await history!.get(id, at)
      if (found?.at !== at) continue
      const envelope = await fresh(`history ${id} ${at}`, (found.row as { sealed?: unknown } | undefined)?.sealed)
      if (envelope !== undefined) await history!.put(id, at, { sealed: envelope } as unknown as CheckpointRow)
    }
    // The session's key-value records (sealed-records.ts: "s" and the envelope).
    // Its row in the session index among them, which the public records leave out.
    const kv = recordsOf(inner) ?? inner.kv
    const keys = inner.kv ? await inner.kv.list(['session', id], { limit: 10_000 }) : []
    for (const key of kv ? [...keys, summaryKey(id)] : []) {
      const stored = await kv!.get(key)
      if (stored?.[0] !== 's') continue
      const envelope = await fresh(`record ${flat(key)}`, stored.slice(1))
      if (envelope !== undefined) await kv!.put(key, `s${envelope}`)
    }
  } catch (err) {
    if (isSessionfoldError(err, 'SESSION_NOT_FOUND')) return undefined // deleted meanwhile (by whoever took its lock after us)
    throw err
  }
  return report
}
