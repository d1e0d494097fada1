// The three steps of bench/many.ts (issue 34), written once against the store's public API so
// that Node (fs, PostgreSQL: bench/many.ts) and Chromium (IndexedDB: bench/many-browser/page.ts)
// run the same code: build a source store, a changesSince pass from null over a store opened
// afresh, and the import of that pass's batches into a new empty store. The timing is here.
import type { ApplyResult, ChangeBatch, ChangeCursor, Changes, EventInput } from '../../src/index'

/** What these steps need of a store (the Node and the browser Store alike). */
export interface ManyStore {
  createSession(): Promise<{ append(events: EventInput[]): Promise<{ lastSeq: number }>; close(): Promise<void> }>
  changesSince(cursor: ChangeCursor | null): Promise<Changes>
  applyChanges(batch: ChangeBatch): Promise<ApplyResult>
}

export interface ShapeSize {
  sessions: number
  events: number
}

/** Fills `store` with `want.sessions` sessions, each created, given its events in one append, closed, `concurrency` at a time. */
export async function buildShape(
  store: Pick<ManyStore, 'createSession'>,
  want: ShapeSize,
  input: EventInput,
  concurrency: number,
  progress: (made: number) => void = () => {},
): Promise<void> {
  const batch = Array.from({ length: want.events }, () => input)
  let next = 0
  let lastLog = performance.now()
  await Promise.all(
    Array.from({ length: Math.min(concurrency, want.sessions) }, async () => {
      for (let i = next++; i < want.sessions; i = next++) {
        const s = await store.createSession()
        const r = await s.append(batch)
        if (r.lastSeq !== want.events - 1) throw new Error(`build: last seq ${r.lastSeq}, expected ${want.events - 1}`)
        await s.close()
        if (performance.now() - lastLog > 15_000) {
          lastLog = performance.now()
          progress(next)
        }
      }
    }),
  )
}

export interface PassResult {
  ms: number
  batches: ChangeBatch[]
  events: number
  /** Entries (a session's run of events in one batch). */
  entries: number
  sessions: number
}

/** The full changesSince pass from null until `done`, every batch kept; checked against `want`. */
export async function passOver(store: Pick<ManyStore, 'changesSince'>, want: ShapeSize): Promise<PassResult> {
  const batches: ChangeBatch[] = []
  const ids = new Set<string>()
  let cursor: ChangeCursor | null = null
  let events = 0
  let entries = 0
  const t0 = performance.now()
  for (;;) {
    const c: Changes = await store.changesSince(cursor)
    batches.push(c.batch)
    cursor = c.cursor
    if (c.done) break
  }
  const ms = performance.now() - t0
  for (const b of batches)
    for (const e of b.sessions) {
      entries++
      events += e.events.length
      ids.add(e.header.id)
    }
  if (events !== want.sessions * want.events || ids.size !== want.sessions)
    throw new Error(`pass: ${events} events of ${ids.size} sessions, expected ${want.sessions * want.events} of ${want.sessions}`)
  return { ms, batches, events, entries, sessions: ids.size }
}

/** applyChanges of `batches`, in order, into `store` (new and empty); ms, checked against `want`. */
export async function importBatches(store: Pick<ManyStore, 'applyChanges'>, batches: readonly ChangeBatch[], want: ShapeSize): Promise<number> {
  let sessions = 0
  let events = 0
  const t0 = performance.now()
  for (const b of batches) {
    const r = await store.applyChanges(b)
    if (r.conflicts.length > 0 || r.skipped.length > 0) throw new Error(`import: ${r.conflicts.length} conflicts, ${r.skipped.length} skipped`)
    sessions += r.copiedSessions
    events += r.copiedEvents
  }
  const ms = performance.now() - t0
  if (sessions !== want.sessions || events !== want.sessions * want.events)
    throw new Error(`import: copied ${events} events of ${sessions} sessions, expected ${want.sessions * want.events} of ${want.sessions}`)
  return ms
}
