// The chain: a witness of a session's whole prefix, so that a change batch that continues a log
// at seq `from` is applied only onto the history it continues (DESIGN §13). The chain value at
// position n stands for events [0, n): the value at 0 is CHAIN_ZERO, and each event's value is
// a hash of the value before it and of the event's stored JSON (seq, type, time and data, as
// `encodeEvent` writes them). Two logs with the same value at n hold the same n events.
//
// The hash is MurmurHash3_x86_128 (seed 0) of the 16 bytes of the value before, followed by
// the UTF-8 bytes of the event's JSON; a value is its 16 bytes (h1..h4, each little-endian) in
// lower-case hex. It is not a cryptographic commitment: it tells histories that parted apart
// (two devices writing at one seq), which is what sync must never splice, not a forger holding
// write access, who could write anything anyway. It is chosen for speed on every platform (no
// async WebCrypto call per event) and is easy to compute in any language.
import type { SessionEvent } from './model'

/** The chain value of the empty prefix. */
export const CHAIN_ZERO = '00000000000000000000000000000000'

const CHAIN_PATTERN = /^[0-9a-f]{32}$/

/** Whether `value` has the shape of a chain value. */
export function isChain(value: unknown): value is string {
  return typeof value === 'string' && CHAIN_PATTERN.test(value)
}

const encoder = new TextEncoder()
/** The bytes hashed for one step: the value before (16 bytes), then the event's JSON. Grown as needed, reused. */
let input = new Uint8Array(4096)
/** The same bytes as 32-bit words, read in whole blocks where the platform is little-endian (every one in use). */
let words = new Int32Array(input.buffer)
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/**
 * A chain value being extended event by event, kept as its four 32-bit words (so a step does
 * not go through hex): `value` is the hex form.
 */
export class ChainState {
  readonly #h = new Int32Array(4)

  constructor(value: string = CHAIN_ZERO) {
    for (let i = 0; i < 4; i++) {
      // Each word's bytes are least significant first in the hex form.
      const at = i * 8
      this.#h[i] =
        parseInt(value.slice(at, at + 2), 16) |
        (parseInt(value.slice(at + 2, at + 4), 16) << 8) |
        (parseInt(value.slice(at + 4, at + 6), 16) << 16) |
        (parseInt(value.slice(at + 6, at + 8), 16) << 24)
    }
  }

  /** Steps over the event whose stored JSON is `json`. */
  push(json: string): this {
    // A UTF-16 unit is at most 3 UTF-8 bytes.
    if (input.length < 16 + json.length * 3) {
      input = new Uint8Array(Math.max(input.length * 2, (16 + json.length * 3 + 3) & ~3))
      words = new Int32Array(input.buffer)
    }
    const h = this.#h
    for (let i = 0; i < 4; i++) {
      input[i * 4] = h[i]! & 0xff
      input[i * 4 + 1] = (h[i]! >>> 8) & 0xff
      input[i * 4 + 2] = (h[i]! >>> 16) & 0xff
      input[i * 4 + 3] = h[i]! >>> 24
    }
    murmur128Into(input, 16 + encoder.encodeInto(json, input.subarray(16)).written, h)
    return this
  }

  get value(): string {
    return hexLe(this.#h[0]!) + hexLe(this.#h[1]!) + hexLe(this.#h[2]!) + hexLe(this.#h[3]!)
  }
}

/** The chain value after the event whose stored JSON is `json`, given the value before it. */
export function chainNext(prev: string, json: string): string {
  return new ChainState(prev).push(json).value
}

/** The chain value after events with these stored JSONs, given the value before the first. */
export function chainOver(prev: string, jsons: Iterable<string>): string {
  const state = new ChainState(prev)
  for (const json of jsons) state.push(json)
  return state.value
}

/**
 * The stored JSON of an event, as `encodeEvent` writes it: what its chain step hashes. Its
 * version `v` is part of it when it has one, as in the record a writer's chain steps over: a
 * chain made from events read back must equal the one made as they were appended.
 */
export function eventJson(event: SessionEvent): string {
  const { seq, type, time, v, data } = event
  return JSON.stringify(v === undefined ? { seq, type, time, data } : { seq, type, time, v, data })
}

const C1 = 0x239b961b
const C2 = 0xab0e9789
const C3 = 0x38b34ae5
const C4 = 0xa1e38b93

const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r))

function fmix(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

const word = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)

/** MurmurHash3_x86_128 of `bytes`, seed 0, as 32 hex characters (h1..h4, each little-endian). */
export function murmur128(bytes: Uint8Array): string {
  const h = new Int32Array(4)
  murmur128Into(bytes, bytes.length, h)
  return hexLe(h[0]!) + hexLe(h[1]!) + hexLe(h[2]!) + hexLe(h[3]!)
}

/** MurmurHash3_x86_128 of `bytes[0, len)`, seed 0, into `out` (h1..h4). */
function murmur128Into(bytes: Uint8Array, len: number, out: Int32Array): void {
  let h1 = 0
  let h2 = 0
  let h3 = 0
  let h4 = 0
  const blocks = len & ~15
  let i = 0
  const aligned = LITTLE_ENDIAN && bytes === input
  for (; i < blocks; i += 16) {
    let k1 = aligned ? words[i >> 2]! : word(bytes, i)
    let k2 = aligned ? words[(i >> 2) + 1]! : word(bytes, i + 4)
    let k3 = aligned ? words[(i >> 2) + 2]! : word(bytes, i + 8)
    let k4 = aligned ? words[(i >> 2) + 3]! : word(bytes, i + 12)
    k1 = Math.imul(rotl(Math.imul(k1, C1), 15), C2)
    h1 ^= k1
    h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0
    k2 = Math.imul(rotl(Math.imul(k2, C2), 16), C3)
    h2 ^= k2
    h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0
    k3 = Math.imul(rotl(Math.imul(k3, C3), 17), C4)
    h3 ^= k3
    h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0
    k4 = Math.imul(rotl(Math.imul(k4, C4), 18), C1)
    h4 ^= k4
    h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0
  }
  // The tail: up to 15 bytes, in four lanes.
  const rest = len & 15
  let k1 = 0
  let k2 = 0
  let k3 = 0
  let k4 = 0
  for (let j = rest - 1; j >= 0; j--) {
    const b = bytes[i + j]!
    if (j >= 12) k4 |= b << ((j - 12) * 8)
    else if (j >= 8) k3 |= b << ((j - 8) * 8)
    else if (j >= 4) k2 |= b << ((j - 4) * 8)
    else k1 |= b << (j * 8)
  }
  if (rest > 12) h4 ^= Math.imul(rotl(Math.imul(k4, C4), 18), C1)
  if (rest > 8) h3 ^= Math.imul(rotl(Math.imul(k3, C3), 17), C4)
  if (rest > 4) h2 ^= Math.imul(rotl(Math.imul(k2, C2), 16), C3)
  if (rest > 0) h1 ^= Math.imul(rotl(Math.imul(k1, C1), 15), C2)
  h1 ^= len
  h2 ^= len
  h3 ^= len
  h4 ^= len
  h1 = (h1 + h2 + h3 + h4) | 0
  h2 = (h2 + h1) | 0
  h3 = (h3 + h1) | 0
  h4 = (h4 + h1) | 0
  h1 = fmix(h1)
  h2 = fmix(h2)
  h3 = fmix(h3)
  h4 = fmix(h4)
  h1 = (h1 + h2 + h3 + h4) | 0
  h2 = (h2 + h1) | 0
  h3 = (h3 + h1) | 0
  h4 = (h4 + h1) | 0
  out[0] = h1
  out[1] = h2
  out[2] = h3
  out[3] = h4
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))

/** A 32-bit value's four bytes, least significant first, in hex. */
function hexLe(h: number): string {
  return HEX[h & 0xff]! + HEX[(h >>> 8) & 0xff]! + HEX[(h >>> 16) & 0xff]! + HEX[h >>> 24]!
}
