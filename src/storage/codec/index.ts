// The record codec, opened over an adapter: `openSealed(inner, options)` reads (or makes) the
// store's key record, checks the key, and returns the adapter that seals and opens envelopes.
import type { StorageAdapter } from '../types'
import { Keyring, type EncryptionKey, type KeyAdvice, type RecordLock } from './keyring'
import { EnvelopeCodec, type Cipher, type Compressor } from './seal'
import { sealedStorage, type SealedStorage } from './sealed-storage'

export { importKey, CODEC_META_KEY, type EncryptionKey, type KeyAdvice, type RecordLock } from './keyring'
export { deriveKey } from '../../core/derive-key'
export type { Cipher, Compressor } from './seal'
export type { SealedStorage } from './sealed-storage'

export interface CodecOptions {
  /** The store's key; absent: the store must not be encrypted. */
  key?: EncryptionKey
  /** 'deflate' (default) compresses envelopes worth it; 'none' writes them as they are (both read both). */
  compression?: 'deflate' | 'none'
  /** The platform's deflate (see worker/platform). */
  compressor: Compressor
  /** The platform's AES-GCM on data keys (default WebCrypto's; see seal.ts). */
  cipher?: Cipher
  /** Opened read-only: a store with no key record gets none written. */
  readOnly?: boolean
  /** A store-wide lock held while the first key record is made (two first opens at once). */
  lock?: RecordLock
  /** What KEY_REJECTED tells the caller to do, in its own terms (default: openStore's `encryption: { key }`). */
  advice?: KeyAdvice
}

/**
 * `inner` with the record codec on it. KEY_REJECTED (and `inner` closed) when the key does not
 * fit the store; nothing but the key record is read before that.
 */
export async function openSealed(inner: StorageAdapter, options: CodecOptions): Promise<SealedStorage> {
  try {
    const keyring = await Keyring.open(inner, options.key, options.readOnly, options.lock, options.advice)
    const codec = new EnvelopeCodec(
      keyring.storeId,
      keyring.dataKeys,
      options.compression === 'none' ? undefined : options.compressor,
      options.compressor,
      options.cipher,
    )
    const storage = sealedStorage(inner, keyring, codec)
    // While the store opens: the first read of a session would otherwise pay for the first use
    // of the data key and of the codec's read path (in Chromium, about 1 ms of a 7 ms cold observe).
    await storage.warmUp()
    return storage
  } catch (err) {
    await inner.close().catch(() => {})
    throw err
  }
}
