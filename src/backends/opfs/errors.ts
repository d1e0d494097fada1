// Failures of the origin's file system in Node's words: the file adapter reads `code`
// (ENOENT, EEXIST, ENOTEMPTY, ENOSPC…), as Node's fs gives it.

/** A Node-style error: what the adapter reads is `code`. */
export function fsError(code: string, message: string, cause?: unknown): Error & { code: string } {
  return Object.assign(new Error(`${code}: ${message}`, { cause }), { code })
}

/** A DOMException of the file system API as Node's code. */
export function codeOf(err: unknown): string | undefined {
  switch ((err as { name?: string } | null)?.name) {
    case 'NotFoundError':
      return 'ENOENT'
    case 'TypeMismatchError':
      return 'ENOTDIR'
    case 'QuotaExceededError':
      return 'ENOSPC'
    case 'NoModificationAllowedError':
      return 'EBUSY'
    case 'InvalidModificationError':
      return 'ENOTEMPTY'
    case 'InvalidStateError':
      return 'EBADF'
    default:
      return undefined
  }
}

export const wrap = (err: unknown, what: string): unknown => {
  const code = codeOf(err)
  // A DOMException has a numeric code of its own (8 for NotFoundError): Node's are strings.
  return code && typeof (err as { code?: unknown }).code !== 'string' ? fsError(code, `${what}: ${(err as Error).message}`, err) : err
}
