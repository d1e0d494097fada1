// deriveKey's work (see derive-key.ts): PBKDF2 through WebCrypto, in browsers and Node alike.
// Loaded when first called, so that apps that never derive a key do not ship it.
import { SessionfoldError } from './errors'

const encoder = new TextEncoder()
const subtle = () => globalThis.crypto.subtle

/** See deriveKey in derive-key.ts. */
export async function pbkdf2Key(passphrase: string, salt: Uint8Array, options: { iterations?: number } = {}): Promise<CryptoKey> {
  if (typeof passphrase !== 'string' || passphrase.length === 0)
    throw new SessionfoldError('INVALID_ARGUMENT', 'deriveKey: the passphrase must be a non-empty string')
  if (!(salt instanceof Uint8Array) || salt.length < 8)
    throw new SessionfoldError('INVALID_ARGUMENT', 'deriveKey: the salt must be at least 8 bytes (16 random bytes are best)')
  const iterations = options.iterations ?? 600_000
  if (!Number.isSafeInteger(iterations) || iterations < 1000)
    throw new SessionfoldError('INVALID_ARGUMENT', 'deriveKey: iterations must be a whole number of at least 1000')
  const base = await subtle().importKey('raw', encoder.encode(passphrase), 'PBKDF2', false, ['deriveKey'])
  return subtle().deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt: new Uint8Array(salt), iterations }, base, { name: 'AES-GCM', length: 256 }, false, [
    'encrypt',
    'decrypt',
  ])
}
