// The record codec over key-value records (src/storage/records: the engine's records and the
// store's rows alike). An app's or the engine's value is stored as "p" and the value as it is,
// or as "s" and its sealed envelope in base64 (compressed when worth it, and encrypted when the
// store is), with the key bound into the envelope so that a value moved to another key does not
// open; an encrypted store refuses a value that is not sealed. A checkpoint or history row (its
// JSON) is stored as it is, or as `{"sealed":…}` bound to the row it is (as stores of 0.1 sealed
// rows); a row that does not open is handed up as an unusable row (rows are caches: the engine
// rebuilds, and verify reports it). Meta records (the key record among them) are not sealed.
import { SessionfoldError, isSessionfoldError } from '../../core/errors'
import { assertWrites, flat, getMany, writeMany } from '../kv'
import { rowKind } from '../records'
import { MAX_RECORD_VALUE, type KeyValueStore, type RecordKey, type RecordWrite } from '../types'
import { describe, utf8Length } from '../../core/validate'
import { fromBase64, toBase64 } from './base64'
import { Unreadable, type EnvelopeCodec } from './seal'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * The longest value (UTF-8 bytes) whose sealed form the adapter still takes: base64 makes 4 of
 * 3 bytes, and an envelope adds its flags, generation, nonce and tag.
 */
export const MAX_SEALED_VALUE_BYTES = Math.floor((MAX_RECORD_VALUE - 64) / 4) * 3

/** INVALID_ARGUMENT for a value of an app's record too long to be stored sealed. */
export function checkSealedValue(key: RecordKey, value: string): void {
  if (utf8Length(value) > MAX_SEALED_VALUE_BYTES) {
    throw new SessionfoldError(
      'INVALID_ARGUMENT',
      `the value of record ${flat(key)} must be at most ${MAX_SEALED_VALUE_BYTES} bytes of UTF-8 in a store with a record codec, got ${describe(value.length)} characters`,
    )
  }
}

/** What a row's envelope is bound to: `checkpoint <id>`, `history <id> <at>`. */
export const rowAad = (key: RecordKey): string => (key.length === 3 ? `checkpoint ${key[1]}` : `history ${key[1]} ${Number(key[3])}`)

export function sealedRecords(inner: KeyValueStore, codec: EnvelopeCodec): KeyValueStore {
  const aad = (key: RecordKey) => `record ${flat(key)}`
  const unreadable = (key: RecordKey, why: string) => new SessionfoldError('CORRUPT_LOG', `record ${flat(key)} of the store does not open: ${why}`)

  async function sealRow(key: RecordKey, json: string): Promise<string> {
    if (!codec.encrypted && !codec.compresses(json.length)) return json
    return JSON.stringify({ sealed: toBase64(await codec.seal(rowAad(key), encoder.encode(json))) })
  }

  async function openRow(key: RecordKey, stored: string): Promise<string> {
    let row: { sealed?: unknown } | null
    try {
      row = JSON.parse(stored) as { sealed?: unknown } | null
    } catch {
      return stored // not JSON: the rows above report it
    }
    if (row === null) return stored
    const sealed = row.sealed
    if (sealed === undefined) return codec.encrypted ? JSON.stringify({ unusable: 'a row that is not encrypted, in an encrypted store' }) : stored
    try {
      const bytes = typeof sealed === 'string' ? fromBase64(sealed) : undefined
      if (!bytes) throw new Unreadable('not base64')
      return decoder.decode(await codec.open(rowAad(key), bytes))
    } catch (err) {
      return JSON.stringify({ unusable: (err as Error).message })
    }
  }

  async function opened(key: RecordKey, stored: string | undefined): Promise<string | undefined> {
    if (stored === undefined) return undefined
    const kind = rowKind(key)
    // Tombstones (ids and times, as the index's keys show) stay plain: rotateKey reseals per session, and they outlive theirs.
    if (kind === 'meta' || kind === 'index' || kind === 'deleted') return stored
    if (kind !== undefined) return openRow(key, stored)
    if (stored[0] === 'p' && !codec.encrypted) return stored.slice(1)
    if (stored[0] !== 's') throw unreadable(key, codec.encrypted ? 'it is not encrypted, in an encrypted store' : 'it is not a record of this codec')
    const bytes = fromBase64(stored.slice(1))
    if (!bytes) throw unreadable(key, 'not base64')
    try {
      return decoder.decode(await codec.open(aad(key), bytes))
    } catch (err) {
      if (isSessionfoldError(err, 'KEY_REJECTED')) throw err
      throw unreadable(key, (err as Error).message)
    }
  }

  async function sealed(key: RecordKey, value: string): Promise<string> {
    const kind = rowKind(key)
    if (kind === 'meta' || kind === 'index' || kind === 'deleted') return value
    if (kind !== undefined) return sealRow(key, value)
    if (!codec.encrypted && !codec.compresses(value.length)) return `p${value}`
    return `s${toBase64(await codec.seal(aad(key), encoder.encode(value)))}`
  }

  return {
    get: async (key) => opened(key, await inner.get(key)),
    put: async (key, value, options) => inner.put(key, await sealed(key, value), options),
    delete: (key) => inner.delete(key),
    list: (prefix, range) => inner.list(prefix, range),
    async getMany(keys) {
      const stored = await getMany(inner, keys)
      return Promise.all(keys.map((key, i) => opened(key, stored[i])))
    },
    async writeMany(writes, options) {
      assertWrites(writes) // before anything is sealed
      const out = await Promise.all(writes.map(async ([key, value]): Promise<RecordWrite> => [key, value === undefined ? undefined : await sealed(key, value)]))
      return writeMany(inner, out, options)
    },
  }
}
