// The stored unit's codec: compress, then encrypt (AES-256-GCM, WebCrypto), and the reverse.
// A sealed unit is `[flags][key generation][12-byte nonce, when encrypted][payload]`; the first
// two bytes and the nonce are bound into the authentication with the caller's associated data
// (the store, the session, the position), so a unit moved anywhere else fails to open.

/** The platform's deflate (raw): `node:zlib` in Node, `CompressionStream` in browsers. */
export interface Compressor {
  deflate(bytes: Uint8Array): Uint8Array | Promise<Uint8Array>
  inflate(bytes: Uint8Array): Uint8Array | Promise<Uint8Array>
}

/** The data keys of an encrypted store: the one new units use, and every one units may carry. */
export interface DataKeys {
  readonly current: { gen: number; key: CryptoKey }
  get(gen: number): CryptoKey | undefined
  /** Reads the store's keys again (a unit of a generation not known here); KEY_REJECTED when they no longer open. */
  refresh?(): Promise<void>
}

/** Units at least this large are compressed (when compression is on and it saves bytes). */
export const COMPRESS_FROM = 512

const FORMAT = 0x10
const COMPRESSED = 0x01
const ENCRYPTED = 0x02
const NONCE = 12

/** A unit that does not open: its reason, for a CORRUPT_LOG message. */
export class Unreadable extends Error {}

const encoder = new TextEncoder()

export class UnitCodec {
  /**
   * `storeId` binds every unit to this store; `keys` undefined: not encrypted; `compressor`
   * undefined: compression 'none' (compressed units already stored still open).
   */
  constructor(
    readonly storeId: string,
    public keys: DataKeys | undefined,
    readonly compressor: Compressor | undefined,
    private readonly inflater: Compressor,
  ) {}

  get encrypted(): boolean {
    return this.keys !== undefined
  }

  /** True when `plain` of this size is worth a unit even in a store that is not encrypted. */
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
    flags |= ENCRYPTED
    const head = new Uint8Array(2 + NONCE)
    head[0] = flags
    head[1] = keys.current.gen
    globalThis.crypto.getRandomValues(head.subarray(2))
    const cipher = new Uint8Array(await globalThis.crypto.subtle.encrypt(
      { name: 'AES-GCM', iv: head.subarray(2), additionalData: this.#aad(head.subarray(0, 2), aad) }, keys.current.key, payload as Uint8Array<ArrayBuffer>,
    ))
    const out = new Uint8Array(head.length + cipher.length)
    out.set(head)
    out.set(cipher, head.length)
    return out
  }

  /** The plain bytes of a unit sealed with `aad`; Unreadable when it does not open. */
  async open(aad: string, unit: Uint8Array): Promise<Uint8Array> {
    const flags = unit[0] ?? 0
    if ((flags & 0xf0) !== FORMAT || unit.length < 2) throw new Unreadable('not a unit of a known format')
    const encrypted = (flags & ENCRYPTED) !== 0
    if (this.keys && !encrypted) throw new Unreadable('a unit that is not encrypted, in an encrypted store')
    let payload: Uint8Array
    if (encrypted) {
      payload = await this.#decrypt(aad, unit)
    } else {
      payload = unit.subarray(2)
    }
    if ((flags & COMPRESSED) === 0) return payload
    try {
      return await this.inflater.inflate(payload)
    } catch {
      throw new Unreadable('a compressed unit that does not inflate')
    }
  }

  /**
   * `unit` (sealed with `aad`) under the current data key, with a fresh nonce: its payload as
   * it was (not compressed again), so it keeps its length. Undefined when it is under the
   * current key already, or the store is not encrypted. Unreadable when it does not open.
   */
  async reseal(aad: string, unit: Uint8Array): Promise<Uint8Array | undefined> {
    const current = this.keys?.current
    if (!current) return undefined
    const flags = unit[0] ?? 0
    if ((flags & 0xf0) !== FORMAT || (flags & ENCRYPTED) === 0) throw new Unreadable('not an encrypted unit of a known format')
    if (unit[1] === current.gen) return undefined
    const payload = await this.#decrypt(aad, unit)
    const out = new Uint8Array(2 + NONCE + payload.length + 16)
    out[0] = flags
    out[1] = current.gen
    globalThis.crypto.getRandomValues(out.subarray(2, 2 + NONCE))
    const cipher = new Uint8Array(await globalThis.crypto.subtle.encrypt(
      { name: 'AES-GCM', iv: out.subarray(2, 2 + NONCE), additionalData: this.#aad(out.subarray(0, 2), aad) }, current.key, payload as Uint8Array<ArrayBuffer>,
    ))
    if (cipher.length !== payload.length + 16) throw new Unreadable('a unit that did not seal to its length')
    out.set(cipher, 2 + NONCE)
    return out
  }

  /** The payload of an encrypted unit (its key found by its generation); Unreadable when it does not open. */
  async #decrypt(aad: string, unit: Uint8Array): Promise<Uint8Array> {
    if (!this.keys) throw new Unreadable('an encrypted unit, in a store opened without a key')
    let key = this.keys.get(unit[1]!)
    if (!key && this.keys.refresh) {
      // Another process rotated the key: its new data key is in the record.
      await this.keys.refresh()
      key = this.keys.get(unit[1]!)
    }
    if (!key || unit.length < 2 + NONCE + 16) throw new Unreadable(key ? 'a unit cut short' : `a unit of an unknown key generation ${unit[1]}`)
    try {
      return new Uint8Array(await globalThis.crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: unit.subarray(2, 2 + NONCE) as Uint8Array<ArrayBuffer>, additionalData: this.#aad(unit.subarray(0, 2), aad) }, key, unit.subarray(2 + NONCE) as Uint8Array<ArrayBuffer>,
      ))
    } catch {
      throw new Unreadable('a unit that fails authentication (changed, moved, or sealed with another key)')
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
