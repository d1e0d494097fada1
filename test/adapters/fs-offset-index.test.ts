// Adapters: the fs offset index (events.idx), written in the background — an internal detail, no contract section
// fs-only: the sparse offset index (events.idx) is written in the background. An append never
// waits for it, yet it is never written into a session made again under a deleted one's id,
// and close() leaves it complete.
import { writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsAdapter, type FsPromises } from '../../src/backends/fs'
import { INDEX_STRIDE } from '../../src/backends/fs/offset-index'
import { folderOf } from '../../src/backends/fs/layout'
import { evs, readAll, rootHeader } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-idx-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Polls `check` until it holds (10 s at most). */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (const end = Date.now() + 10_000; !(await check()); ) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const idxPath = (id: string) => join(dir, 'sessions', folderOf(id), 'events.idx')

/** node:fs/promises whose opens of events.idx wait until `open()` is called. */
function gatedIndexFs(): { fs: FsPromises; opened: () => number; release: () => void } {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  let opened = 0
  const open = (async (path: Parameters<typeof nodeFs.open>[0], flags?: string | number, mode?: number) => {
    if (String(path).endsWith('events.idx')) {
      opened++
      await gate
    }
    return nodeFs.open(path, flags, mode)
  }) as typeof nodeFs.open
  return { fs: { ...nodeFs, open, writeSync }, opened: () => opened, release }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20))

describe('fs adapter: the offset index is written in the background', () => {
  it('appends resolve while the index write is held up, and close() completes it', async () => {
    const g = gatedIndexFs()
    const a = createFsAdapter({ dir, fs: g.fs })
    await a.createSession(rootHeader('s'))
    // 8 index entries (of 64 events each) make the adapter write the index.
    await a.append('s', evs('s', 0, 8 * INDEX_STRIDE))
    expect(g.opened()).toBe(1)
    // The index write is stuck in open(); appends go on without it.
    await a.append('s', evs('s', 8 * INDEX_STRIDE, 100))
    await a.append('s', evs('s', 8 * INDEX_STRIDE + 100, 100))
    expect((await a.getSession('s'))?.length).toBe(8 * INDEX_STRIDE + 200)
    await expect(stat(idxPath('s'))).rejects.toMatchObject({ code: 'ENOENT' })
    const closing = a.close()
    await tick()
    g.release()
    await closing
    // Every entry is there, once, in order: entry k is the offset of seq 64k.
    const idx = await readFile(idxPath('s'))
    expect(idx.length / 8).toBe(Math.ceil((8 * INDEX_STRIDE + 200) / INDEX_STRIDE))
    const b = createFsAdapter({ dir })
    const tail = await readAll(b, 's', { from: 9 * INDEX_STRIDE, to: 9 * INDEX_STRIDE + 3 })
    expect(tail.map((e) => e.seq)).toEqual([9 * INDEX_STRIDE, 9 * INDEX_STRIDE + 1, 9 * INDEX_STRIDE + 2])
    await b.close()
  })

  it('an adapter that read another one’s appends (another process’s) writes only its own entries after them, once each', async () => {
    const entries = async () => (await readFile(idxPath('s')).catch(() => Buffer.alloc(0))).length / 8
    const a = createFsAdapter({ dir })
    await a.createSession(rootHeader('s'))
    await a.append('s', evs('s', 0, 8 * INDEX_STRIDE))
    await waitFor(async () => (await entries()) === 8)
    // Another process takes the session on and appends: its index entries follow a's.
    const b = createFsAdapter({ dir })
    await b.append('s', evs('s', 8 * INDEX_STRIDE, 8 * INDEX_STRIDE))
    await waitFor(async () => (await entries()) === 16)
    await b.close()
    // a reads what b appended, then appends again.
    expect((await a.getSession('s'))?.length).toBe(16 * INDEX_STRIDE)
    await a.append('s', evs('s', 16 * INDEX_STRIDE, 8 * INDEX_STRIDE))
    await a.close()
    // Every entry once, in order: entry k is the offset of seq 64k.
    expect(await entries()).toBe(24)
    const idx = await readFile(idxPath('s'))
    const log = await readFile(join(dir, 'sessions', folderOf('s'), 'events.log'))
    for (let k = 0; k < 24; k++) {
      const at = idx.readDoubleLE(k * 8)
      const json = log.subarray(at + 9, at + 9 + log.readUInt32LE(at + 4)).toString('utf8')
      expect(JSON.parse(json).seq).toBe(k * INDEX_STRIDE)
    }
  })

  it('deleteSession waits for the index write, so none lands in a session created again under the id', async () => {
    const g = gatedIndexFs()
    const a = createFsAdapter({ dir, fs: g.fs })
    await a.createSession(rootHeader('d'))
    await a.append('d', evs('d', 0, 8 * INDEX_STRIDE))
    expect(g.opened()).toBe(1)
    let deleted = false
    const deleting = a.deleteSession('d').then(() => (deleted = true))
    await tick()
    expect(deleted).toBe(false)
    g.release()
    await deleting
    await a.createSession(rootHeader('d'))
    await a.close()
    await expect(stat(idxPath('d'))).rejects.toMatchObject({ code: 'ENOENT' })
    const b = createFsAdapter({ dir })
    expect((await b.getSession('d'))?.length).toBe(0)
    await b.close()
  })
})
