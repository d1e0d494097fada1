// How a worker's host sends its pushes: each one plain message on its port, no reply.
import { PUSH_MESSAGE, type Push, type PushMessage } from '../core/protocol'

/**
 * The host's `post` on a worker's port. Every value in a push passed the engine's JSON checks,
 * yet one can still be refused by the port's structured clone: a Proxy of plain data, which the
 * checks read through. Such a push goes as its JSON copy, the same values, rather than failing
 * the call waiting on it (an append, after its events were written) and leaving the client a
 * frame short.
 */
export function postPushes(port: { postMessage(message: unknown): void }): (push: Push) => void {
  return (push) => {
    const message: PushMessage = { type: PUSH_MESSAGE, push }
    try {
      port.postMessage(message)
    } catch (err) {
      let copy: unknown
      try {
        copy = JSON.parse(JSON.stringify(message))
      } catch {
        throw err
      }
      port.postMessage(copy)
    }
  }
}
