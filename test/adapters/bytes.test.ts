// The browser's Buffer (src/backends/fs/bytes.ts) and the portable paths and CRC-32 of host.ts
// against Node's own: the OPFS adapter runs the file adapter's code on them.
import { posix } from 'node:path'
import { crc32 as nodeCrc32 } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { BrowserBuffer } from '../../src/backends/fs/bytes'
import { portable } from '../../src/backends/fs/host'

const B = BrowserBuffer as unknown as typeof Buffer // as host.ts hands it out
const texts = ['', 'plain', '{"type":"x","data":{"é":"ü€"}}', 'emoji 😀 and a lone \ud800 surrogate', 'ﬃ'.repeat(3000)]

describe('BrowserBuffer does what Node Buffer does, where the file adapter uses it', () => {
  it('byteLength, from, write and toString in utf8, latin1 and hex', () => {
    for (const t of texts) {
      expect(B.byteLength(t)).toBe(Buffer.byteLength(t))
      expect([...B.from(t)]).toEqual([...Buffer.from(t)])
      expect(B.from(t).toString()).toBe(Buffer.from(t).toString())
      expect(`${B.from(t)}`).toBe(`${Buffer.from(t)}`)
      const n = Buffer.byteLength(t)
      const mine = B.alloc(n + 10)
      const node = Buffer.alloc(n + 10)
      expect(mine.write(t, 3, n, 'utf8')).toBe(node.write(t, 3, n, 'utf8'))
      expect([...mine]).toEqual([...node])
      expect(mine.toString('utf8', 3, 3 + n)).toBe(node.toString('utf8', 3, 3 + n))
      // A length cut mid-character writes whole characters only, as Node does.
      expect(B.alloc(5).write(t, 0, 5)).toBe(Buffer.alloc(5).write(t, 0, 5))
    }
    const latin = '\0SF2 \u00ff\u0080 text'
    expect([...B.from(latin, 'latin1')]).toEqual([...Buffer.from(latin, 'latin1')])
    expect(B.from(Buffer.from(latin, 'latin1')).toString('latin1', 1, 9)).toBe(Buffer.from(latin, 'latin1').toString('latin1', 1, 9))
    expect(B.from('00ff10ab', 'hex').toString('hex')).toBe('00ff10ab')
  })

  it('numbers, copies, views, concat and equality', () => {
    const mine = B.alloc(12)
    const node = Buffer.alloc(12)
    for (const [v, at] of [
      [0xffffffff, 0],
      [0x80000001, 4],
      [7, 8],
    ] as const)
      expect(mine.writeUInt32LE(v, at)).toBe(node.writeUInt32LE(v, at))
    expect([...mine]).toEqual([...node])
    for (const at of [0, 4, 8]) expect(mine.readUInt32LE(at)).toBe(node.readUInt32LE(at))
    expect(() => mine.readUInt32LE(9)).toThrow(RangeError)
    const doubles = [B.alloc(16), Buffer.alloc(16)] as const
    for (const b of doubles) expect(b.writeDoubleLE(2 ** 53 - 1, 0) + b.writeDoubleLE(-1.5e-300, 8)).toBe(24)
    expect([...doubles[0]]).toEqual([...doubles[1]])
    expect([doubles[0].readDoubleLE(0), doubles[0].readDoubleLE(8)]).toEqual([2 ** 53 - 1, -1.5e-300])
    const view = mine.subarray(4, 8)
    expect(view).toBeInstanceOf(B)
    expect(view.readUInt32LE(0)).toBe(0x80000001)
    const target = B.alloc(6)
    expect(B.from('abcdef').copy(target, 2, 1, 10)).toBe(Buffer.from('abcdef').copy(Buffer.alloc(6), 2, 1, 10))
    expect(target.toString('latin1')).toBe('\0\0bcde')
    expect(B.concat([B.from('ab'), B.from('cd'), B.from('e')]).toString()).toBe('abcde')
    expect(B.concat([B.from('ab'), B.from('cd')], 3).toString()).toBe('abc')
    expect(B.from('abc').equals(B.from('abc'))).toBe(true)
    expect(B.from('abc').equals(B.from('abd'))).toBe(false)
    const ab = new ArrayBuffer(8)
    const over = B.from(ab, 2, 4)
    over[0] = 9
    expect(new Uint8Array(ab)[2]).toBe(9) // a view, as Node's
    const copied = B.from(new Uint8Array([1, 2]))
    expect([...copied]).toEqual([1, 2])
  })
})

describe("host.ts's portable parts", () => {
  it('paths as POSIX path does', () => {
    const cases: string[][] = [
      ['.sessionfold', 'sessions', 's-a'],
      ['/tmp/x/', 'tmp', 'rec.1'],
      ['a', '', 'b'],
      ['./a/../b', 'c'],
      ['/', 'x'],
    ]
    for (const parts of cases) expect(portable.join(...parts)).toBe(posix.join(...parts))
    for (const p of ['/a/b/c', 'a/b', 'a', '/a', 'a/b/']) expect(portable.dirname(p)).toBe(posix.dirname(p))
    for (const [a, b] of [
      ['root', 'root/index/ar/123'],
      ['/r', '/r'],
      ['r/x', 'r/y/z'],
    ])
      expect(portable.relative(a!, b!)).toBe(posix.relative(a!, b!))
  })

  it('CRC-32 as zlib computes it, chained too', () => {
    for (const t of texts) {
      const bytes = Buffer.from(t)
      expect(portable.crc32(bytes)).toBe(nodeCrc32(bytes))
      expect(portable.crc32(bytes, 12345)).toBe(nodeCrc32(bytes, 12345))
    }
  })
})
