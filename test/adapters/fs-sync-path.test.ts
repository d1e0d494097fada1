// Where the fs adapter's log append syncs (src/backends/fs/group-commit.ts): a lone append syncs
// on the calling thread (cheaper than the thread pool's round trip); one made while anything
// else of the store is under way (here a record being written) syncs through the pool, so that
// the thread goes on with the rest meanwhile.
import { fdatasyncSync, writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createFsAdapter } from '../../src/backends/fs'
import { ev, rootHeader } from '../../src/testing/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-sync-path-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

it('syncs a lone append on its thread, and one made while a record is being written through the pool', async () => {
  let onThread = 0
  let holdRename: Promise<void> | undefined
  const fs = {
    ...nodeFs,
    writeSync,
    fdatasyncSync: (fd: number) => {
      onThread++
      fdatasyncSync(fd)
    },
    // A record's put waits here (between its temp file and its rename) while it is held.
    rename: (async (from: string, to: string) => {
      await holdRename
      return nodeFs.rename(from, to)
    }) as typeof nodeFs.rename,
  }
  const adapter = createFsAdapter({ dir, fs })
  await adapter.createSession(rootHeader('s'))
  await adapter.append('s', [ev('s', 0)])
  expect(onThread, 'a lone append').toBe(1)

  let release = () => {}
  holdRename = new Promise((resolve) => {
    release = resolve
  })
  const put = adapter.kv!.put(['app', 'k'], 'v', { durability: 'durable' })
  await new Promise((resolve) => setTimeout(resolve, 50)) // the put is at its rename
  await adapter.append('s', [ev('s', 1)])
  expect(onThread, 'an append while a record is being written').toBe(1)
  release()
  await put
  holdRename = undefined
  await adapter.append('s', [ev('s', 2)])
  expect(onThread, 'alone again').toBe(2)
  expect(await adapter.kv!.get(['app', 'k'])).toBe('v')
  await adapter.close()
})
