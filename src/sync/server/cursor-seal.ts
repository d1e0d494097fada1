// Cursors leave the server sealed: AES-GCM over their JSON, so a client can neither read them
// (a feed cursor names the session it stopped in, which may be another user's) nor forge one.
// A cursor that does not open (another key, tampered, truncated) counts as no cursor: the
// client starts over, which sends it nothing it may not read and nothing twice that it lacks.
import type { ChangeCursor } from '../../core/changes'

export interface CursorSeal {
  seal(cursor: ChangeCursor): Promise<string>
  /** The cursor, or null when `text` is not one this seal made. */
  open(text: string): Promise<ChangeCursor | null>
}

const b64url = (bytes: Uint8Array): string => {
  let bin = ''
  for (const b of bytes) bin += String.fromCharCode(b)
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}
const fromB64url = (text: string): Uint8Array<ArrayBuffer> | undefined => {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  try {
    return Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

/** A seal keyed by `secret` (every server process given the same secret opens the others' cursors), or by a random key. */
export function createCursorSeal(secret: string | Uint8Array | undefined): CursorSeal {
  const subtle = globalThis.crypto.subtle
  const key = (async () => {
    const raw =
      secret === undefined
        ? globalThis.crypto.getRandomValues(new Uint8Array(32))
        : new Uint8Array(await subtle.digest('SHA-256', typeof secret === 'string' ? new TextEncoder().encode(secret) : Uint8Array.from(secret)))
    return subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt'])
  })()
  return {
    async seal(cursor) {
      const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
      const sealed = new Uint8Array(await subtle.encrypt({ name: 'AES-GCM', iv }, await key, new TextEncoder().encode(JSON.stringify(cursor))))
      const out = new Uint8Array(12 + sealed.length)
      out.set(iv)
      out.set(sealed, 12)
      return b64url(out)
    },
    async open(text) {
      const bytes = fromB64url(text)
      if (!bytes || bytes.length < 12 + 16) return null
      try {
        const plain = await subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, 12) }, await key, bytes.subarray(12))
        return JSON.parse(new TextDecoder().decode(plain)) as ChangeCursor
      } catch {
        return null
      }
    },
  }
}
