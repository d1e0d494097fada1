// Contract: §13 a history that continues — the chain value, as any implementation computes it (docs/CONTRACT.md)
// The chain's hash is MurmurHash3_x86_128 (seed 0) of the value before (16 bytes) and the
// event's JSON (UTF-8): checked against the published vector and smhasher's reference code's
// outputs (computed with its C source, and kept here), and the fast path (whole words of the
// shared buffer) against the byte-by-byte one on inputs of every tail length and of every width.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CHAIN_ZERO, ChainState, chainNext, chainOver, eventJson, isChain, murmur128 } from '../../src/core/chain'
import type { SessionEvent } from '../../src/core/model'
import { encodeEvent } from '../../src/core/validate'

const utf8 = (s: string) => new TextEncoder().encode(s)
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
const unhex = (text: string) => Uint8Array.from(text.match(/../g) ?? [], (h) => parseInt(h, 16))

/** Outputs of smhasher's MurmurHash3_x86_128 (seed 0), printed as the 16 bytes it writes on a little-endian machine. */
const REFERENCE: [input: string, hash: string][] = [
  ['', '00000000000000000000000000000000'],
  // The vector usually published as 2f1583c3 ecee2c67 5d7bf66c e5e91d2c (h1..h4).
  ['The quick brown fox jumps over the lazy dog', 'c383152f672ceeec6cf67b5d2c1de9e5'],
]

describe('the chain value', () => {
  it('is MurmurHash3_x86_128, seed 0, of the bytes given', () => {
    for (const [input, hash] of REFERENCE) expect(murmur128(utf8(input))).toBe(hash)
  })

  it('steps over the 16 bytes of the value before and the UTF-8 of the JSON, whatever the tail length or the characters', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: fc.constantFrom('a', 'é', '€', '\u{1F600}', '"', '\\', '\u0000'), maxLength: 70 }), { maxLength: 8 }), (jsons) => {
        let expected = CHAIN_ZERO
        for (const json of jsons) expected = murmur128(new Uint8Array([...unhex(expected), ...utf8(json)]))
        expect(chainOver(CHAIN_ZERO, jsons)).toBe(expected)
        const state = new ChainState()
        for (const json of jsons) state.push(json)
        expect(state.value).toBe(expected)
      }),
      { numRuns: 500 },
    )
  })

  it('resumes from any value, large events included', () => {
    const big = JSON.stringify({ text: `${'x'.repeat(300_000)}é` })
    const value = chainNext(chainNext(CHAIN_ZERO, 'a'), big)
    expect(chainNext(new ChainState(chainNext(CHAIN_ZERO, 'a')).value, big)).toBe(value)
    expect(new ChainState(value).value).toBe(value)
    expect(isChain(value)).toBe(true)
  })

  it('hashes an event as encodeEvent stores it: seq, type, time, its version when it has one, and data, in that order', () => {
    const event: SessionEvent = { data: { b: 1, a: [2] }, time: 5, type: 'msg', seq: 3 } as SessionEvent
    expect(eventJson(event)).toBe('{"seq":3,"type":"msg","time":5,"data":{"b":1,"a":[2]}}')
    // An app's versioned event: its `v` as encodeEvent stores it. Left out, a chain made from
    // events read back differed from the writer's (a false conflict at a sync after an import).
    const versioned = { data: { b: 1 }, v: 2, time: 5, type: 'app/msg', seq: 3 } as SessionEvent
    expect(eventJson(versioned)).toBe('{"seq":3,"type":"app/msg","time":5,"v":2,"data":{"b":1}}')
    expect(eventJson(versioned)).toBe(encodeEvent(versioned, 's').json)
  })

  it('tells apart histories that differ anywhere, and the shape of a value', () => {
    const a = chainOver(CHAIN_ZERO, ['{"seq":0}', '{"seq":1}'])
    expect(chainOver(CHAIN_ZERO, ['{"seq":0}', '{"seq":2}'])).not.toBe(a)
    expect(chainOver(CHAIN_ZERO, ['{"seq":1}', '{"seq":1}'])).not.toBe(a)
    expect(chainOver(CHAIN_ZERO, ['{"seq":0}'])).not.toBe(a)
    for (const bad of ['', 'A'.repeat(32), '0'.repeat(31), '0'.repeat(33), 5, null]) expect(isChain(bad)).toBe(false)
    expect(hex(unhex(a))).toBe(a)
  })
})
