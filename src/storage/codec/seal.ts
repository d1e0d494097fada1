// The stored envelope's codec: compress, then encrypt (AES-256-GCM: WebCrypto, or the platform's), and the reverse.
// A sealed envelope is `[flags][key generation][12-byte nonce, when encrypted][payload]`; the first
// two bytes and the nonce are bound into the authentication with the caller's associated data
// (the store, the session, the position), so an envelope moved anywhere else fails to open.

/** The platform's deflate (raw): `node:zlib` in Node, `CompressionStream` in browsers. */
export interface Compressor {
  deflate(bytes: Uint8Array): Uint8Array | Promise<Uint8Array>
  inflate(bytes: Uint8Array): Uint8Array | Promise<Uint8Array>
}

/**
 * AES-256-GCM on a data key, the tag after the ciphertext (WebCrypto's layout): WebCrypto by
 * default; Node's platform gives node:crypto's, on the calling thread with the same keys and
 * bytes (WebCrypto in Node runs every call as a job on the thread pool, about 0.1 ms each).
 * `decrypt` throws when the envelope does not authenticate.
 */
export interface Cipher {
  encrypt(key: CryptoKey, iv: Uint8Array, aad: Uint8Array, plain: Uint8Array): Uint8Array | Promise<Uint8Array>
  decrypt(key: CryptoKey, iv: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array | Promise<Uint8Array>
}

/** The Cipher of WebCrypto (globalThis.crypto.subtle), in browsers and Node alike. */
export const webCipher: Cipher = {
  encrypt: async (key, iv, aad, plain) =>
    new Uint8Array(
      await globalThis.crypto.subtle.encrypt(
        { name: 'AES-GCM', iv: iv as Uint8Array<ArrayBuffer>, additionalData: aad as Uint8Array<ArrayBuffer> },
        key,
        plain as Uint8Array<ArrayBuffer>,
      ),
    ),
  decrypt: async (key, iv, aad, sealed) =>
    new Uint8Array(
      await globalThis.crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: iv as Uint8Array<ArrayBuffer>, additionalData: aad as Uint8Array<ArrayBuffer> },
        key,
        sealed as Uint8Array<ArrayBuffer>,
      ),
    ),
}

/** The data keys of an encrypted store: the one new envelopes use, and every one envelopes may carry. */
export interface DataKeys {
  readonly current: { gen: number; key: CryptoKey }
  get(gen: number): CryptoKey | undefined
  /** Reads the store's keys again (an envelope of a generation not known here); KEY_REJECTED when they no longer open. */
  refresh?(): Promise<void>
}

/** Envelopes at least this large are compressed (when compression is on and it saves bytes). */
export const COMPRESS_FROM = 512

const FORMAT = 0x10
const COMPRESSED = 0x01
const ENCRYPTED = 0x02
const NONCE = 12

/** An envelope that does not open: its reason, for a CORRUPT_LOG message. */
export class Unreadable extends Error {}

const encoder = new TextEncoder()

export class EnvelopeCodec {
  /**
   * `storeId` binds every envelope to this store; `keys` undefined: not encrypted; `compressor`
   * undefined: compression 'none' (compressed envelopes already stored still open).
   */
  constructor(
    readonly storeId: string,
    public keys: DataKeys | undefined,
    readonly compressor: Compressor | undefined,
    private readonly inflater: Compressor,
    private readonly cipher: Cipher = webCipher,
  ) {}

  get encrypted(): boolean {
    return this.keys !== undefined
  }

  /** True when `plain` of this size is worth an envelope even in a store that is not encrypted. */
  compresses(size: number): boolean {
    return this.compressor !== undefined && size >= COMPRESS_FROM
  }

  async seal(aad: string, plain: Uint8Array): Promise<Uint8Array> {
    let flags = FORMAT
    let payload = plain
    if (this.compresses(plain.length)) {
      const z = await this.compressor!.deflate(plain)
      if (z.length < plain.length) {
        payload = z
        flags |= COMPRESSED
      }
    }
    const keys = this.keys
    if (!keys) {
      const out = new Uint8Array(2 + payload.length)
      out[0] = flags
      out.set(payload, 2)
      return out
    }
    return this.#encrypt(flags | ENCRYPTED, keys.current, aad, payload)
  }

  /** The plain bytes of an envelope sealed with `aad`; Unreadable when it does not open. */
  async open(aad: string, envelope: Uint8Array): Promise<Uint8Array> {
    const flags = envelope[0] ?? 0
    if ((flags & 0xf0) !== FORMAT || envelope.length < 2) throw new Unreadable('not an envelope of a known format')
    const encrypted = (flags & ENCRYPTED) !== 0
    if (this.keys && !encrypted) throw new Unreadable('an envelope that is not encrypted, in an encrypted store')
    let payload: Uint8Array
    if (encrypted) {
      payload = await this.#decrypt(aad, envelope)
    } else {
      payload = envelope.subarray(2)
    }
    if ((flags & COMPRESSED) === 0) return payload
    try {
      return await this.inflater.inflate(payload)
    } catch {
      throw new Unreadable('a compressed envelope that does not inflate')
    }
  }

  /**
   * `envelope` (sealed with `aad`) under the current data key, with a fresh nonce: its payload as
   * it was (not compressed again), so it keeps its length. Undefined when it is under the
   * current key already, or the store is not encrypted. Unreadable when it does not open.
   */
  async reseal(aad: string, envelope: Uint8Array): Promise<Uint8Array | undefined> {
    const current = this.keys?.current
    if (!current) return undefined
    const flags = envelope[0] ?? 0
    if ((flags & 0xf0) !== FORMAT || (flags & ENCRYPTED) === 0) throw new Unreadable('not an encrypted envelope of a known format')
    if (envelope[1] === current.gen) return undefined
    const out = await this.#encrypt(flags, current, aad, await this.#decrypt(aad, envelope))
    if (out.length !== envelope.length) throw new Unreadable('an envelope that did not seal to its length')
    return out
  }

  /** `[flags][key generation][fresh nonce][payload encrypted under `key`, its tag]`, bound to `aad`. */
  async #encrypt(flags: number, key: { gen: number; key: CryptoKey }, aad: string, payload: Uint8Array): Promise<Uint8Array> {
    const head = new Uint8Array(2 + NONCE)
    head[0] = flags
    head[1] = key.gen
    globalThis.crypto.getRandomValues(head.subarray(2))
    const cipher = await this.cipher.encrypt(key.key, head.subarray(2), this.#aad(head.subarray(0, 2), aad), payload)
    const out = new Uint8Array(head.length + cipher.length)
    out.set(head)
    out.set(cipher, head.length)
    return out
  }

  /** The payload of an encrypted envelope (its key found by its generation); Unreadable when it does not open. */
  async #decrypt(aad: string, envelope: Uint8Array): Promise<Uint8Array> {
    if (!this.keys) throw new Unreadable('an encrypted envelope, in a store opened without a key')
    let key = this.keys.get(envelope[1]!)
    if (!key && this.keys.refresh) {
      // Another process rotated the key: its new data key is in the record.
      await this.keys.refresh()
      key = this.keys.get(envelope[1]!)
    }
    if (!key || envelope.length < 2 + NONCE + 16)
      throw new Unreadable(key ? 'an envelope cut short' : `an envelope of an unknown key generation ${envelope[1]}`)
    try {
      return await this.cipher.decrypt(key, envelope.subarray(2, 2 + NONCE), this.#aad(envelope.subarray(0, 2), aad), envelope.subarray(2 + NONCE))
    } catch {
      throw new Unreadable('an envelope that fails authentication (changed, moved, or sealed with another key)')
    }
  }

  #aad(head: Uint8Array, aad: string): Uint8Array<ArrayBuffer> {
    const text = encoder.encode(`sessionfold/1 ${this.storeId} ${aad}`)
    const out = new Uint8Array(head.length + text.length)
    out.set(head)
    out.set(text, head.length)
    return out
  }
}
