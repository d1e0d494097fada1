// Base64 of bytes, where Node and browsers both have btoa/atob (Durable Streams' bytes travel as base64).
/** Standard base64 (RFC 4648) of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  let s = ''
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(s)
}

/** The bytes of standard base64 `text`. */
export function fromBase64(text: string): Uint8Array {
  const s = atob(text)
  const out = new Uint8Array(s.length)
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i)
  return out
}
