// The fs adapter's records put often and durably (PutOptions.often: a Durable Stream's record)
// are written over in place in a file of two copies (src/backends/fs/slotted.ts): the same file
// each time, the copy not holding the current value; a copy torn by a crash reads as the value
// before it; a value that outgrows its copies, a plain put over them and a session deleted
// meanwhile all behave as for any record.
import { writeSync } from 'node:fs'
import * as nodeFs from 'node:fs/promises'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFsAdapter } from '../../src/backends/fs'
import type { StorageAdapter } from '../../src/storage/types'
import { rootHeader } from '../../src/testing/helpers'
import { expectCode } from '../support/helpers'

let dir: string
let adapter: StorageAdapter
afterEach(async () => {
  await adapter.close()
  await rm(dir, { recursive: true, force: true })
})

const key = ['session', 's', 'stream']
const often = { durability: 'durable', often: true } as const
const file = () => join(dir, 'sessions', 's-s', 'kv', 'stream')
const kv = () => adapter.kv!

// The default fs writes a copy with synchronous calls and syncs it on the thread pool; an fs
// given without those calls goes through a file handle.
describe.each([
  ['synchronous calls', undefined],
  ['a file handle', { ...nodeFs, writeSync }],
])('records put often (two copies, written over in place), through %s', (_, fs) => {
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sessionfold-slotted-'))
    adapter = createFsAdapter({ dir, fs })
    await adapter.createSession(rootHeader('s'))
  })
  it('writes the same file each time, the other copy of it, and reads the latest value', async () => {
    await kv().put(key, 'one', often)
    const first = await stat(file())
    expect((await readFile(file())).subarray(0, 4).toString('latin1')).toBe('\0SF2')
    for (const value of ['two', 'three', 'four ✓ ünïcode', '']) {
      await kv().put(key, value, often)
      expect(await kv().get(key)).toBe(value)
    }
    const last = await stat(file())
    expect([last.ino, last.size]).toEqual([first.ino, first.size]) // never replaced, never grown
    // Another adapter on the same folder (another process) reads it too.
    const other = createFsAdapter({ dir })
    expect(await other.kv!.get(key)).toBe('')
    await other.close()
  })

  it('reads the value before a put whose copy was torn (a crash mid-write), and refuses a file with no whole copy', async () => {
    await kv().put(key, 'before', often)
    await kv().put(key, 'after', often)
    const bytes = await readFile(file())
    const slotSize = bytes.readUInt32LE(4)
    // 'after' went into the second copy: one byte of its value changed.
    const at = bytes.indexOf('after', 8 + slotSize)
    expect(at).toBeGreaterThan(8 + slotSize)
    bytes[at] = 'A'.charCodeAt(0)
    await writeFile(file(), bytes)
    expect(await kv().get(key)).toBe('before')
    // The next put goes over the torn copy's other: the whole one is kept until it is replaced.
    await kv().put(key, 'again', often)
    expect(await kv().get(key)).toBe('again')
    // Both copies torn: no value to give, an error rather than a wrong one.
    const both = await readFile(file())
    both[both.indexOf('again')] = 'A'.charCodeAt(0)
    both[both.indexOf('before')] = 'B'.charCodeAt(0)
    await writeFile(file(), both)
    await expect(kv().get(key)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
  })

  it('makes the file anew when a value outgrows its copies, and after a plain put; a plain put over it is a plain file', async () => {
    await kv().put(key, 'small', often)
    const small = await stat(file())
    const big = 'x'.repeat(10_000)
    await kv().put(key, big, often)
    expect(await kv().get(key)).toBe(big)
    expect((await stat(file())).size).toBeGreaterThan(small.size)
    await kv().put(key, 'plain', { durability: 'durable' })
    expect(await readFile(file(), 'utf8')).toBe('plain')
    expect(await kv().get(key)).toBe('plain')
    await kv().put(key, 'two copies again', often)
    expect((await readFile(file())).subarray(0, 4).toString('latin1')).toBe('\0SF2')
    expect(await kv().get(key)).toBe('two copies again')
  })

  it('refuses a put for a deleted session with SESSION_NOT_FOUND, writing nothing', async () => {
    await kv().put(key, 'kept', often)
    await adapter.deleteSession('s')
    await expectCode(kv().put(key, 'lost', often), 'SESSION_NOT_FOUND')
    expect(await kv().list(['session', 's'])).toEqual([])
  })
})
