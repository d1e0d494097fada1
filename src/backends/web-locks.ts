// Writer locks shared by every tab and worker of an origin, through the Web Locks API: a lock
// is held by the context that asked for it and freed by the browser when that tab or worker
// closes or crashes, so no lock outlives its writer.
import type { SessionId } from '../core/model'
import { locked, type WriterLocks } from '../storage/locks'

export function createWebLocks(store: string): WriterLocks {
  const locks = (globalThis.navigator as Navigator & { locks: LockManager }).locks
  const key = (id: SessionId) => `sessionfold:${store}:${id}`
  return {
    acquire(id) {
      return new Promise((resolve, reject) => {
        let release!: () => void
        const held = new Promise<void>((r) => (release = r))
        locks
          .request(key(id), { ifAvailable: true }, async (lock) => {
            if (!lock) {
              reject(locked(id))
              return
            }
            resolve(async () => release())
            await held // the lock is ours until released (or until this context ends)
          })
          .catch(reject)
      })
    },
    async isHeld(id) {
      const { held = [] } = await locks.query()
      return held.some((l) => l.name === key(id))
    },
  }
}
