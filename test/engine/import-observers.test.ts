// Contract: §8 sync — an import writing a session while its observers come and go (docs/CONTRACT.md)
// An import takes a session's writer lock, then the session's live record, which it catches up
// with storage before it writes. Observers that close meanwhile (a reader's view, opened and
// closed) must not let that record go: the import would write through a record nobody keeps,
// its release would find none, and the writer lock would stay taken, every later import of the
// session skipped as 'locked' (the HTTP sync's live follower then never gets another event).
import { describe, expect, it } from 'vitest'
import { createMemoryAdapter } from '../../src/backends/memory'
import type { ChangeBatch } from '../../src/core/changes'
import type { ProjectionChange } from '../../src/engine'
import { Engine } from '../../src/engine'

describe('an import and the observers of its session', () => {
  it('an observer closing while the import catches the session up: the lock is released, later batches are copied, a view opened meanwhile hears them', async () => {
    const source = new Engine({ storage: createMemoryAdapter() })
    const target = new Engine({ storage: createMemoryAdapter() })
    try {
      await source.createSession({ id: 's' })
      await source.append('s', [{ type: 'turn/start' }, { type: 'app/a' }])
      const first = await source.changesSince(null, {})
      expect((await target.applyChanges(first.batch as ChangeBatch)).copiedEvents).toBe(2)
      // A reader's view of the session, open when the next batch comes in.
      await target.observe('s')
      await source.append('s', { type: 'app/b' })
      const second = await source.changesSince(first.cursor, {})

      // Hold the import where it catches the record up with storage (real storage reads take
      // that long under load), and close the reader's view then.
      const follow = target.follow.bind(target)
      let parked!: () => void
      const reached = new Promise<void>((resolve) => (parked = resolve))
      let open!: () => void
      const gate = new Promise<void>((resolve) => (open = resolve))
      target.follow = async (...args: Parameters<Engine['follow']>) => {
        parked()
        await gate
        return follow(...args)
      }
      const applying = target.applyChanges(second.batch as ChangeBatch)
      await reached
      await target.release('s', 'observer')
      // Another view opens meanwhile (the test's view in test/server/http-sync.test.ts).
      await target.observe('s')
      const heard: ProjectionChange[] = []
      const unwatch = target.watch('s', (c) => void heard.push(c))
      open()
      expect(await applying).toMatchObject({ copiedEvents: 1, conflicts: [], skipped: [] })
      target.follow = follow

      expect(await target.locks.isHeld('s')).toBe(false)
      expect(target.liveSeq('s')).toBe(2)
      expect(heard.map((c) => c.seq)).toEqual([2])
      await source.append('s', { type: 'turn/end' })
      const third = await source.changesSince(second.cursor, {})
      expect(await target.applyChanges(third.batch as ChangeBatch)).toMatchObject({ copiedEvents: 1, conflicts: [], skipped: [] })
      expect(heard.map((c) => c.seq)).toEqual([2, 3])
      expect(target.snapshot('s')).toEqual(source.snapshot('s'))
      unwatch()
      await target.release('s', 'observer')
    } finally {
      await source.close()
      await target.close()
    }
  })

  it('a writer opened while the last observer closes holds the record it caught up, and closing it frees the session', async () => {
    const storage = createMemoryAdapter()
    const engine = new Engine({ storage })
    try {
      await engine.createSession({ id: 'w' })
      await engine.append('w', { type: 'app/a' })
      await engine.release('w', 'writer')
      await engine.observe('w')
      const follow = engine.follow.bind(engine)
      let parked!: () => void
      const reached = new Promise<void>((resolve) => (parked = resolve))
      let open!: () => void
      const gate = new Promise<void>((resolve) => (open = resolve))
      engine.follow = async (...args: Parameters<Engine['follow']>) => {
        parked()
        await gate
        return follow(...args)
      }
      const opening = engine.openSession('w')
      await reached
      await engine.release('w', 'observer')
      open()
      await opening
      engine.follow = follow
      await engine.append('w', { type: 'app/b' })
      expect(engine.liveSeq('w')).toBe(1)
      await engine.release('w', 'writer')
      expect(await engine.locks.isHeld('w')).toBe(false)
      expect((await engine.openSession('w')).length).toBe(2)
      await engine.release('w', 'writer')
    } finally {
      await engine.close()
    }
  })
})
