// Durable Streams requests that cross a worker together (EngineApi.streamMany): each answered as
// soon as it is ready, the answers ready in one task of the event loop pushed in one message. A
// server's many small requests (50 producers appending at once) then cost a message each way
// for the requests and answers of a task, not one each: the messages and their structured
// clones were about a sixth of such a server's CPU.
import { SessionfoldError, toWireError } from '../core/errors'
import { nextTask } from '../core/next-task'
import type { Push, StreamReply } from '../core/protocol'
import type { StreamAnswer, StreamRequest } from '../core/streams'

export class StreamReplies {
  #ready: StreamReply[] = []
  #flushing = false

  constructor(private readonly post: (push: Push) => void) {}

  /**
   * Answers each of `requests` (numbered by the client) with `run`, pushing the answers as they
   * are ready; resolves once every one was pushed, so the call's own answer comes after them on
   * the channel (one channel keeps one order: protocol.ts).
   */
  async run(requests: unknown, run: (request: StreamRequest) => Promise<StreamAnswer>): Promise<void> {
    if (!Array.isArray(requests) || !requests.every((r) => Array.isArray(r) && typeof r[0] === 'number' && typeof r[1] === 'object' && r[1] !== null))
      throw new SessionfoldError('INVALID_ARGUMENT', 'streamMany takes a list of [number, request]')
    await Promise.all(
      (requests as [number, StreamRequest][]).map(async ([n, request]) => {
        let reply: StreamReply
        try {
          reply = [n, await run(request)]
        } catch (err) {
          reply = [n, null, toWireError(err)]
        }
        this.#ready.push(reply)
        if (!this.#flushing) {
          this.#flushing = true
          nextTask(() => this.#flush())
        }
      }),
    )
    this.#flush()
  }

  #flush(): void {
    this.#flushing = false
    if (this.#ready.length === 0) return
    const answers = this.#ready
    this.#ready = []
    this.post({ kind: 'streams', answers })
  }
}
