// The Web Locks a host takes for its client: the alive lock (held while this context lives, so
// the client is granted it when the host is gone) and, in a SharedWorker, the tab's own lock
// (granted to the host when its tab dies, so the tab's handles and writer locks go with it).

type Locks = { request: LockManager['request'] }
const webLocks = (): Locks | undefined => (globalThis.navigator as { locks?: Locks } | undefined)?.locks

/** Holds `name` until the returned release is called; undefined without Web Locks. */
export async function holdAliveLock(name: string): Promise<(() => void) | undefined> {
  const locks = webLocks()
  if (!locks) return undefined
  let release: (() => void) | undefined
  // Refused (an opaque origin refuses every lock): the host goes on without, and the client's
  // own request of it is refused alike, so it watches nothing.
  await new Promise<void>((held) => {
    locks
      .request(name, () => {
        held()
        return new Promise<void>((r) => (release = r))
      })
      .catch(() => held())
  })
  return () => release?.()
}

/** Runs `close` once the tab holding `name` is gone. What that close fails of has nobody to tell: the tab is gone. */
export function closeWithTab(name: string, close: () => Promise<void>): void {
  webLocks()
    ?.request(name, () => close())
    .catch(() => {})
}
