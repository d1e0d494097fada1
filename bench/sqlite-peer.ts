// The peer an Electron developer would build instead of sessionfold in Node: better-sqlite3
// with one events table, WAL, `synchronous = FULL` for strict durability (each commit syncs the
// WAL) or `NORMAL` for relaxed (commits are not synced; the WAL is synced at checkpoints), and
// the same folds (the subagent catalog and the turn timing) computed by app code while reading
// the session back. Used by bench/storage.ts (appends), bench/scaling.ts (cold opens) and
// bench/api.ts (appends of the app's own inputs, each row made with JSON.stringify).
import Database from 'better-sqlite3'
import type { SessionEvent } from '../src/core/model'
import { CATALOG, TURN_END, TURN_START } from '../src/core/units/payloads'
import type { EncodedEvent } from '../src/core/validate'
import type { EventInput } from '../src/index-node'

export type Synchronous = 'FULL' | 'NORMAL'

export interface SqlitePeer {
  db: Database.Database
  /** One transaction: every event of the batch, or none. */
  append(sessionId: string, batch: readonly EncodedEvent[]): void
  /**
   * One transaction of the app's own inputs, numbered from `from`, each row's JSON made with
   * JSON.stringify (seq, type, time, data), as an app writing its events to SQLite would.
   */
  appendInputs(sessionId: string, from: number, batch: readonly EventInput[]): void
  /** Reads every event of the session in seq order and folds it in app code. */
  fold(sessionId: string): AppFold
  close(): void
}

/** What the app code computes: the same values as sessionfold's subagentCatalog and subagentTiming views. */
export interface AppFold {
  length: number
  catalog: { id: string; createdAt: number; mode: string; label?: string; seq: number }[]
  timing: { turns: number; settledMs: number; runningSince: number | null }
}

export function openSqlitePeer(path: string, synchronous: Synchronous): SqlitePeer {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma(`synchronous = ${synchronous}`)
  db.exec(`CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (session, seq)
  ) WITHOUT ROWID`)
  const insert = db.prepare('INSERT INTO events (session, seq, type, json) VALUES (?, ?, ?, ?)')
  const select = db.prepare('SELECT type, json FROM events WHERE session = ? ORDER BY seq').raw(true)
  const insertAll = db.transaction((sessionId: string, batch: readonly EncodedEvent[]) => {
    for (const e of batch) insert.run(sessionId, e.event.seq, e.event.type, e.json)
  })
  const insertInputs = db.transaction((sessionId: string, from: number, batch: readonly EventInput[]) => {
    const time = Date.now()
    for (let i = 0; i < batch.length; i++) {
      const { type, data } = batch[i]!
      insert.run(sessionId, from + i, type, JSON.stringify({ seq: from + i, type, time, data }))
    }
  })
  return {
    db,
    append: (sessionId, batch) => insertAll(sessionId, batch),
    appendInputs: (sessionId, from, batch) => insertInputs(sessionId, from, batch),
    fold(sessionId) {
      const out: AppFold = { length: 0, catalog: [], timing: { turns: 0, settledMs: 0, runningSince: null } }
      const t = out.timing
      for (const row of select.iterate(sessionId) as IterableIterator<[string, string]>) {
        const type = row[0]
        out.length++
        // App code parses only what its folds need, as a hand-written app would.
        if (type === CATALOG) {
          const e = JSON.parse(row[1]) as SessionEvent
          const d = e.data as { childId: string; childCreatedAt: number; mode: string; label?: string }
          out.catalog.push(
            d.label === undefined
              ? { id: d.childId, createdAt: d.childCreatedAt, mode: d.mode, seq: e.seq }
              : { id: d.childId, createdAt: d.childCreatedAt, mode: d.mode, label: d.label, seq: e.seq },
          )
        } else if (type === TURN_START) {
          if (t.runningSince === null) {
            const e = JSON.parse(row[1]) as SessionEvent
            t.turns++
            t.runningSince = e.time
          }
        } else if (type === TURN_END) {
          if (t.runningSince !== null) {
            const e = JSON.parse(row[1]) as SessionEvent
            t.settledMs += Math.max(0, e.time - t.runningSince)
            t.runningSince = null
          }
        }
      }
      return out
    },
    close: () => db.close(),
  }
}
