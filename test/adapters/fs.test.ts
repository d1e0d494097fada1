// Contract: §2 data model, §4 checkpoints, §7 durability — the storage suite on fs, also with one cached log (docs/CONTRACT.md)
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFsAdapter } from '../../src/backends/fs'
import { folderOf, INDEX_FILE, LOG_FILE, sessionDir, sessionsDir } from '../../src/backends/fs/layout'
import { INDEX_STRIDE } from '../../src/backends/fs/offset-index'
import { RECORD_HEADER } from '../../src/backends/fs/record-format'
import { nodeFileSystem } from '../../src/backends/fs/node-fs'
import type { FsPromises } from '../../src/backends/fs/options'
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
/** An error as a failing disk gives it. */
const eio = (call: string) => Object.assign(new Error(`EIO: i/o error, ${call}`), { code: 'EIO' })

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
    const fs: FsPromises = {
      ...base,
      async rename(from, to) {
        await new Promise((r) => setTimeout(r, 5))
        if (String(to).endsWith(folderOf('x003'))) throw eio('rename')
        return base.rename(from, to)
      },
    }
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

/** The node file system, with its folder syncs (an open of a folder for reading) and its files' datasyncs recorded. */
function syncsRecorded() {
  const base = nodeFileSystem()
  const folderSyncs: string[] = []
  const datasyncs: string[] = []
  const renames: string[] = []
  const fs: FsPromises = {
    ...base,
    rename(from, to) {
      renames.push(String(to))
      return base.rename(from, to)
    },
    async open(path, flags) {
      const fh = await base.open(path, flags)
      if (flags === 'r' && (await fh.stat()).isDirectory()) folderSyncs.push(String(path))
      const datasync = fh.datasync.bind(fh)
      fh.datasync = () => (datasyncs.push(String(path)), datasync())
      return fh
    },
  }
  return { fs, folderSyncs, datasyncs, renames }
}

describe('fs syncs of new sessions', () => {
  it('createSessions syncs sessions/ once, after every new folder is in place; createSession once each', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-syncs-'))
    const { fs, folderSyncs, renames } = syncsRecorded()
    const a = createFsAdapter({ dir, fs })
    try {
      await a.listIds({ limit: 1 }) // the store's folders made
      folderSyncs.length = 0
      const ids = Array.from({ length: 40 }, (_, i) => `g${i}`)
      expect(await a.createSessions!(ids.map((id) => ({ header: rootHeader(id), events: evs(id, 0, 2) })))).toEqual(ids.map(() => true))
      const sessions = sessionsDir(dir)
      expect(folderSyncs.filter((p) => p === sessions)).toHaveLength(1)
      // After the last folder was renamed into place (and each folder synced before its rename).
      const placed = renames.filter((to) => ids.some((id) => to === sessionDir(dir, id)))
      expect(placed).toHaveLength(ids.length)
      expect(folderSyncs.at(-1)).toBe(sessions)
      expect(folderSyncs.filter((p) => p.startsWith(join(dir, 'tmp')))).toHaveLength(ids.length)
      folderSyncs.length = 0
      await a.createSession(rootHeader('one'), [])
      await a.createSession(rootHeader('two'), [])
      expect(folderSyncs.filter((p) => p === sessions)).toHaveLength(2)
      for (const id of ids) expect(await a.getSession(id), id).toEqual({ header: rootHeader(id), length: 2 })
    } finally {
      await a.close()
      await rm(dir, { recursive: true, force: true })
    }
  })

  it("createSessions whose sync of sessions/ fails rejects, and a retry that finds them made syncs it; a creation's failure is the one thrown", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-syncfail-'))
    const base = nodeFileSystem()
    let failSyncs = 0
    let failRenameOf: string | undefined
    let sessionSyncs = 0
    const fs: FsPromises = {
      ...base,
      async open(path, flags) {
        if (path === sessionsDir(dir) && flags === 'r') {
          sessionSyncs++
          if (failSyncs > 0 && failSyncs--) throw eio('sync')
        }
        return base.open(path, flags)
      },
      async rename(from, to) {
        if (failRenameOf !== undefined && to === sessionDir(dir, failRenameOf)) throw eio('rename')
        return base.rename(from, to)
      },
    }
    const a = createFsAdapter({ dir, fs })
    try {
      await a.listIds({ limit: 1 })
      const news = (ids: string[]) => ids.map((id) => ({ header: rootHeader(id), events: evs(id, 0, 2) }))
      failSyncs = 1
      await expect(a.createSessions!(news(['p0', 'p1', 'p2']))).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
      sessionSyncs = 0
      expect(await a.createSessions!(news(['p0', 'p1', 'p2']))).toEqual([false, false, false]) // in place, not synced: synced now
      expect(sessionSyncs).toBe(1)
      // A creation fails and so does the sync: the creation's failure, named by its session, is thrown.
      failSyncs = 1
      failRenameOf = 'q1'
      const err = await a.createSessions!(news(['q0', 'q1', 'q2'])).catch((e: unknown) => e)
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE', sessionId: 'q1' })
    } finally {
      await a.close()
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('a new log gets an offset index only where it tells more than entry 0, unsynced; entries written later start at entry 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-fs-index-'))
    const { fs, datasyncs } = syncsRecorded()
    const seeded = (id: string, n: number) => [rootHeader(id, { origin: 'fork', forkedFrom: 'source', seedLength: n }), evs(id, 0, n)] as const
    const exists = (path: string) =>
      stat(path).then(
        () => true,
        () => false,
      )
    let a: StorageAdapter = createFsAdapter({ dir, fs })
    try {
      await a.createSession(...seeded('small', INDEX_STRIDE))
      await a.createSession(...seeded('big', INDEX_STRIDE + 1))
      expect(await a.createSessions!([{ header: rootHeader('grouped'), events: evs('grouped', 0, 3) }])).toEqual([true])
      const indexOf = (id: string) => join(sessionDir(dir, id), INDEX_FILE)
      expect(await exists(indexOf('small'))).toBe(false)
      expect(await exists(indexOf('grouped'))).toBe(false)
      expect((await readFile(indexOf('big'))).length).toBe(2 * 8) // entries of seq 0 and 64
      expect(datasyncs.filter((p) => p.endsWith(INDEX_FILE))).toEqual([])
      expect(datasyncs.filter((p) => p.endsWith(LOG_FILE))).toHaveLength(3) // the logs are synced
      await a.close()

      // A fresh adapter reads them as they are, and writes no index for reading them.
      a = createFsAdapter({ dir, fs })
      expect(await readAll(a, 'small')).toEqual(evs('small', 0, INDEX_STRIDE).map((e) => e.event))
      expect(await readAll(a, 'grouped')).toEqual(evs('grouped', 0, 3).map((e) => e.event))
      await a.close()
      expect(await exists(indexOf('small'))).toBe(false) // nor at its close
      a = createFsAdapter({ dir, fs })

      // One adapter read it and closes after another grew it: the index stays aligned.
      const reader = createFsAdapter({ dir })
      expect((await reader.getSession('small'))?.length).toBe(INDEX_STRIDE)

      // Grown past INDEX_STRIDE * 9 events, its index is written from entry 0: entry k points at seq 64k.
      let length = INDEX_STRIDE
      for (; length < INDEX_STRIDE * 10; length += 100) await a.append('small', evs('small', length, 100))
      await a.close()
      await reader.close()
      a = createFsAdapter({ dir, fs })
      for (const end = length + 600; length < end; length += 100) await a.append('small', evs('small', length, 100))
      await a.close()
      a = createFsAdapter({ dir, fs })
      const index = await readFile(indexOf('small'))
      const log = await readFile(join(sessionDir(dir, 'small'), LOG_FILE))
      expect(index.length / 8).toBe(Math.ceil(length / INDEX_STRIDE))
      for (let k = 0; k < index.length / 8; k++) {
        const at = index.readDoubleLE(k * 8)
        const length = log.readUInt32LE(at + 4)
        const payload = JSON.parse(log.toString('utf8', at + RECORD_HEADER, at + RECORD_HEADER + length)) as { seq: number }
        expect(payload.seq, `entry ${k}`).toBe(k * INDEX_STRIDE)
      }
      expect((await readAll(a, 'small', { from: 600 })).map((e) => e.seq)).toEqual(Array.from({ length: length - 600 }, (_, i) => 600 + i))
    } finally {
      await a.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
