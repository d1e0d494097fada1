// Contract: §2 data model, §4 checkpoints, §7 durability — the storage suite on fs, also with one cached log (docs/CONTRACT.md)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFsAdapter } from '../../src/backends/fs'
import { folderOf } from '../../src/backends/fs/layout'
import { nodeFileSystem } from '../../src/backends/fs/node-fs'
import { describe, expect, it } from 'vitest'
import type { NewSession, StorageAdapter } from '../../src/storage/types'
import { storageConformance } from 'sessionfold/testing'
import { evs, readAll, rootHeader } from '../../src/testing/helpers'

storageConformance('fs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-'))
  let adapter: StorageAdapter = createFsAdapter({ dir })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createFsAdapter({ dir })
      return adapter
    },
    teardown: async () => {
      await adapter.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})

// The same contract with the idle-log cache at its smallest: every other session's state is
// dropped and read again from disk (index and tail) on next use.
storageConformance('fs, one cached log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs1-'))
  let adapter: StorageAdapter = createFsAdapter({ dir, maxCachedLogs: 1, maxOpenFiles: 1 })
  return {
    adapter,
    reopen: async () => {
      await adapter.close()
      adapter = createFsAdapter({ dir, maxCachedLogs: 1, maxOpenFiles: 1 })
      return adapter
    },
    teardown: async () => {
      await adapter.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})

// createSessions takes no writer lock: the rename of a session's folder into place is what
// refuses a taken id. Two adapters on one folder (two processes' worth) making the same ids at
// once: each id made exactly once, whole, with the winner's header and events.
describe('fs createSessions without locks', () => {
  it('two adapters making the same sessions at once: each made once, by one of them, whole', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-race-'))
    const [a, b] = [createFsAdapter({ dir }), createFsAdapter({ dir })]
    try {
      const ids = Array.from({ length: 40 }, (_, i) => `r${i}`)
      const sessionsOf = (createdAt: number, n: number): NewSession[] =>
        ids.map((id) => ({ header: rootHeader(id, { createdAt }), events: evs(id, 0, n, () => ({ by: createdAt })) }))
      const [madeA, madeB] = await Promise.all([a.createSessions!(sessionsOf(1, 2)), b.createSessions!(sessionsOf(2, 3))])
      for (const [i, id] of ids.entries()) {
        expect(madeA[i] !== madeB[i], id).toBe(true) // one of the two, never both, never neither
        const winner = madeA[i] ? 1 : 2
        expect(await a.getSession(id)).toEqual({ header: rootHeader(id, { createdAt: winner }), length: winner + 1 })
        expect(await readAll(b, id)).toEqual(evs(id, 0, winner + 1, () => ({ by: winner })).map((e) => e.event))
      }
      expect((await a.listIds({ limit: 100 })).length).toBe(ids.length)
    } finally {
      await a.close()
      await b.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('fs createSessions that fails', () => {
  it('rejects naming the session, once the creations under way ended: none starts after, nothing is left running', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-fail-'))
    const base = nodeFileSystem()
    const ids = Array.from({ length: 200 }, (_, i) => `x${String(i).padStart(3, '0')}`)
    // The rename of x003's folder into place fails as a disk would (EIO); every rename is slowed
    // a little so that many creations are under way when it does.
    const fs = new Proxy(base, {
      get(target, key) {
        const value = (target as unknown as Record<string | symbol, unknown>)[key]
        if (key === 'rename')
          return async (from: string, to: string) => {
            await new Promise((r) => setTimeout(r, 5))
            if (to.endsWith(folderOf('x003'))) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })
            return base.rename(from, to)
          }
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const a = createFsAdapter({ dir, fs })
    try {
      const err = await a.createSessions!(ids.map((id) => ({ header: rootHeader(id), events: evs(id, 0, 1) }))).catch((e: unknown) => e)
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE', sessionId: 'x003', message: expect.stringContaining('"x003"') })
      const atRejection = await a.listIds({ limit: 1000 })
      await new Promise((r) => setTimeout(r, 300))
      expect(await a.listIds({ limit: 1000 })).toEqual(atRejection) // nothing made after the call ended
      expect(atRejection.length).toBeLessThan(100) // those begun before the failure, not the 200
      expect(atRejection).not.toContain('x003')
      for (const id of atRejection) expect((await a.getSession(id))?.length, id).toBe(1) // each whole
    } finally {
      await a.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
