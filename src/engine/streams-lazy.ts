// The engine's Durable Streams (streams.ts), given to the engines of Node's entries (the worker
// thread's and the one in the app's thread), loaded at the first request: a browser's worker,
// which serves none, does not carry their code.
import { SessionfoldError } from '../core/errors'
import type { StreamAnswer, StreamRequest } from '../core/streams'
import type { Streams, StreamsHost } from './streams'

export type StreamsRunner = Pick<Streams, 'run' | 'letGo' | 'close'>

/** An engine's streams where it serves none (a browser's worker, which does not carry their code). */
export function noStreams(): StreamsRunner {
  return {
    run: () =>
      Promise.reject(new SessionfoldError('STORAGE_UNAVAILABLE', 'this engine serves no Durable Streams: serve them from Node (createStreamsHandler)')),
    letGo: async () => {},
    close: async () => {},
  }
}

/** Node's: the code loaded at the first request. */
export function lazyStreams(host: StreamsHost): StreamsRunner {
  let loaded: Promise<Streams> | undefined
  return {
    async run(request: StreamRequest): Promise<StreamAnswer> {
      host.open()
      loaded ??= import('./streams').then(({ Streams }) => new Streams(host))
      return (await loaded).run(request)
    },
    // Nothing to let go of before the first request.
    letGo: async (ids) => {
      await (await loaded)?.letGo(ids)
    },
    close: async () => {
      await (await loaded)?.close()
    },
  }
}
