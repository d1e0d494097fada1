// comlink sends only message, name and stack of a thrown error: the code, session and seq of
// a SessionfoldError would be lost. This handler carries them across, in both directions.
import { transferHandlers, type TransferHandler } from 'comlink'
import { ERROR_CODES, SessionfoldError, type ErrorCode } from './errors'

interface WireError {
  isError: true
  sessionfold: { code: ErrorCode; message: string; sessionId?: string; seq?: number; stack?: string }
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
        const wire: WireError = { isError: true, sessionfold: { code: value.code, message: value.message, sessionId: value.sessionId, seq: value.seq, stack: value.stack } }
        return [wire, []]
      }
      return original.serialize(thrown)
    },
    deserialize(serialized) {
      const s = (serialized as Partial<WireError>).sessionfold
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
