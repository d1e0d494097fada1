// What the file adapter takes from its host, so that the same code runs on Node's files and on a
// browser's Origin Private File System (src/backends/opfs): paths, Buffer, CRC-32, random names
// and a SHA-256. On Node each is Node's own, found through process.getBuiltinModule (no static
// `node:` import, so a browser bundle can hold this code); elsewhere a small equivalent here.
import { BrowserBuffer } from './bytes'

type NodeModules = { 'node:path': typeof import('node:path'); 'node:zlib': typeof import('node:zlib') }
const builtin = (globalThis as { process?: { getBuiltinModule?: <K extends keyof NodeModules>(id: K) => NodeModules[K] | undefined } }).process
  ?.getBuiltinModule
const nodePath = builtin?.('node:path')
const nodeZlib = builtin?.('node:zlib')

/** Node's Buffer, or an equivalent of the part of it the adapter uses (bytes.ts). */
export const Buffer: typeof globalThis.Buffer = globalThis.Buffer ?? (BrowserBuffer as unknown as typeof globalThis.Buffer)
export type Buffer = globalThis.Buffer

type Paths = Pick<typeof import('node:path'), 'join' | 'dirname' | 'relative' | 'sep'>

/** POSIX paths, '/' between names (the OPFS adapter's). */
const posixPaths: Paths = {
  sep: '/',
  join: (...parts: string[]) => normalize(parts.filter((p) => p !== '').join('/')),
  dirname: (p: string) => {
    const at = p.replace(/\/+$/, '').lastIndexOf('/')
    return at < 0 ? '.' : at === 0 ? '/' : p.slice(0, at)
  },
  relative: (from: string, to: string) => {
    const a = normalize(from).split('/')
    const b = normalize(to).split('/')
    let same = 0
    while (same < a.length && same < b.length && a[same] === b[same]) same++
    return [...a.slice(same).map(() => '..'), ...b.slice(same)].join('/')
  },
}

/** Paths: Node's `node:path`; elsewhere POSIX paths. */
export const path: Paths = nodePath ?? posixPaths

/** A POSIX path without empty, '.' and resolvable '..' segments ('.' when nothing is left). */
function normalize(p: string): string {
  const absolute = p.startsWith('/')
  const out: string[] = []
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..' && out.length > 0 && out.at(-1) !== '..') out.pop()
    else if (part !== '..' || !absolute) out.push(part)
  }
  const joined = out.join('/')
  return absolute ? `/${joined}` : joined === '' ? '.' : joined
}

const CRC_TABLE = (() => {
  const table = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c
  }
  return table
})()

function crc32Table(data: Uint8Array, value = 0): number {
  let c = ~value
  for (const x of data) c = (CRC_TABLE[(c ^ x) & 0xff] as number) ^ (c >>> 8)
  return ~c >>> 0
}

/** CRC-32 (IEEE), as zlib's: Node's native one where there is one. */
export const crc32: (data: Uint8Array, value?: number) => number = nodeZlib?.crc32 ?? crc32Table

/** What this file hands out where Node is not there, for tests that hold it to Node's. */
export const portable = { ...posixPaths, crc32: crc32Table }

/** `bytes` random bytes, in hex (names of temp files, lock tokens). */
export function randomHex(bytes: number): string {
  const b = globalThis.crypto.getRandomValues(new Uint8Array(bytes))
  let out = ''
  for (const x of b) out += x.toString(16).padStart(2, '0')
  return out
}

/** SHA-256 of `text`'s UTF-8, in hex (WebCrypto, in Node and browsers alike). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  let out = ''
  for (const x of digest) out += x.toString(16).padStart(2, '0')
  return out
}

export const { join, dirname, relative, sep } = path
