// A store's encryption key as it crosses to the engine (openStore's encryption.key, rotateKey's new key).
import { SessionfoldError } from '../core/errors'
import { describe } from '../core/validate'

/** A key as it crosses to the engine (a copy of raw bytes); INVALID_ARGUMENT unless 32 bytes or a CryptoKey. */
export function checkKey(key: unknown, what: string): Uint8Array | CryptoKey {
  if (key instanceof Uint8Array) {
    if (key.length !== 32) throw new SessionfoldError('INVALID_ARGUMENT', `${what} must be 32 bytes (AES-256), got ${key.length}`)
    return new Uint8Array(key)
  }
  const CryptoKeyClass = (globalThis as { CryptoKey?: abstract new () => CryptoKey }).CryptoKey
  if (CryptoKeyClass && key instanceof CryptoKeyClass) return key
  throw new SessionfoldError('INVALID_ARGUMENT', `${what} must be 32 bytes (a Uint8Array) or an AES-GCM CryptoKey, got ${describe(key)}`)
}
