// The default fs's reads on the calling thread (src/backends/fs/quick-reads.ts): a file's bytes and
// a missing file's ENOENT as node:fs/promises gives them, a file over the bound through the
// thread pool, and a log read the same through the synchronous calls and through a file handle.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import * as nodeFs from 'node:fs/promises'
import { closeSync, openSync, readSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FsPromises } from '../../src/backends/fs/options'
import { QUICK_READ_BYTES, quickReadFile, quickStat } from '../../src/backends/fs/node-fs'
import { openForReading } from '../../src/backends/fs/quick-reads'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sf-quick-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

describe('fs reads on the calling thread', () => {
  it('readFile and stat answer as node:fs/promises does: bytes, text, ENOENT, a folder', async () => {
    const path = join(dir, 'small.json')
    await writeFile(path, '{"a":1}')
    expect(await quickReadFile(path, 'utf8')).toBe('{"a":1}')
    expect(Buffer.compare(await quickReadFile(path), Buffer.from('{"a":1}'))).toBe(0)
    expect((await quickStat(path)).size).toBe(7)
    expect((await quickStat(dir, { bigint: true })).ino).toBe((await nodeFs.stat(dir, { bigint: true })).ino)
    for (const call of [() => quickReadFile(join(dir, 'none')), () => quickStat(join(dir, 'none'))]) {
      const p = call()
      expect(p).toBeInstanceOf(Promise) // a rejection, not a throw, as the awaited call's callers expect
      await expect(p).rejects.toMatchObject({ code: 'ENOENT' })
    }
    await expect(quickReadFile(dir)).rejects.toMatchObject({ code: 'EISDIR' })
  })

  it('a file over the bound (read through the thread pool) comes whole', async () => {
    const path = join(dir, 'big.bin')
    const big = Buffer.alloc(QUICK_READ_BYTES + 1000, 7)
    await writeFile(path, big)
    expect(Buffer.compare(await quickReadFile(path), big)).toBe(0)
    expect(await quickReadFile(path, 'latin1')).toHaveLength(big.length)
  })

  it('a log reads the same through the synchronous calls and through a file handle', async () => {
    const path = join(dir, 'log.bin')
    const bytes = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251))
    await writeFile(path, bytes)
    const withSync = { ...nodeFs, openSync, readSync, closeSync } as unknown as FsPromises
    const withHandle = { ...nodeFs } as unknown as FsPromises
    for (const fs of [withSync, withHandle]) {
      const file = await openForReading(fs, path)
      const buf = Buffer.alloc(4096)
      expect(await file.read(buf, 9000)).toBe(1000)
      expect(Buffer.compare(buf.subarray(0, 1000), bytes.subarray(9000))).toBe(0)
      expect(await file.read(buf, 20_000)).toBe(0)
      await file.close()
    }
    await expect(openForReading(withSync, join(dir, 'none'))).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(openForReading(withHandle, join(dir, 'none'))).rejects.toMatchObject({ code: 'ENOENT' })
  })
})
