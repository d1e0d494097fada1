// What the tabs of an origin share, for the browser's backends: writer locks through the Web
// Locks API (a lock is held by the context that asked for it and freed by the browser when that
// tab or worker closes or crashes, so no lock outlives its writer), and growth notices over a
// BroadcastChannel.
import type { SessionId } from '../core/model'
import { isSessionId } from '../core/limits'
import { createLocalLocks, locked, type WriterLocks } from '../storage/locks'
import type { BackendParts, GrowthChannel } from './platform'

/** The locks and the growth channel of the store `name`, shared by the tabs of this origin. */
export function tabsOf(name: string): Omit<BackendParts, 'storage'> {
  return {
    // Web Locks where there are any (all current browsers): one writer per session across tabs.
    locks: 'locks' in (globalThis.navigator ?? {}) ? createWebLocks(name) : createLocalLocks(),
    ...(typeof BroadcastChannel === 'function' ? { channel: broadcastGrowth(name) } : {}),
  }
}

export function createWebLocks(store: string): WriterLocks {
  const locks = (globalThis.navigator as Navigator & { locks: LockManager }).locks
  const key = (id: SessionId) => `sessionfold:${store}:${id}`
  let query: Promise<LockManagerSnapshot> | undefined
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
      // Asks made at once (a page of the session list, a row each) share one query of the origin's locks.
      const { held = [] } = await (query ??= locks.query().finally(() => (query = undefined)))
      return held.some((l) => l.name === key(id))
    },
  }
}

/**
 * Growth notices over a BroadcastChannel: a tab that appends says so, and tabs following the
 * session read the new events from IndexedDB (the notice carries no data; storage stays the
 * only source of truth, so a lost or forged notice costs at most a read).
 */
function broadcastGrowth(store: string): GrowthChannel {
  const channel = new BroadcastChannel(`sessionfold:${store}`)
  return {
    announce: (sessionId, length) => channel.postMessage({ sessionId, length }),
    listen(onGrow) {
      channel.onmessage = (event: MessageEvent) => {
        const { sessionId: id, length } = (event.data ?? {}) as { sessionId?: unknown; length?: unknown }
        if (isSessionId(id)) onGrow(id, Number.isSafeInteger(length) && (length as number) >= 0 ? (length as number) : undefined)
      }
    },
    close: () => channel.close(),
  }
}
