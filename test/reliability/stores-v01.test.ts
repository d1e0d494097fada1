// Reliability: stores written by sessionfold 0.1 open whole with today's code — fs (worker and this thread), encrypted fs, IndexedDB (fake), PostgreSQL (§2-§13)
// The fixtures of test/fixtures/stores/v0.1/ were written by 0.1 itself (commit 8403acb, through
// scripts/make-v01-fixtures.ts), before chain marks and key-value records existed: IndexedDB at
// database version 2, PostgreSQL at schema version 6, fs without kv/ folders. Each is copied to a
// temp place (the committed files are never opened in place) and opened with today's openStore.
// What it reads must be what 0.1 read (the manifest beside each fixture): the sessions listed,
// headers, events byte for byte, values, trees (the deleted child an `unavailable` row), values
// and trees as of points (through 0.1's history rows), verify's report. Then: change batches
// from past the start carry the chain value of the log (computed from it: 0.1 kept none); the
// store syncs whole to a fresh store and takes back what that one appended, with no conflict;
// it takes appends to a session, a child and the long log, and a new child; a feed cursor taken
// before them sends exactly them, and the cursor 0.1 gave a replication that had pulled
// everything sends every write since; reopened, all of it is there, verify is clean, and the old
// points still read as 0.1 read them. The layout is migrated on open where it changed. The steps
// are in support/v01-fixtures.ts; the Chromium variant: test/browser/stores-v01.browser.test.ts.
// PostgreSQL runs twice: restored where its transaction ids stand (an upgrade in place), and on
// a new cluster (a backup restored elsewhere), where two feed steps fail (see there).
import 'fake-indexeddb/auto'
import { execFile } from 'node:child_process'
import { cp, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore, type OpenStoreOptions } from 'sessionfold'
import { filesOf } from '../support/files'
import { expectCode } from '../support/helpers'
import { idbLayout, loadIdbDump, type IdbDump } from '../support/idb-fixture'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'
import { V01_SECRETS, v01Suite, type V01Manifest } from '../support/v01-fixtures'

const run = promisify(execFile)
/** The encrypted fixture's key: the 32 bytes scripts/make-v01-fixtures.ts made it with (FIXTURE_KEY_HEX there). */
const KEY_HEX = '5e55f01d000102030405060708090a0b0c0d0e0f101112131415161718191a1b'
const key = () => Uint8Array.from(KEY_HEX.match(/../g)!.map((h) => parseInt(h, 16)))
const FIXTURES = fileURLToPath(new URL('../fixtures/stores/v0.1/', import.meta.url))
const manifestOf = async (name: string) => JSON.parse(await readFile(join(FIXTURES, `${name}.manifest.json`), 'utf8')) as V01Manifest

let temp: string
let committed: Record<string, string>
beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), 'sessionfold-v01-'))
  committed = await filesOf(FIXTURES)
})
afterAll(async () => {
  await rm(temp, { recursive: true, force: true })
  // Nothing here writes to the committed fixtures.
  expect(await filesOf(FIXTURES)).toEqual(committed)
})

let copies = 0
/** A fresh copy of a fixture folder in the temp place: its path. */
async function copyOf(name: string): Promise<string> {
  const to = join(temp, `${name}-${copies++}`)
  await cp(join(FIXTURES, name), to, { recursive: true })
  return to
}

for (const worker of [false, true]) {
  describe(`the fs store of 0.1, ${worker ? 'worker_threads' : 'in this thread'}`, () => {
    let dir: string
    v01Suite(
      () => manifestOf('fs'),
      async () => openStore({ storage: 'fs', dir: (dir ??= await copyOf('fs')), worker }),
      {
        before: async () => {},
        // The writer of the long log stored its chain marks, in the session's kv/ folder (new in this layout).
        after: async () => {
          expect((await stat(join(dir, 'sessions', 's-long', 'kv'))).isDirectory()).toBe(true)
        },
      },
    )
  })
}

describe('the encrypted fs store of 0.1', () => {
  let dir: string
  const options = (): OpenStoreOptions => ({ storage: 'fs', dir, worker: true, encryption: { key: key() } })

  it('holds none of its data readable, where the plain fixture shows it (the fixture is what it claims)', async () => {
    dir = await copyOf('fs-encrypted')
    const bytes = async (root: string) => {
      const all: Buffer[] = []
      for (const entry of await readdir(root, { withFileTypes: true, recursive: true }))
        if (entry.isFile()) all.push(await readFile(join(entry.parentPath, entry.name)))
      return Buffer.concat(all)
    }
    const sealed = await bytes(dir)
    for (const secret of V01_SECRETS) expect(sealed.includes(Buffer.from(secret)), secret).toBe(false)
    expect((await bytes(join(FIXTURES, 'fs'))).includes(Buffer.from('weltkarte'))).toBe(true)
  })

  it('without its key, or with another, is KEY_REJECTED and left byte for byte as it was', async () => {
    const before = await filesOf(dir)
    await expectCode(openStore({ storage: 'fs', dir, worker: false }), 'KEY_REJECTED')
    await expectCode(openStore({ storage: 'fs', dir, worker: false, encryption: { key: new Uint8Array(32).fill(7) } }), 'KEY_REJECTED')
    expect(await filesOf(dir)).toEqual(before)
  })

  describe('with its key', () => {
    v01Suite(
      () => manifestOf('fs-encrypted'),
      () => openStore(options()),
    )
  })
})

describe('the IndexedDB store of 0.1 (fake-indexeddb, database version 2)', () => {
  const name = `v01-${process.pid}`
  v01Suite(
    () => manifestOf('indexeddb'),
    () => openStore({ storage: 'indexeddb', name, worker: false }),
    {
      before: async () => {
        const dump = JSON.parse(await readFile(join(FIXTURES, 'indexeddb.json'), 'utf8')) as IdbDump
        await loadIdbDump(indexedDB, name, dump)
        expect(await idbLayout(indexedDB, name)).toEqual({ version: 2, stores: ['checkpoints', 'events', 'feed', 'meta', 'sessions'] })
      },
      // Upgraded on open to version 3: the key-value records' store added, the rest kept.
      after: async () => {
        expect(await idbLayout(indexedDB, name)).toEqual({ version: 3, stores: ['checkpoints', 'events', 'feed', 'kv', 'meta', 'sessions'] })
      },
    },
  )
})

/**
 * The PostgreSQL store restored from its pg_dump into a new cluster. `inPlace`: the cluster's
 * transaction ids first moved past those the store has seen (its feed table's, its cursor's), as
 * they stand in the cluster that wrote it: what a store upgraded where it is sees. Without: a backup restored
 * on a new server, whose transaction ids start below the dump's.
 */
function postgresSuite(inPlace: boolean): void {
  let cluster: PgCluster
  let url: string
  const psql = (sql: string) => cluster.psql(sql, 'v01')
  const version = () => psql('SELECT version FROM sessionfold.schema_version')
  beforeAll(async () => {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    url = await cluster.createDatabase('v01')
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })
  v01Suite(
    () => manifestOf('postgres'),
    () => openStore({ storage: 'postgres', url }),
    {
      before: async () => {
        const args = [
          '-h',
          '127.0.0.1',
          '-p',
          String(cluster.port),
          '-U',
          'postgres',
          '-d',
          'v01',
          '-v',
          'ON_ERROR_STOP=1',
          '-q',
          '-f',
          join(FIXTURES, 'postgres.sql'),
        ]
        await run(join(postgresBin()!, 'psql'), args)
        expect(await version()).toBe('6')
        // The newest transaction id the store has seen: its feed's, or that of the cursor 0.1 gave ("xid:pos").
        const cursorXid = Number(((await manifestOf('postgres')).feedHead as { at: string }).at.split(':')[0])
        const newest = Math.max(cursorXid, Number(await psql('SELECT max(xid::text::bigint) FROM sessionfold.feed')))
        const next = () => psql('SELECT pg_current_xact_id()::text::bigint').then(Number)
        if (inPlace) await psql(`DO $$ BEGIN WHILE pg_current_xact_id()::text::bigint <= ${newest} LOOP COMMIT; END LOOP; END $$`)
        // What the two cases are: ids past the dump's, or (this fixture, a fresh cluster) below them.
        expect((await next()) > newest).toBe(inPlace)
      },
      // Migrated on open to version 7: the key-value records' tables added.
      after: async () => {
        expect(await version()).toBe('7')
        expect(await psql("SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables WHERE table_schema = 'sessionfold'")).toBe(
          'checkpoints,events,feed,history,leases,meta,records,schema_version,session_records,sessions',
        )
      },
    },
  )
}

describe('the PostgreSQL store of 0.1 (schema version 6), restored from pg_dump where its transaction ids stand', () => {
  postgresSuite(true)
})

// Known to fail (0.1 does the same): feed positions are transaction ids, which a restore on
// another cluster does not carry over, while the feed's identity is restored with the data. The
// cursor of a replication that had pulled everything before the backup then skips every later
// write, and a new cursor's pulls send the restored history again. The two feed-cursor steps
// below fail on it until the PostgreSQL feed tells a restored store from the one it was.
describe('the PostgreSQL store of 0.1 (schema version 6), restored from pg_dump on a new cluster', () => {
  postgresSuite(false)
})
