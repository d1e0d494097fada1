// Base64 for stored blocks: Node's Buffer where there is one (fastest), else a table-driven
// version for browsers. Blocks travel inside JSON strings, and base64 needs no escaping there.
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const DECODE = new Int16Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i

interface NodeBuffer {
  from(data: Uint8Array | string, encoding?: string): Uint8Array & { toString(encoding: string): string }
}
const NodeBuffer = (globalThis as { Buffer?: NodeBuffer }).Buffer

export function toBase64(bytes: Uint8Array): string {
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as unknown as Uint8Array).toString('base64')
  let out = ''
  let chunk: string[] = []
  const n = bytes.length
  for (let i = 0; i < n; i += 3) {
    const a = bytes[i]!,
      b = i + 1 < n ? bytes[i + 1]! : 0,
      c = i + 2 < n ? bytes[i + 2]! : 0
    const t = (a << 16) | (b << 8) | c
    chunk.push(ALPHABET[t >> 18]!, ALPHABET[(t >> 12) & 63]!, i + 1 < n ? ALPHABET[(t >> 6) & 63]! : '=', i + 2 < n ? ALPHABET[t & 63]! : '=')
    if (chunk.length >= 8192) {
      out += chunk.join('')
      chunk = []
    }
  }
  return out + chunk.join('')
}

/** The bytes of `text`, or undefined when it is not base64. */
export function fromBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0
  if (NodeBuffer) {
    // Buffer passes over characters outside the alphabet: a text with any decodes short.
    const b = NodeBuffer.from(text, 'base64')
    return b.byteLength === (text.length / 4) * 3 - pad ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : undefined
  }
  const out = new Uint8Array((text.length / 4) * 3 - pad)
  let o = 0
  for (let i = 0; i < text.length; i += 4) {
    const q = [0, 1, 2, 3].map((k) => (text[i + k] === '=' && i + 4 === text.length && k >= 4 - pad ? 0 : (DECODE[text.charCodeAt(i + k)] ?? -1)))
    if (q.some((v) => v < 0)) return undefined
    const t = (q[0]! << 18) | (q[1]! << 12) | (q[2]! << 6) | q[3]!
    out[o++] = t >> 16
    if (o < out.length) out[o++] = (t >> 8) & 255
    if (o < out.length) out[o++] = t & 255
  }
  return out
}
