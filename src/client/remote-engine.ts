// What the two worker connectors (Node, browsers) share: the engine's API over comlink, loaded
// only once a store starts a worker, and the death watch of that worker.
import type { Endpoint, Remote } from 'comlink'
import { SessionfoldError } from '../core/errors'
import { FRAMES_MESSAGE, type EngineApi, type Frame, type FramesMessage, type HostOptions } from '../core/protocol'

export interface RemoteEngine {
  api: EngineApi
  /** Ends comlink's side of the link (before the worker is ended). */
  release(): void
}

/** Loads comlink and returns how to wrap a worker's endpoint. */
export async function loadComlink(): Promise<(endpoint: Endpoint) => RemoteEngine> {
  const [{ wrap, releaseProxy }, { registerErrorTransfer }] = await Promise.all([import('comlink'), import('../core/transfer')])
  registerErrorTransfer()
  return (endpoint) => {
    const remote = wrap<EngineApi>(endpoint)
    return {
      api: framesFrom(endpoint, remote),
      release: () => (remote as unknown as Record<symbol, () => void>)[releaseProxy]!(),
    }
  }
}

/**
 * The remote API, whose `init` keeps its push callback here: the host posts frames as plain
 * messages on the same port as its answers (see FramesMessage), which comlink ignores.
 */
function framesFrom(endpoint: Endpoint, api: Remote<EngineApi>): EngineApi {
  return new Proxy(api, {
    get: (target, prop) => (prop === 'init'
      ? (o: HostOptions, push: (f: Frame[]) => void) => {
        endpoint.addEventListener('message', ((event: MessageEvent) => {
          const data = event.data as Partial<FramesMessage> | null
          if (data?.type === FRAMES_MESSAGE) push(data.frames as Frame[])
        }) as EventListener)
        return target.init(o)
      }
      : (target as unknown as Record<string | symbol, unknown>)[prop]),
  }) as unknown as EngineApi
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
