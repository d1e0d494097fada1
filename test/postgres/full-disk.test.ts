// A real full disk under the PostgreSQL store: the events table moved to a tablespace on a
// 4 MiB tmpfs (the write-ahead log stays on the large disk, so the server itself keeps
// running, as it does when a data volume fills). Appends fill it until the server's own
// "could not extend file" (SQLSTATE 53100) arrives: that append is STORAGE_QUOTA_EXCEEDED and
// writes nothing, the store stays whole and readable, and once the volume is grown the same
// store appends again. Mounting needs root, as on the machines the
// tests run on; elsewhere it is reported skipped (the trigger-raised 53100 test in
// adapter-behaviour.test.ts still runs).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { createPostgresAdapter } from '../../src/backends/postgres'
import type { StorageAdapter } from '../../src/storage/types'
import { ev, expectCode, readAll, rootHeader } from '../support/helpers'
import { startCluster, type PgCluster } from '../support/postgres'

vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 })

const isRoot = process.getuid?.() === 0
let cluster: PgCluster
let url: string
let adapter: StorageAdapter | undefined

function tryMount(): string | undefined {
  if (!isRoot) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-fulldisk-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', dir])
    execFileSync('chown', ['postgres:postgres', dir])
    return dir
  } catch (err) {
    console.log(`[full-disk] cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]}): skipped`)
    rmSync(dir, { recursive: true, force: true })
    return undefined
  }
}

// Mounted while the file loads, so that the test is reported skipped where it cannot be.
const mount = tryMount()

beforeAll(async () => {
  if (!mount) return
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('fulldisk')
})

afterAll(async () => {
  await adapter?.close().catch(() => {})
  await cluster?.stop()
  if (mount) {
    execFileSync('umount', [mount])
    rmSync(mount, { recursive: true, force: true })
  }
})

const big = (id: string, seq: number) => ev(id, seq, { text: `${seq}:`.padEnd(2000, 'x') })

it.skipIf(mount === undefined)(
  'a data volume that fills: STORAGE_QUOTA_EXCEEDED, nothing written, the store whole; appends again once the volume is grown',
  async () => {
    if (!mount) return
    const a = (adapter = createPostgresAdapter({ url, schema: 'fd' }))
    await a.createSession(rootHeader('filler'))
    await a.createSession(rootHeader('q'))
    await a.append('q', [ev('q', 0)])
    // The events table and its key on the small volume (TOAST too: bodies under 2 KB stay inline).
    await cluster.psql(`CREATE TABLESPACE small LOCATION '${mount}'`, 'fulldisk')
    await cluster.psql('ALTER TABLE fd.events SET TABLESPACE small; ALTER INDEX fd.events_pkey SET TABLESPACE small', 'fulldisk')

    // Fill it: batches of 50 events of ~2 KB until the server refuses one.
    let seq = 0
    let refused: unknown
    for (let i = 0; i < 1000 && refused === undefined; i++) {
      try {
        await a.append(
          'filler',
          Array.from({ length: 50 }, (_, j) => big('filler', seq + j)),
        )
        seq += 50
      } catch (err) {
        refused = err
      }
    }
    expect(refused).toMatchObject({ code: 'STORAGE_QUOTA_EXCEEDED' })
    expect(String((refused as Error).message)).toContain('"filler"')

    // The refused append wrote nothing; every acknowledged one is there, in order.
    expect((await a.getSession('filler'))!.length).toBe(seq)
    const filler = await readAll(a, 'filler')
    expect(filler.map((e) => e.seq)).toEqual(Array.from({ length: seq }, (_, i) => i))
    // Another session's append is refused too while the volume is full, and writes nothing.
    let more = 1
    for (; more < 200; more++) {
      try {
        await a.append('q', [big('q', more)])
      } catch (err) {
        expect(err).toMatchObject({ code: 'STORAGE_QUOTA_EXCEEDED' })
        break
      }
    }
    expect(more).toBeLessThan(200)
    expect((await a.getSession('q'))!.length).toBe(more)
    expect((await readAll(a, 'q')).map((e) => e.seq)).toEqual(Array.from({ length: more }, (_, i) => i))
    await expectCode(a.append('q', [big('q', more)]), 'STORAGE_QUOTA_EXCEEDED')

    // The volume grown (as an operator would): the same store appends again, without reopening.
    execFileSync('mount', ['-o', 'remount,size=8m', mount])
    await a.append('q', [big('q', more), big('q', more + 1)])
    expect((await a.getSession('q'))!.length).toBe(more + 2)
    expect((await readAll(a, 'q')).map((e) => e.seq)).toEqual(Array.from({ length: more + 2 }, (_, i) => i))
  },
)
