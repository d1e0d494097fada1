// Growth notices for an fs store shared by processes: another process's appends are not
// announced to us, but its log file grows. While a session is followed here (open without a
// writer in this engine), its events.log is watched (fs.watch), with a slow poll behind it
// for file systems where watching misses changes. A notice carries no data: the engine reads
// what is new from the log, so a spurious one costs a stat. Store-wide (the session list), the
// root folder is watched for its change feed (feed.log) growing: every process records its
// writes there before their events.
import { watch, type FSWatcher } from 'node:fs'
import { join } from 'node:path'
import { FEED_FILE, LOG_FILE, sessionDir } from './layout'
import type { GrowthChannel } from '../platform'

/** How often followed sessions are looked at even without a watch event. */
const POLL_MS = 1000

export function fsGrowth(dir: string): GrowthChannel {
  let onGrow: ((sessionId: string) => void) | undefined
  const watched = new Map<string, { count: number; watcher?: FSWatcher }>()
  let timer: ReturnType<typeof setInterval> | undefined
  const feedListeners = new Set<() => void>()
  let feedWatcher: FSWatcher | undefined

  const stopFeed = () => {
    feedWatcher?.close()
    feedWatcher = undefined
  }

  const stopTimer = () => {
    if (timer) clearInterval(timer)
    timer = undefined
  }

  return {
    announce() {}, // the file that grew is the announcement
    listen(fn) {
      onGrow = fn
    },
    watch(sessionId) {
      let entry = watched.get(sessionId)
      if (!entry) {
        const e: { count: number; watcher?: FSWatcher } = { count: 0 }
        const arm = () => {
          try {
            e.watcher = watch(join(sessionDir(dir, sessionId), LOG_FILE), { persistent: false }, (type) => {
              onGrow?.(sessionId)
              if (type !== 'rename' || watched.get(sessionId) !== e) return
              // A new file in its place (rotateKey re-encrypts a log into one): watch that one.
              e.watcher?.close()
              e.watcher = undefined
              arm()
            })
            e.watcher.on('error', () => {
              e.watcher?.close() // deleted, or watching failed: the poll still looks
              e.watcher = undefined
            })
          } catch {
            // no watching here: the poll still looks
          }
        }
        arm()
        watched.set(sessionId, (entry = e))
      }
      entry.count++
      if (!timer) {
        timer = setInterval(() => {
          for (const id of watched.keys()) onGrow?.(id)
        }, POLL_MS)
        ;(timer as { unref?: () => void }).unref?.()
      }
      let stopped = false
      const e = entry
      return () => {
        if (stopped) return
        stopped = true
        if (--e.count > 0) return
        e.watcher?.close()
        if (watched.get(sessionId) === e) watched.delete(sessionId)
        if (watched.size === 0) stopTimer()
      }
    },
    watchFeed(onChange) {
      const listener = () => onChange()
      feedListeners.add(listener)
      if (!feedWatcher) {
        try {
          // The folder, not the file: feed.log is made by the first write, and a watch on the
          // folder hears a file in it written (not those in its subfolders).
          feedWatcher = watch(dir, { persistent: false }, (_type, name) => {
            if (name === null || name === FEED_FILE) for (const f of [...feedListeners]) f()
          })
          feedWatcher.on('error', stopFeed) // the folder gone, or watching failed: the caller's own poll still looks
        } catch {
          // no watching here: the caller's own poll still looks
        }
      }
      return () => {
        if (!feedListeners.delete(listener)) return
        if (feedListeners.size === 0) stopFeed()
      }
    },
    close() {
      stopFeed()
      feedListeners.clear()
      for (const e of watched.values()) e.watcher?.close()
      watched.clear()
      stopTimer()
      onGrow = undefined
    },
  }
}
