// The key of an encrypted store, for the command line: from the environment variable
// SESSIONFOLD_KEY or from a file (--key-file), never from an argument (arguments show in `ps`
// and in shell history). Either holds the 32 key bytes as 64 hex digits or as base64; a file
// may also hold the 32 raw bytes.
import { readFile } from 'node:fs/promises'
import type { KeyAdvice } from '../storage/codec'
import { SessionfoldError } from '../core/errors'

export const KEY_ENV = 'SESSIONFOLD_KEY'

/** 32 bytes from hex or base64 text; undefined when it is neither. */
function keyFromText(text: string): Uint8Array | undefined {
  const t = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Uint8Array.from(Buffer.from(t, 'hex'))
  if (/^[A-Za-z0-9+/]{43}=$/.test(t)) return Uint8Array.from(Buffer.from(t, 'base64'))
  return undefined
}

/** The key the command was given (file first, then the environment), or undefined for none. */
export async function cliKey(keyFile: string | undefined, env: Record<string, string | undefined> = process.env): Promise<Uint8Array | undefined> {
  if (keyFile !== undefined) {
    let bytes: Buffer
    try {
      bytes = await readFile(keyFile)
    } catch (err) {
      throw new SessionfoldError('INVALID_ARGUMENT', `--key-file ${keyFile} cannot be read: ${(err as Error).message}`)
    }
    const key = bytes.length === 32 ? Uint8Array.from(bytes) : keyFromText(bytes.toString('latin1'))
    if (!key) throw new SessionfoldError('INVALID_ARGUMENT', `--key-file ${keyFile} must hold 32 bytes: raw, as 64 hex digits, or as base64`)
    return key
  }
  const text = env[KEY_ENV]
  if (text === undefined || text === '') return undefined
  const key = keyFromText(text)
  if (!key) throw new SessionfoldError('INVALID_ARGUMENT', `${KEY_ENV} must hold 32 bytes as 64 hex digits or as base64`)
  return key
}

/** What KEY_REJECTED tells a command line user: the flag and the variable, not the API's option. */
export function cliAdvice(keyFile: string | undefined): KeyAdvice {
  return {
    missing: `give its key with --key-file <path> or the ${KEY_ENV} environment variable`,
    unwanted: `it is read without a key (${keyFile === undefined ? `unset ${KEY_ENV}` : 'drop --key-file'})`,
  }
}
