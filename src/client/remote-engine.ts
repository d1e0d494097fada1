// What the two worker connectors (Node, browsers) share: the engine's API over comlink (its
// type the host's own), loaded only once a store starts a worker, the host's pushes on the same
// port, and the death watch of that worker.
import type { Endpoint, Remote } from 'comlink'
import { SessionfoldError } from '../core/errors'
import { PUSH_MESSAGE, type Push, type PushMessage } from '../core/protocol'
import type { EngineApi, EngineHost } from '../host/host'

export interface RemoteEngine {
  api: EngineApi
  /** The host's pushes: plain messages on the same port as its answers (see PushMessage), which comlink ignores. */
  onPush(listener: (push: Push) => void): void
  /** Ends comlink's side of the link (before the worker is ended). */
  release(): void
}

/** Loads comlink and returns how to wrap a worker's endpoint. */
export async function loadComlink(): Promise<(endpoint: Endpoint) => RemoteEngine> {
  const [{ wrap, releaseProxy }, { registerErrorTransfer }] = await Promise.all([import('comlink'), import('../core/transfer')])
  registerErrorTransfer()
  return (endpoint) => {
    const remote: Remote<EngineHost> = wrap<EngineHost>(endpoint)
    return {
      api: remote,
      onPush(listener) {
        endpoint.addEventListener('message', ((event: MessageEvent) => {
          const data = event.data as Partial<PushMessage> | null
          if (data?.type === PUSH_MESSAGE && data.push !== undefined) listener(data.push)
        }) as EventListener)
      },
      release: () => (remote as unknown as Record<symbol, () => void>)[releaseProxy]!(),
    }
  }
}

/** A worker's death: WORKER_TERMINATED once it stops, unless it was ended on purpose first. */
export class WorkerDeath {
  #ended = false
  #resolve: (err: SessionfoldError) => void = () => {}
  readonly died = new Promise<SessionfoldError>((resolve) => (this.#resolve = resolve))

  /** The worker is ending on purpose: its going is no death. */
  ending(): void {
    this.#ended = true
  }

  dead(why: string): void {
    if (!this.#ended) this.#resolve(new SessionfoldError('WORKER_TERMINATED', `the sessionfold worker ${why}`))
  }
}
