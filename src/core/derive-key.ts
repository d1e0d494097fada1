// deriveKey: an encryption key for openStore({ encryption: { key } }) from a passphrase. The
// work (derive-key-pbkdf2.ts) is loaded on the first call: the client entry stays small.

/**
 * A key from a passphrase: PBKDF2-SHA-256 (600,000 iterations by default) into an AES-256-GCM
 * key, through WebCrypto. Keep `salt` (16 random bytes, not secret) beside the store; the same
 * passphrase and salt give the same key. INVALID_ARGUMENT for an empty passphrase, a salt of
 * fewer than 8 bytes, or fewer than 1,000 iterations.
 */
export async function deriveKey(passphrase: string, salt: Uint8Array, options: { iterations?: number } = {}): Promise<CryptoKey> {
  const { pbkdf2Key } = await import('./derive-key-pbkdf2')
  return pbkdf2Key(passphrase, salt, options)
}
