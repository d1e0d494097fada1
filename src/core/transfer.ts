// comlink sends only message, name and stack of a thrown error: the code, session and seq of
// a SessionfoldError would be lost. This handler carries them across, in both directions.
import { transferHandlers, type TransferHandler } from 'comlink'
import { ERROR_CODES, SessionfoldError, type ErrorCode, type WireError } from './errors'

/** A thrown SessionfoldError as comlink sends it: its WireError beside comlink's own mark. */
interface ThrownError {
  isError: true
  sessionfold: WireError & { code: ErrorCode }
}

let registered = false

export function registerErrorTransfer(): void {
  if (registered) return
  registered = true
  const original = transferHandlers.get('throw') as TransferHandler<unknown, unknown>
  const handler: TransferHandler<unknown, unknown> = {
    canHandle: (value): value is unknown => original.canHandle(value),
    serialize(thrown) {
      const value = (thrown as { value?: unknown }).value
      if (value instanceof SessionfoldError) {
        const wire: ThrownError = {
          isError: true,
          sessionfold: { code: value.code, message: value.message, sessionId: value.sessionId, seq: value.seq, stack: value.stack },
        }
        return [wire, []]
      }
      return original.serialize(thrown)
    },
    deserialize(serialized) {
      const s = (serialized as Partial<ThrownError>).sessionfold
      if (s && ERROR_CODES.includes(s.code)) {
        const err = new SessionfoldError(s.code, s.message, { sessionId: s.sessionId, seq: s.seq })
        if (s.stack) err.stack = `${err.stack}\n    --- in the sessionfold worker ---\n${s.stack}`
        throw err
      }
      return original.deserialize(serialized)
    },
  }
  transferHandlers.set('throw', handler)
}
