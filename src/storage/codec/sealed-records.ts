// The record codec over key-value records (StorageAdapter.kv): each value stored as "p" and
// the value as it is, or as "s" and its sealed unit in base64 (compressed when worth it, and
// encrypted when the store is), with the key bound into the unit so that a value moved to
// another key does not open. An encrypted store refuses a value that is not sealed.
import { SessionfoldError } from '../../core/errors'
import { assertKey, assertValue, flat } from '../kv'
import { MAX_RECORD_VALUE, type KeyValueStore, type RecordKey } from '../types'
import { describe, utf8Length } from '../../core/validate'
import { fromBase64, toBase64 } from './base64'
import type { UnitCodec } from './seal'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * The longest value (UTF-8 bytes) whose sealed form the adapter still takes: base64 makes 4 of
 * 3 bytes, and a unit adds its flags, generation, nonce and tag.
 */
export const MAX_SEALED_VALUE_BYTES = Math.floor((MAX_RECORD_VALUE - 64) / 4) * 3

export function sealedRecords(inner: KeyValueStore, codec: UnitCodec): KeyValueStore {
  const aad = (key: RecordKey) => `record ${flat(key)}`
  const unreadable = (key: RecordKey, why: string) =>
    new SessionfoldError('CORRUPT_LOG', `record ${flat(key)} of the store does not open: ${why}`)
  return {
    async get(key) {
      assertKey(key)
      const stored = await inner.get(key)
      if (stored === undefined) return undefined
      if (stored[0] === 'p' && !codec.encrypted) return stored.slice(1)
      if (stored[0] !== 's') throw unreadable(key, codec.encrypted ? 'it is not encrypted, in an encrypted store' : 'it is not a record of this codec')
      const bytes = fromBase64(stored.slice(1))
      if (!bytes) throw unreadable(key, 'not base64')
      try {
        return decoder.decode(await codec.open(aad(key), bytes))
      } catch (err) {
        if (err instanceof SessionfoldError && err.code === 'KEY_REJECTED') throw err
        throw unreadable(key, (err as Error).message)
      }
    },
    async put(key, value) {
      // Checked here: what goes down is a stand-in for the value.
      assertKey(key)
      assertValue(key, value)
      if (utf8Length(value) > MAX_SEALED_VALUE_BYTES) {
        throw new SessionfoldError('INVALID_ARGUMENT', `the value of record ${flat(key)} must be at most ${MAX_SEALED_VALUE_BYTES} bytes of UTF-8 in a store with a record codec, got ${describe(value.length)} characters`)
      }
      if (!codec.encrypted && !codec.compresses(value.length)) return inner.put(key, `p${value}`)
      return inner.put(key, `s${toBase64(await codec.seal(aad(key), encoder.encode(value)))}`)
    },
    delete: (key) => inner.delete(key),
    list: (prefix, range) => inner.list(prefix, range),
  }
}
