// The part of Node's Buffer that the file adapter uses, for browsers (the OPFS adapter): a
// Uint8Array with Node's names. Encodings: utf8, latin1 and hex. Nothing here runs on Node,
// where host.ts hands out Node's own Buffer; test/adapters/bytes.test.ts holds the two alike.
type Encoding = 'utf8' | 'utf-8' | 'latin1' | 'hex'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A Buffer's bytes: a Uint8Array with Node's methods (its views, subarray's, are Bytes too). */
class Bytes extends Uint8Array {
  readUInt32LE(offset = 0): number {
    if (offset < 0 || offset + 4 > this.length) throw new RangeError(`offset ${offset} is out of range`)
    return new DataView(this.buffer, this.byteOffset, this.byteLength).getUint32(offset, true)
  }

  writeUInt32LE(value: number, offset = 0): number {
    if (offset < 0 || offset + 4 > this.length) throw new RangeError(`offset ${offset} is out of range`)
    new DataView(this.buffer, this.byteOffset, this.byteLength).setUint32(offset, value >>> 0, true)
    return offset + 4
  }

  readDoubleLE(offset = 0): number {
    if (offset < 0 || offset + 8 > this.length) throw new RangeError(`offset ${offset} is out of range`)
    return new DataView(this.buffer, this.byteOffset, this.byteLength).getFloat64(offset, true)
  }

  writeDoubleLE(value: number, offset = 0): number {
    if (offset < 0 || offset + 8 > this.length) throw new RangeError(`offset ${offset} is out of range`)
    new DataView(this.buffer, this.byteOffset, this.byteLength).setFloat64(offset, value, true)
    return offset + 8
  }

  /** `text` written at `offset`, up to `length` bytes (whole characters only); the bytes written. */
  write(text: string, offset = 0, length = this.length - offset, encoding: Encoding = 'utf8'): number {
    const into = this.subarray(offset, offset + length)
    if (encoding === 'utf8' || encoding === 'utf-8') return encoder.encodeInto(text, into).written
    const bytes = fromString(text, encoding)
    const n = Math.min(bytes.length, into.length)
    into.set(bytes.subarray(0, n))
    return n
  }

  override toString(encoding: Encoding = 'utf8', start = 0, end = this.length): string {
    const part = this.subarray(Math.max(0, start), Math.min(this.length, end))
    if (encoding === 'utf8' || encoding === 'utf-8') return decoder.decode(part)
    let out = ''
    if (encoding === 'hex') for (const x of part) out += x.toString(16).padStart(2, '0')
    else for (let i = 0; i < part.length; i += 8192) out += String.fromCharCode(...part.subarray(i, i + 8192))
    return out
  }

  copy(target: Uint8Array, targetStart = 0, sourceStart = 0, sourceEnd = this.length): number {
    const part = this.subarray(sourceStart, Math.min(sourceEnd, sourceStart + target.length - targetStart))
    target.set(part, targetStart)
    return part.length
  }

  equals(other: Uint8Array): boolean {
    if (other.length !== this.length) return false
    for (let i = 0; i < this.length; i++) if (this[i] !== other[i]) return false
    return true
  }
}

function alloc(size: number, fill = 0): Bytes {
  const b = new Bytes(size)
  if (fill !== 0) b.fill(fill)
  return b
}

function allocUnsafe(size: number): Bytes {
  return new Bytes(size)
}

function from(value: string | ArrayBufferLike | ArrayLike<number>, encodingOrOffset?: Encoding | number, length?: number): Bytes {
  if (typeof value === 'string') return fromString(value, (encodingOrOffset as Encoding | undefined) ?? 'utf8')
  if (value instanceof ArrayBuffer) return new Bytes(value, (encodingOrOffset as number | undefined) ?? 0, length)
  const b = new Bytes((value as ArrayLike<number>).length)
  b.set(value as ArrayLike<number>)
  return b
}

function fromString(text: string, encoding: Encoding): Bytes {
  if (encoding === 'hex') {
    const b = new Bytes(text.length >>> 1)
    for (let i = 0; i < b.length; i++) b[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16)
    return b
  }
  if (encoding === 'latin1') {
    const b = new Bytes(text.length)
    for (let i = 0; i < text.length; i++) b[i] = text.charCodeAt(i)
    return b
  }
  const bytes = encoder.encode(text)
  return new Bytes(bytes.buffer, bytes.byteOffset, bytes.length)
}

function byteLength(text: string): number {
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4
      i++
    } else n += 3 // a lone surrogate is written as U+FFFD, 3 bytes, as Node does
  }
  return n
}

function concat(list: readonly Uint8Array[], total?: number): Bytes {
  const size = total ?? list.reduce((n, b) => n + b.length, 0)
  const out = new Bytes(size)
  let at = 0
  for (const b of list) {
    if (at >= size) break
    out.set(b.subarray(0, size - at), at)
    at += Math.min(b.length, size - at)
  }
  return out
}

function isBuffer(value: unknown): value is Bytes {
  return value instanceof Bytes
}

/** Node's Buffer, as far as the adapter uses it. */
export const BrowserBuffer = Object.assign(Bytes, { alloc, allocUnsafe, from, byteLength, concat, isBuffer })
