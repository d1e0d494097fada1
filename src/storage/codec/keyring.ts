// The store's key record (meta `sessionfold-codec`): whether the store is encrypted, its
// identity (bound into every envelope), and its data keys, each wrapped (AES-GCM) under the key
// the app holds. The app's key never encrypts data itself: rotating it re-wraps the data keys
// and replaces this one record, which the adapter does atomically, so a crash leaves the old
// record or the new one, and the store opens with the old key or the new one, whole.
import { SessionfoldError } from '../../core/errors'
import type { StorageAdapter } from '../types'
import { fromBase64, toBase64 } from './base64'
import type { DataKeys } from './seal'

export const CODEC_META_KEY = 'sessionfold-codec'

/** An app's key: 32 raw bytes, or an AES-GCM CryptoKey (256 bits) allowed to encrypt and decrypt. */
export type EncryptionKey = Uint8Array | CryptoKey

interface PlainRecord {
  v: 1
  store: string
  cipher: 'none'
}
interface SealedRecord {
  v: 1
  store: string
  cipher: 'aes-256-gcm'
  current: number
  keys: { gen: number; wrapped: string }[]
  tag: string
}
type CodecRecord = PlainRecord | SealedRecord

const subtle = () => globalThis.crypto.subtle
const rejected = (message: string) => new SessionfoldError('KEY_REJECTED', message)
/**
 * What a KEY_REJECTED message tells the caller to do, in the terms it gives a key in (the
 * CLI's flags and environment, not the API's option).
 */
export interface KeyAdvice {
  /** An encrypted store opened without a key. */
  missing: string
  /** A store created without encryption opened with a key. */
  unwanted: string
}

/** The API's advice: openStore's `encryption: { key }`. */
const API_ADVICE: KeyAdvice = {
  missing: 'open it with its key (encryption: { key })',
  unwanted: 'it cannot be opened with a key (copy it into a new encrypted store with sync)',
}
const unwantedKey = (advice: KeyAdvice) => rejected(`this store was created without encryption: ${advice.unwanted}`)
const rotatedMeanwhile = () => rejected("rotateKey: the store's key was rotated by another process meanwhile: open it again with the new key")
const encoder = new TextEncoder()

function randomHex(bytes: number): string {
  const b = globalThis.crypto.getRandomValues(new Uint8Array(bytes))
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

/** The app's key as a CryptoKey; INVALID_ARGUMENT when it is neither 32 bytes nor an AES-GCM key. */
export async function importKey(key: unknown): Promise<CryptoKey> {
  if (key instanceof Uint8Array) {
    if (key.length !== 32) throw new SessionfoldError('INVALID_ARGUMENT', `encryption.key must be 32 bytes (AES-256), got ${key.length}`)
    return subtle().importKey('raw', new Uint8Array(key), 'AES-GCM', false, ['encrypt', 'decrypt'])
  }
  const k = key as CryptoKey | null
  if (
    k &&
    typeof k === 'object' &&
    (k as { algorithm?: { name?: string } }).algorithm?.name === 'AES-GCM' &&
    typeof (k as { type?: unknown }).type === 'string'
  ) {
    const length = (k.algorithm as { length?: number }).length
    if (length !== 256) throw new SessionfoldError('INVALID_ARGUMENT', `encryption.key must be a 256-bit AES-GCM key, got ${length} bits`)
    if (!k.usages.includes('encrypt') || !k.usages.includes('decrypt'))
      throw new SessionfoldError('INVALID_ARGUMENT', 'encryption.key must be allowed to encrypt and decrypt')
    return k
  }
  throw new SessionfoldError('INVALID_ARGUMENT', 'encryption.key must be 32 bytes (a Uint8Array) or an AES-GCM CryptoKey')
}

async function wrap(kek: CryptoKey, store: string, gen: number, raw: Uint8Array): Promise<string> {
  const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
  const ct = new Uint8Array(
    await subtle().encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(`sessionfold/1 key ${store} ${gen}`) }, kek, raw as Uint8Array<ArrayBuffer>),
  )
  const out = new Uint8Array(12 + ct.length)
  out.set(iv)
  out.set(ct, 12)
  return toBase64(out)
}

async function unwrap(kek: CryptoKey, store: string, gen: number, wrapped: string): Promise<Uint8Array | undefined> {
  const bytes = fromBase64(wrapped)
  if (!bytes || bytes.length < 12 + 16) return undefined
  try {
    const raw = await subtle().decrypt(
      { name: 'AES-GCM', iv: bytes.subarray(0, 12) as Uint8Array<ArrayBuffer>, additionalData: encoder.encode(`sessionfold/1 key ${store} ${gen}`) },
      kek,
      bytes.subarray(12) as Uint8Array<ArrayBuffer>,
    )
    return new Uint8Array(raw)
  } catch {
    return undefined
  }
}

const dataKey = (raw: Uint8Array) => subtle().importKey('raw', raw as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt'])

/** The record's fields as one text, for its tag: which keys it lists, and which one is current. */
const canonical = (r: SealedRecord) => JSON.stringify([r.store, r.current, r.keys.map((k) => [k.gen, k.wrapped])])

/** A tag over the whole record under the app's key: `current` and the list cannot be edited. */
async function tagOf(kek: CryptoKey, r: SealedRecord): Promise<string> {
  const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
  const tag = new Uint8Array(
    await subtle().encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(`sessionfold/1 record ${canonical(r)}`) }, kek, new Uint8Array(0)),
  )
  const out = new Uint8Array(12 + tag.length)
  out.set(iv)
  out.set(tag, 12)
  return toBase64(out)
}

async function tagHolds(kek: CryptoKey, r: SealedRecord): Promise<boolean> {
  const bytes = typeof r.tag === 'string' ? fromBase64(r.tag) : undefined
  if (bytes?.length !== 28) return false
  try {
    await subtle().decrypt(
      { name: 'AES-GCM', iv: bytes.subarray(0, 12) as Uint8Array<ArrayBuffer>, additionalData: encoder.encode(`sessionfold/1 record ${canonical(r)}`) },
      kek,
      bytes.subarray(12) as Uint8Array<ArrayBuffer>,
    )
    return true
  } catch {
    return false
  }
}

function parse(text: string): CodecRecord {
  let r: CodecRecord
  try {
    r = JSON.parse(text) as CodecRecord
  } catch {
    throw new SessionfoldError('CORRUPT_LOG', `the store's key record (${CODEC_META_KEY}) is not JSON`)
  }
  const okStore = typeof r?.store === 'string' && /^[0-9a-f]{32}$/.test(r.store)
  const okKeys =
    r?.cipher === 'none' ||
    (r?.cipher === 'aes-256-gcm' &&
      Array.isArray(r.keys) &&
      r.keys.length > 0 &&
      r.keys.every((k) => Number.isInteger(k?.gen) && k.gen >= 1 && k.gen <= 255 && typeof k.wrapped === 'string') &&
      r.current === Math.max(...r.keys.map((k) => k.gen)) &&
      typeof r.tag === 'string')
  if (r?.v !== 1 || !okStore || !okKeys) throw new SessionfoldError('CORRUPT_LOG', `the store's key record (${CODEC_META_KEY}) is malformed`)
  return r
}

const PLAIN: PlainRecord = { v: 1, store: '0'.repeat(32), cipher: 'none' }

/** Holds a store-wide lock while the first key record is made (two first opens at once). */
export type RecordLock = () => Promise<() => Promise<void>>

/** An opened store's keys: its identity, and (encrypted) its data keys and the app's key. */
export class Keyring {
  /** The record as last read or written here: a rotation checks nobody changed it since. */
  private text: string | undefined
  /** Rotations of this keyring, one at a time. */
  private rotating: Promise<unknown> = Promise.resolve()

  private constructor(
    readonly storeId: string,
    private kek: CryptoKey | undefined,
    private record: CodecRecord,
    private keys: Map<number, CryptoKey>,
    private readonly storage?: StorageAdapter,
  ) {}

  /** undefined: the store is not encrypted. */
  get dataKeys(): DataKeys | undefined {
    if (this.record.cipher === 'none') return undefined
    const ring = this
    return {
      get current() {
        const r = ring.record as SealedRecord
        return { gen: r.current, key: ring.keys.get(r.current)! }
      },
      get: (gen) => this.keys.get(gen),
      refresh: () => this.refresh(),
    }
  }

  /**
   * Reads the store's key record (or, given a key, writes the first one, for a store with no
   * sessions yet, holding `lock` while it does) and checks `key` against it: KEY_REJECTED for a
   * wrong key, a missing key, or a key given for a store created without encryption. Nothing
   * else is read or written before.
   */
  static async open(storage: StorageAdapter, key: EncryptionKey | undefined, readOnly = false, lock?: RecordLock, advice = API_ADVICE): Promise<Keyring> {
    const kek = key === undefined ? undefined : await importKey(key)
    if (!storage.getMeta || !storage.putMeta) {
      if (kek) throw new SessionfoldError('INVALID_ARGUMENT', `the ${storage.kind} adapter keeps no meta records, so it cannot hold an encrypted store`)
      return new Keyring(PLAIN.store, undefined, PLAIN, new Map())
    }
    let text = await storage.getMeta(CODEC_META_KEY)
    if (text === undefined) {
      // No key record: a plain store (one made without a key writes none, so opening it writes
      // nothing), unless it is still empty and a key is given: then it becomes encrypted now.
      if (!kek) return new Keyring(PLAIN.store, undefined, PLAIN, new Map())
      // A plain store that holds sessions refuses the key before anything is taken or written
      // (the lock too: lock files are writes).
      if ((await storage.listIds({ limit: 1 })).length > 0) throw unwantedKey(advice)
      const release = readOnly ? undefined : await lock?.()
      try {
        text = await storage.getMeta(CODEC_META_KEY) // made meanwhile, by whoever held the lock
        if (text === undefined) {
          if ((await storage.listIds({ limit: 1 })).length > 0) throw unwantedKey(advice)
          const store = randomHex(16)
          const raw = globalThis.crypto.getRandomValues(new Uint8Array(32))
          const made: SealedRecord = { v: 1, store, cipher: 'aes-256-gcm', current: 1, keys: [{ gen: 1, wrapped: await wrap(kek, store, 1, raw) }], tag: '' }
          made.tag = await tagOf(kek, made)
          text = JSON.stringify(made)
          if (!readOnly) {
            await storage.putMeta(CODEC_META_KEY, text)
            text = (await storage.getMeta(CODEC_META_KEY)) ?? text
          }
        }
      } finally {
        await release?.()
      }
    }
    const ring = await Keyring.#from(parse(text), kek, storage, advice)
    ring.text = text
    return ring
  }

  static async #from(record: CodecRecord, kek: CryptoKey | undefined, storage?: StorageAdapter, advice = API_ADVICE): Promise<Keyring> {
    if (record.cipher === 'none') {
      if (kek) throw unwantedKey(advice)
      return new Keyring(record.store, undefined, record, new Map(), storage)
    }
    if (!kek) throw rejected(`this store is encrypted: ${advice.missing}`)
    const wrong = () => rejected('the key does not open this store (a wrong key, or a wrong passphrase or salt)')
    if (!(await tagHolds(kek, record))) throw wrong()
    const keys = new Map<number, CryptoKey>()
    for (const k of record.keys) {
      const bytes = await unwrap(kek, record.store, k.gen, k.wrapped)
      if (bytes?.length !== 32) throw wrong()
      keys.set(k.gen, await dataKey(bytes))
      bytes.fill(0)
    }
    return new Keyring(record.store, kek, record, keys, storage)
  }

  /** KEY_REJECTED unless `key` is this store's key (a second tab on a SharedWorker's engine). */
  async check(key: EncryptionKey | undefined): Promise<void> {
    const kek = key === undefined ? undefined : await importKey(key)
    await Keyring.#from(this.record, kek)
  }

  /**
   * Reads the key record again (an envelope of a key generation not known here: another process
   * rotated the key). KEY_REJECTED when the key this store was opened with no longer opens it.
   */
  async refresh(): Promise<void> {
    const text = await this.storage?.getMeta?.(CODEC_META_KEY)
    if (text === undefined || text === this.text) return
    let next: Keyring
    try {
      next = await Keyring.#from(parse(text), this.kek, this.storage)
    } catch {
      throw rejected("the store's key was rotated by another process: open it again with the new key")
    }
    this.record = next.record
    this.keys = next.keys
    this.text = text
  }

  /**
   * Replaces the app's key: every data key is wrapped under `newKey` and a fresh data key is
   * made for envelopes written from now on, in one atomic write of the key record (first checked
   * unchanged since it was read here: KEY_REJECTED when another process rotated it). After
   * it, the old key opens nothing. Resolves with the generation of the data key now current:
   * the caller re-encrypts every envelope under it, then drops the others (`dropOldKeys`).
   * `newKey` being the key the store already has (a rotation a crash interrupted, run again)
   * writes nothing and makes no data key: the caller completes that rotation.
   */
  rotate(storage: StorageAdapter, newKey: EncryptionKey): Promise<number> {
    return this.#serial(() => this.#rotate(storage, newKey))
  }

  /**
   * Drops every data key but generation `gen` (the current one) from the record, in one more
   * atomic, tagged write checked like a rotation's (KEY_REJECTED when the record changed since
   * it was read here, or `gen` is no longer current: another rotation ran meanwhile). The
   * caller has re-encrypted every envelope under `gen`.
   */
  dropOldKeys(storage: StorageAdapter, gen: number): Promise<void> {
    return this.#serial(async () => {
      const record = this.record
      if (record.cipher === 'none' || !this.kek) throw new SessionfoldError('INVALID_ARGUMENT', 'rotateKey: this store is not encrypted')
      if (record.current !== gen) throw rotatedMeanwhile()
      if ((await storage.getMeta!(CODEC_META_KEY)) !== this.text) throw rotatedMeanwhile()
      if (record.keys.length === 1) return
      const next: SealedRecord = { ...record, keys: record.keys.filter((k) => k.gen === gen), tag: '' }
      next.tag = await tagOf(this.kek, next)
      const text = JSON.stringify(next)
      await storage.putMeta!(CODEC_META_KEY, text)
      this.record = next
      this.text = text
      this.keys = new Map([[gen, this.keys.get(gen)!]])
    })
  }

  /** `fn` after every rotation and drop of this keyring before it (one at a time). */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.rotating.then(fn)
    this.rotating = run.catch(() => {})
    return run
  }

  async #rotate(storage: StorageAdapter, newKey: EncryptionKey): Promise<number> {
    const record = this.record
    if (record.cipher === 'none' || !this.kek) throw new SessionfoldError('INVALID_ARGUMENT', 'rotateKey: this store is not encrypted')
    const kek = await importKey(newKey)
    if ((await storage.getMeta!(CODEC_META_KEY)) !== this.text) throw rotatedMeanwhile()
    // The record's tag holds under `newKey`: it is the store's key already (a rotation run again).
    if (await tagHolds(kek, record)) return record.current
    const gen = record.current + 1
    if (gen > 255) throw new SessionfoldError('INVALID_ARGUMENT', 'rotateKey: this store has had 255 data keys; copy it into a new store with sync')
    const raw = globalThis.crypto.getRandomValues(new Uint8Array(32))
    const keys: SealedRecord['keys'] = []
    for (const k of record.keys) {
      const bytes = await unwrap(this.kek, record.store, k.gen, k.wrapped)
      if (!bytes) throw rejected("rotateKey: the key record no longer opens with this store's key")
      keys.push({ gen: k.gen, wrapped: await wrap(kek, this.storeId, k.gen, bytes) })
      bytes.fill(0)
    }
    keys.push({ gen, wrapped: await wrap(kek, this.storeId, gen, raw) })
    const next: SealedRecord = { v: 1, store: this.storeId, cipher: 'aes-256-gcm', current: gen, keys, tag: '' }
    next.tag = await tagOf(kek, next)
    const key = await dataKey(raw)
    raw.fill(0)
    const text = JSON.stringify(next)
    await storage.putMeta!(CODEC_META_KEY, text)
    this.record = next
    this.kek = kek
    this.text = text
    this.keys = new Map([...this.keys, [gen, key]])
    return gen
  }
}
