// Building a store of many sessions through the public API, for bench/sessions.ts: in Node (its
// child process, bench/sessions-child.ts) and in Chromium (bench/sessions-browser/page.ts) alike.
// createSession({ title }) `concurrency` at a time, each handle closed; after each chunk a list's
// first page (which runs the session index's pass over the feed first), so the index never lags
// the build by more than a chunk and the store is whole when the build returns. It stops at
// `count` sessions or once `budgetMs` has passed, whichever comes first.
import type { SessionList } from '../../src/client/session-list'

/** What the build needs of a store (the Node and the browser Store alike). */
export interface BuildStore {
  createSession(options: { title: string }): Promise<{ id: string; close(): Promise<void> }>
  sessions(query: { limit: number }): SessionList
}

export interface BuildOptions {
  count: number
  /** Wall-clock ms after which no new chunk starts (the chunk under way and the catch-up finish). */
  budgetMs: number
  /** createSession calls in flight at once. */
  concurrency: number
  /** Sessions per chunk: the index catches up after each. */
  chunk: number
  /** The first sessions' ids are kept (the oldest of the store: the update benchmark appends to them). */
  keepIds: number
  /** Titles are `${titlePrefix} ${n}`. */
  titlePrefix: string
}

export interface BuildResult {
  made: number
  /** ms spent creating (the chunks' createSession and close). */
  createMs: number
  /** ms spent waiting for the index to catch up, after the chunks and at the end. */
  catchUpMs: number
  totalMs: number
  /** The budget ran out before `count`. */
  budgetHit: boolean
  /** The ids of the first `keepIds` sessions made, in the order they were asked for. */
  oldIds: string[]
  /** [seconds since the start, sessions made], after each chunk. */
  progress: [number, number][]
}

/** Resolves with the first page of a new list (limit `limit`): its pass over the feed is done by then. */
export function firstPage(store: Pick<BuildStore, 'sessions'>, limit: number, stallMs = 600_000): Promise<number> {
  const list = store.sessions({ limit })
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      list.close()
      reject(new Error(`a first page of the session list took more than ${stallMs / 1000} s`))
    }, stallMs)
    list.subscribe((items, meta) => {
      clearTimeout(timer)
      list.close()
      if (meta.error) reject(meta.error)
      else resolve(items.length)
    })
  })
}

export async function buildSessions(store: BuildStore, o: BuildOptions, log: (line: string) => void): Promise<BuildResult> {
  const now = () => performance.now()
  const t0 = now()
  const oldIds: string[] = []
  const progress: [number, number][] = []
  let made = 0
  let createMs = 0
  let catchUpMs = 0
  let lastLog = t0
  while (made < o.count && now() - t0 < o.budgetMs) {
    const n = Math.min(o.chunk, o.count - made)
    const base = made
    const ids: string[] = new Array(n)
    let next = 0
    const c0 = now()
    await Promise.all(
      Array.from({ length: Math.min(o.concurrency, n) }, async () => {
        for (let i = next++; i < n; i = next++) {
          const s = await store.createSession({ title: `${o.titlePrefix} ${base + i}` })
          ids[i] = s.id
          await s.close()
        }
      }),
    )
    const c1 = now()
    createMs += c1 - c0
    made += n
    for (const id of ids) if (oldIds.length < o.keepIds) oldIds.push(id)
    await firstPage(store, 1)
    catchUpMs += now() - c1
    progress.push([(now() - t0) / 1000, made])
    if (now() - lastLog > 15_000) {
      lastLog = now()
      log(`${made} sessions in ${((now() - t0) / 1000).toFixed(0)} s (${((made / (now() - t0)) * 1000).toFixed(0)}/s)`)
    }
  }
  const c2 = now()
  await firstPage(store, 50)
  catchUpMs += now() - c2
  return { made, createMs, catchUpMs, totalMs: now() - t0, budgetHit: made < o.count, oldIds, progress }
}
