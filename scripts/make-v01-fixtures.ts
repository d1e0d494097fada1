// Makes the stores of test/fixtures/stores/v0.1/ (test/reliability/stores-v01.test.ts): stores
// written by sessionfold 0.1, so that every later layout is proven to open them, read them back
// exactly and migrate them.
//
// RUN IT FROM A CHECKOUT OF COMMIT 8403acb (sessionfold 0.1 as it landed), never from a later
// one: its imports are that tree's own code, and the point of the fixtures is what 0.1 wrote.
//
//   git worktree add /tmp/v01 8403acb && cp scripts/make-v01-fixtures.ts /tmp/v01/scripts/
//   (cd /tmp/v01 && ln -s <main checkout>/node_modules node_modules)
//   cd /tmp/v01 && npx tsx scripts/make-v01-fixtures.ts --out <this checkout>/test/fixtures/stores/v0.1
//
// It writes, with 0.1's public API only (openStore, worker: false):
//   fs/, fs-encrypted/        the store folders as they are (encrypted with FIXTURE_KEY below)
//   indexeddb.json            a fake-indexeddb database (version 2) dumped store by store, raw
//   postgres.sql              pg_dump --schema=sessionfold of a PostgreSQL store (schema version 6)
//   <name>.manifest.json      what 0.1 reads from each: headers, events (the long log as a hash),
//                             projection values, trees, values as of points, verify's report,
//                             and the feed cursor of a replication that pulled everything
// Each store holds the same sessions (see populate). Events carry explicit `time`s, ids are
// fixed; what still varies from run to run: createdAt of every header, the time of the events
// the engine writes itself (subagent/descriptor, subagent/catalog), the feed's identity, the
// codec's nonces and key record, PostgreSQL's transaction ids in the feed table.
import 'fake-indexeddb/auto'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readdir, rm, writeFile, cp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { isDeepStrictEqual } from 'node:util'
import { openStore, type ChangeCursor, type OpenStoreOptions, type SessionEvent, type Store } from '../src/index-node'
import { postgresBin, startCluster } from '../test/support/postgres'

const run = promisify(execFile)

/** The encrypted fixture's key: 32 bytes, the same literal as in the test. */
export const FIXTURE_KEY_HEX = '5e55f01d000102030405060708090a0b0c0d0e0f101112131415161718191a1b'
/** Written in the root session's data: the encrypted store's raw bytes must not show it. */
export const MARKER = 'sk-fixture-secret-7f3a9c'
/** The base of every explicit event time. */
const T0 = 1_700_000_000_000
/** The long session's length: past two history rows (every 1,024 events) and many checkpoints. */
const LONG_EVENTS = 2600

const keyBytes = () => Uint8Array.from(FIXTURE_KEY_HEX.match(/../g)!.map((h) => parseInt(h, 16)))

/** Data with keys JSON can hold but an object literal cannot write as own keys. */
const oddKeys = JSON.parse('{"__proto__":{"polluted":true},"constructor":"c","prototype":[],"":"empty key","ключ":"значение","a.b":{"c/d":1}}') as Record<
  string,
  unknown
>

/** Deterministic words for the long log (a small LCG: the same text every run). */
function words(seed: number, n: number): string {
  const vocab = ['read', 'file', 'grep', 'Straße', 'naïve', '函数', 'résumé', 'ok', 'diff', 'test', '🚀', 'λ', 'patch', 'build']
  let x = (seed * 2654435761) % 4294967296
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    x = (x * 1664525 + 1013904223) % 4294967296
    out.push(vocab[x % vocab.length]!)
  }
  return out.join(' ')
}

/** The sessions every fixture store holds. Ids fixed, times explicit. */
async function populate(store: Store): Promise<void> {
  let t = 0
  const time = () => T0 + 1000 * t++
  const root = await store.createSession({ id: 'root', cwd: '/home/ana/projekte/weltkarte-🌍' })
  await root.append({ type: 'turn/start', data: { prompt: 'Zeig mir die Karte — 地図を見せて', user: 'ana' }, time: time() })
  await root.append([
    {
      type: 'app/message',
      data: { role: 'user', parts: [{ type: 'text', text: 'Grüße! 👩🏽‍💻 مرحبا e\u0301 "quoted" back\\slash\nline\ttab \u2028 \u0000 end' }] },
      time: time(),
    },
    {
      type: 'app/tool-call',
      data: {
        id: 'call-1',
        name: 'search',
        args: { q: 'karte', filters: { lang: ['de', 'ja'], depth: 3, exact: false, extra: null }, nested: { a: { b: { c: { d: [1, [2, [3, [4, []]]]] } } } } },
      },
      time: time(),
    },
    {
      type: 'app/tool-result',
      data: { callId: 'call-1', ok: true, rows: [{ x: 1.5, y: -0.25, big: 9007199254740991, tiny: 5e-324, e: 1e21 }], secret: MARKER },
      time: time(),
    },
    { type: 'app/odd-keys', data: oddKeys as never, time: time() },
  ])
  await root.append({ type: 'turn/end', data: { ok: true, tokens: { in: 1234, out: 567 } }, time: time() })

  // A continuable subagent with a one-shot child of its own.
  const helper = await root.spawn({
    id: 'root-helper',
    mode: 'continuable',
    label: 'helper ✨ Suche',
    events: [
      { type: 'turn/start', data: { task: 'finde die Dateien' }, time: time() },
      { type: 'app/message', data: { role: 'assistant', text: 'Ich suche…' }, time: time() },
    ],
  })
  const grep = await helper.spawn({
    id: 'root-helper-grep',
    mode: 'one-shot',
    label: 'grep',
    events: [{ type: 'app/tool-call', data: { name: 'grep', args: { pattern: 'Karte|地図' } }, time: time() }],
  })
  await grep.append({ type: 'app/tool-result', data: { matches: ['src/karte.ts:12', 'docs/地図.md:3'] }, time: time() })
  await grep.close()
  await helper.append({ type: 'turn/end', data: { found: 2 }, time: time() })
  await helper.close()

  // A one-shot child without a label, an external record, and a child deleted afterwards.
  const once = await root.spawn({ id: 'root-oneshot', mode: 'one-shot', events: [{ type: 'app/message', data: { text: 'einmal' }, time: time() }] })
  await once.close()
  await root.recordExternal({ childId: 'ext-ci-run-42', label: 'CI run #42' })
  const doomed = await root.spawn({
    id: 'root-doomed',
    mode: 'one-shot',
    label: 'doomed',
    events: [{ type: 'app/message', data: { text: 'gleich weg' }, time: time() }],
  })
  await doomed.close()
  await store.deleteSession('root-doomed')

  await root.append([
    { type: 'turn/start', data: { prompt: 'weiter' }, time: time() },
    { type: 'app/message', data: { role: 'assistant', text: 'Fertig ✅', ids: ['root-helper', 'root-oneshot'] }, time: time() },
    { type: 'turn/end', data: null, time: time() },
  ])

  // A fork in the middle of the first turn, continued on its own.
  const fork = await root.fork({ at: 4, id: 'root-fork' })
  await fork.append([
    { type: 'app/message', data: { role: 'user', text: 'Anderer Weg 🔀' }, time: time() },
    { type: 'turn/end', data: { ok: false }, time: time() },
  ])
  await fork.close()
  await root.close()

  // A long session: turns of 40-odd events, a continuable child spawned half-way.
  const long = await store.createSession({ id: 'long', cwd: '/srv/agent' })
  let n = 0
  for (let turn = 0; n < LONG_EVENTS; turn++) {
    const batch: { type: string; data: never; time: number }[] = [{ type: 'turn/start', data: { turn } as never, time: T0 + 10 * n }]
    for (let k = 0; k < 40 + (turn % 7) && n + batch.length < LONG_EVENTS - 1; k++) {
      const i = n + batch.length
      batch.push({ type: k % 5 === 0 ? 'app/tool-call' : 'app/message', data: { i, text: words(i, 6) } as never, time: T0 + 10 * i })
    }
    batch.push({ type: 'turn/end', data: { turn, events: batch.length + 1 } as never, time: T0 + 10 * (n + batch.length) })
    await long.append(batch)
    n += batch.length
    if (turn === 30) {
      const child = await long.spawn({
        id: 'long-worker',
        mode: 'continuable',
        label: 'worker',
        events: [{ type: 'turn/start', data: { from: 'long' }, time: T0 + 10 * n }],
      })
      await child.append({ type: 'turn/end', data: { done: true }, time: T0 + 10 * n + 5 })
      await child.close()
      n += 1 // the catalog fact
    }
  }
  await long.close()
}

/** An event as it is stored and hashed: seq, type, time, data, in that order. */
const eventJson = (e: SessionEvent) => JSON.stringify({ seq: e.seq, type: e.type, time: e.time, data: e.data })

async function eventsOf(store: Store, id: string): Promise<SessionEvent[]> {
  const view = await store.observe(id)
  const out: SessionEvent[] = []
  for await (const e of view.events()) out.push(e)
  await view.close()
  return out
}

/** Where a session is read as of a point: its ends, thirds, and around history rows and spawns. */
function pointsOf(length: number, extra: number[] = []): number[] {
  const points = [0, 1, Math.floor(length / 3), Math.floor((2 * length) / 3), length - 1, length, ...extra]
  return [...new Set(points.filter((p) => p >= 0 && p <= length))].sort((a, b) => a - b)
}

/** What 0.1 reads from `store`: the expected results of the test. */
async function manifestOf(store: Store, storage: string): Promise<unknown> {
  const headers = await store.listSessions({ limit: 10_000 })
  const sessions: Record<string, unknown> = {}
  for (const header of headers) {
    const id = header.id
    const events = await eventsOf(store, id)
    const view = await store.observe(id)
    const entry: Record<string, unknown> = {
      header: { ...view.header },
      length: events.length,
      values: view.projections.snapshot(),
      children: await view.listChildren({ recursive: true }),
    }
    await view.close()
    if (events.length > 100) {
      entry.eventsSha256 = createHash('sha256').update(events.map(eventJson).join('\n')).digest('hex')
      entry.head = events.slice(0, 3)
      entry.tail = events.slice(-3)
    } else {
      entry.events = events
    }
    const at: Record<string, unknown> = {}
    const extra =
      id === 'long'
        ? [1023, 1024, 1025, 2047, 2048, 2049, 2100, ...catalogSeqs(events).flatMap((s) => [s, s + 1])]
        : catalogSeqs(events).flatMap((s) => [s, s + 1])
    for (const point of pointsOf(events.length, extra)) {
      const then = await store.observe(id, { at: point })
      at[point] = { values: then.projections.snapshot(), children: await then.listChildren({ recursive: true }) }
      await then.close()
    }
    entry.at = at
    sessions[id] = entry
  }
  return {
    format: 1,
    madeBy: 'sessionfold 0.1.0, commit 8403acb (scripts/make-v01-fixtures.ts)',
    storage,
    ids: headers.map((h) => h.id),
    deleted: ['root-doomed'],
    verify: await store.verify(),
    feedHead: await feedHeadOf(store),
    sessions,
  }
}

/**
 * The cursor a replication holds once it pulled everything (changesSince until done): today's
 * code must go on from it, sending every later write.
 */
async function feedHeadOf(store: Store): Promise<unknown> {
  for (let cursor: ChangeCursor | null = null; ; ) {
    const changes = await store.changesSince(cursor)
    cursor = changes.cursor
    if (changes.done) return cursor
  }
}

/** The seqs of a log's catalog facts. */
const catalogSeqs = (events: SessionEvent[]) => events.filter((e) => e.type === 'subagent/catalog').map((e) => e.seq)

const json = (value: unknown) => `${JSON.stringify(value, null, 1)}\n`

async function makeFs(out: string, name: string, options: OpenStoreOptions): Promise<void> {
  const dir = join(out, name)
  await rm(dir, { recursive: true, force: true })
  const store = await openStore({ storage: 'fs', dir, worker: false, ...options })
  await populate(store)
  await store.close()
  await removeEmptyFolders(dir)
  // The manifest is read from a copy, so its reads cannot change the committed folder.
  const copy = await mkdtemp(join(tmpdir(), 'v01-read-'))
  try {
    await cp(dir, join(copy, 'store'), { recursive: true })
    const reader = await openStore({ storage: 'fs', dir: join(copy, 'store'), worker: false, ...options })
    await writeFile(join(out, `${name}.manifest.json`), json(await manifestOf(reader, name)))
    await reader.close()
  } finally {
    await rm(copy, { recursive: true, force: true })
  }
}

/**
 * Removes the store's empty folders (locks/, tmp/, trash/): git keeps no empty folder, so the
 * fixture is then exactly what a checkout holds, here too.
 */
async function removeEmptyFolders(dir: string): Promise<boolean> {
  let empty = true
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || !(await removeEmptyFolders(join(dir, entry.name)))) empty = false
  }
  if (empty) await rm(dir, { recursive: true })
  return empty
}

interface IdbStoreDump {
  keyPath: string | string[] | null
  autoIncrement: boolean
  indexes: string[]
  /** [key, value] in key order, as IndexedDB holds them. */
  rows: [unknown, unknown][]
}

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((res, rej) => {
    r.onsuccess = () => res(r.result)
    r.onerror = () => rej(r.error)
  })
}

/** Every object store of database `name`, raw; values checked to survive JSON unchanged. */
async function dumpIdb(name: string): Promise<unknown> {
  const open = indexedDB.open(name)
  const db = await request(open)
  const stores: Record<string, IdbStoreDump> = {}
  for (const storeName of [...db.objectStoreNames]) {
    const tx = db.transaction(storeName, 'readonly')
    const os = tx.objectStore(storeName)
    if (os.indexNames.length > 0) throw new Error(`${storeName} has indexes: the dump does not keep them`)
    const rows: [unknown, unknown][] = []
    await new Promise<void>((res, rej) => {
      const c = os.openCursor()
      c.onerror = () => rej(c.error)
      c.onsuccess = () => {
        const cursor = c.result
        if (!cursor) return res()
        for (const part of [cursor.key, cursor.value]) {
          if (!isDeepStrictEqual(JSON.parse(JSON.stringify(part)), part)) throw new Error(`${storeName}: ${String(cursor.key)} does not survive JSON`)
        }
        rows.push([cursor.key, cursor.value])
        cursor.continue()
      }
    })
    stores[storeName] = { keyPath: os.keyPath as string | string[] | null, autoIncrement: os.autoIncrement, indexes: [], rows }
  }
  const dump = { format: 1, madeBy: 'sessionfold 0.1.0, commit 8403acb (scripts/make-v01-fixtures.ts)', version: db.version, stores }
  db.close()
  return dump
}

async function makeIdb(out: string): Promise<void> {
  const name = 'sessionfold'
  const store = await openStore({ storage: 'indexeddb', name, worker: false })
  await populate(store)
  await store.close()
  const dump = await dumpIdb(name)
  await writeFile(join(out, 'indexeddb.json'), `${JSON.stringify(dump)}\n`)
  // The manifest from a copy, so its reads cannot change what was dumped.
  const copy = 'sessionfold-read'
  await copyIdb(dump as { version: number; stores: Record<string, IdbStoreDump> }, copy)
  const reader = await openStore({ storage: 'indexeddb', name: copy, worker: false })
  await writeFile(join(out, 'indexeddb.manifest.json'), json(await manifestOf(reader, 'indexeddb')))
  await reader.close()
}

/** The dump loaded again into database `name` (what test/support/idb-fixture.ts does). */
async function copyIdb(dump: { version: number; stores: Record<string, IdbStoreDump> }, name: string): Promise<void> {
  const open = indexedDB.open(name, dump.version)
  open.onupgradeneeded = () => {
    for (const [storeName, s] of Object.entries(dump.stores)) open.result.createObjectStore(storeName, { keyPath: s.keyPath, autoIncrement: s.autoIncrement })
  }
  const db = await request(open)
  const tx = db.transaction(Object.keys(dump.stores), 'readwrite')
  for (const [storeName, s] of Object.entries(dump.stores)) for (const [key, value] of s.rows) tx.objectStore(storeName).put(value, key as IDBValidKey)
  await new Promise<void>((res, rej) => {
    tx.oncomplete = () => res()
    tx.onerror = () => rej(tx.error)
  })
  db.close()
}

async function makePostgres(out: string): Promise<void> {
  const bin = postgresBin()
  if (!bin) throw new Error('PostgreSQL is not installed')
  const cluster = await startCluster({ settings: { fsync: 'off' } })
  try {
    const url = await cluster.createDatabase('fixture')
    const store = await openStore({ storage: 'postgres', url, worker: false })
    await populate(store)
    await store.close()
    const version = await cluster.psql('SELECT version FROM sessionfold.schema_version', 'fixture')
    if (version !== '6') throw new Error(`expected schema version 6, got ${version}`)
    const file = join(out, 'postgres.sql')
    await run(join(bin, 'pg_dump'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(cluster.port),
      '-U',
      'postgres',
      '-d',
      'fixture',
      '--schema=sessionfold',
      '--no-owner',
      '--no-privileges',
      '-f',
      file,
    ])
    // The manifest from a restored copy, so its reads cannot change what was dumped.
    const copy = await cluster.createDatabase('fixture_read')
    await run(join(bin, 'psql'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(cluster.port),
      '-U',
      'postgres',
      '-d',
      'fixture_read',
      '-v',
      'ON_ERROR_STOP=1',
      '-q',
      '-f',
      file,
    ])
    const reader = await openStore({ storage: 'postgres', url: copy, worker: false })
    await writeFile(join(out, 'postgres.manifest.json'), json(await manifestOf(reader, 'postgres')))
    await reader.close()
  } finally {
    await cluster.stop()
  }
}

const args = process.argv.slice(2)
const outAt = args.indexOf('--out')
if (outAt < 0 || !args[outAt + 1]) {
  console.error('usage: npx tsx scripts/make-v01-fixtures.ts --out <folder> [--only fs,fs-encrypted,indexeddb,postgres]')
  process.exit(2)
}
const out = resolve(args[outAt + 1]!)
const onlyAt = args.indexOf('--only')
const only = onlyAt >= 0 ? args[onlyAt + 1]!.split(',') : ['fs', 'fs-encrypted', 'indexeddb', 'postgres']
await mkdir(out, { recursive: true })
if (only.includes('fs')) await makeFs(out, 'fs', {})
if (only.includes('fs-encrypted')) await makeFs(out, 'fs-encrypted', { encryption: { key: keyBytes() } })
if (only.includes('indexeddb')) await makeIdb(out)
if (only.includes('postgres')) await makePostgres(out)
console.log(`fixtures in ${out}:`, (await readdir(out)).join(' '))
