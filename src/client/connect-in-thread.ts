// The engine in this thread (worker: false, or where no worker can start): the store calls the
// host directly, with the app's units. Loaded on first use, so a store in a worker never loads
// the engine here.
import type { Platform } from '../backends/platform'
import type { AppDefinitions } from '../host/engine-source'
import type { Push } from '../core/protocol'
import type { Connection } from './connection'
import type { EngineSettings } from '../host/open-engine'

export async function connectInThread(
  app: AppDefinitions,
  platform: () => Promise<Platform>,
  extras: () => Promise<Pick<EngineSettings, 'streams'>> = async () => ({}),
): Promise<Connection> {
  const [{ EngineHost, ownEngine }, { checkedDefinitions }, engineOn, extra] = await Promise.all([
    import('../host/host'),
    import('../core/events'),
    platform(),
    extras(),
  ])
  // The app's event definitions, checked before anything opens (the page's code does not carry these checks).
  checkedDefinitions(app.events ?? [], 'openStore')
  // Pushes reach the store's listener in the host's own turn: before the answer of the call that made them.
  let listener: (push: Push) => void = () => {}
  const host = new EngineHost(app, ownEngine(engineOn, extra), (push) => listener(push))
  // Storage watching here never holds the process open by itself (src/backends/fs/growth.ts):
  // a timer that does nothing does, while a followed view has listeners.
  let holds = 0
  let timer: ReturnType<typeof setInterval> | undefined
  return {
    inThread: true,
    api: host,
    onPush: (l) => void (listener = l),
    died: new Promise(() => {}),
    end: async () => {
      clearInterval(timer)
      timer = undefined
    },
    hold(delta) {
      holds += delta
      if (holds > 0 && !timer) timer = setInterval(() => {}, 2 ** 30)
      else if (holds === 0 && timer) {
        clearInterval(timer)
        timer = undefined
      }
    },
  }
}
