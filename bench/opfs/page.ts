// The in-page part of bench/opfs.ts (npm run bench:opfs), served by Vite from this source tree.
// One call from the driver (window.opfsBench.run) is one run of one system on one workload, in a
// store or database of its own, made for the run and deleted after it:
//   opfs         the page's openStore({ storage: 'opfs', name, durability: 'strict' }) (the engine
//                in its module Web Worker; each append waits for flush())
//   idb          the page's openStore({ name, durability: 'strict' }): IndexedDB, the default
//   dexie        Dexie 4 on IndexedDB with its defaults (no durability hint: the browser's own)
//   dexieStrict  Dexie 4 with chromeTransactionDurability: 'strict'
//   raw          a dedicated worker writing the same bytes through a sync access handle, write +
//                flush() per batch (raw-worker.ts): the physical limit, not a target
// Workloads: 'batched' (batches of `batch` events, each awaited: session.append([...]) or
// bulkAdd) and 'single' (one event per call, each awaited: session.append({...}) or add). Before
// the timed appends each store gets a few untimed ones to a session (key range, file) of their
// own, so that the new worker's code is warm; the time covers the timed appends only.
import Dexie, { type Table } from 'dexie'
import { openStore, type EventInput, type Store } from 'sessionfold'
import type { RawReply, RawRequest } from './raw-worker'
import type { OpfsPage, PageConfig, RunResult, Workload } from './types'
import { keepWarnings, deleteDatabase } from '../support/page-helpers'

const warnings = keepWarnings()

const now = () => performance.now()
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

interface Row {
  sessionId: string
  seq: number
  type: string
  time: number
  data: unknown
}
type EventsDb = Dexie & { events: Table<Row, [string, number]> }

let cfg: PageConfig | undefined
let input: EventInput | undefined
const config = (): PageConfig => {
  if (!cfg) throw new Error('opfsBench.setup() first')
  return cfg
}

/** The event as a store keeps it: its seq, type, time and data. */
const storedRow = (sessionId: string, seq: number): Row => ({ sessionId, seq, type: input!.type, time: Date.now(), data: input!.data ?? null })
const rowJson = (seq: number) => {
  const { sessionId: _sessionId, ...event } = storedRow('', seq)
  return JSON.stringify(event)
}

/** Inputs of a run: `batches` arrays of `batch` ('batched'), or `singles` one-event arrays ('single'). */
const shape = (workload: Workload, prime: boolean): number[] => {
  const c = config()
  if (workload === 'batched') return Array.from({ length: prime ? c.primeBatches : c.events / c.batch }, () => c.batch)
  return Array.from({ length: prime ? c.primeSingles : c.singles }, () => 1)
}

// ---- sessionfold --------------------------------------------------------------------------

async function runSessionfold(system: 'opfs' | 'idb', workload: Workload, name: string): Promise<RunResult> {
  let t0 = now()
  const store: Store = await openStore(system === 'opfs' ? { storage: 'opfs', name, durability: 'strict' } : { name, durability: 'strict' })
  const openMs = now() - t0
  let events = 0
  let ms = 0
  try {
    const append = async (sessionId: string, sizes: number[]) => {
      const session = await store.createSession({ id: sessionId })
      const total = sizes.reduce((a, b) => a + b, 0)
      let lastSeq = -1
      const start = now()
      if (workload === 'batched') for (const k of sizes) lastSeq = (await session.append(Array.from({ length: k }, () => input!))).lastSeq
      else for (let i = 0; i < sizes.length; i++) lastSeq = (await session.append(input!)).lastSeq
      const took = now() - start
      if (lastSeq !== total - 1) throw new Error(`${system} ${workload}: the session ended at seq ${lastSeq}, expected ${total - 1}`)
      await session.close()
      return { total, took }
    }
    await append('prime', shape(workload, true))
    const r = await append('timed', shape(workload, false))
    events = r.total
    ms = r.took
  } finally {
    t0 = now()
    await store.close()
  }
  if (system === 'opfs') await removeFolder(name)
  else await deleteDatabase(name)
  return { events, ms, openMs, cleanupMs: now() - t0 }
}

// ---- Dexie --------------------------------------------------------------------------------

async function runDexie(strict: boolean, workload: Workload, name: string): Promise<RunResult> {
  let t0 = now()
  // Dexie's default: no durability hint (the browser's default); or 'strict', as sessionfold's.
  const db = new Dexie(name, strict ? { chromeTransactionDurability: 'strict' } : {}) as EventsDb
  db.version(1).stores({ events: '[sessionId+seq]' })
  await db.open()
  const openMs = now() - t0
  let events = 0
  let ms = 0
  try {
    const append = async (sessionId: string, sizes: number[]) => {
      let seq = 0
      const total = sizes.reduce((a, b) => a + b, 0)
      const start = now()
      if (workload === 'batched')
        for (const k of sizes) {
          const rows: Row[] = []
          for (let i = 0; i < k; i++) rows.push(storedRow(sessionId, seq++))
          await db.events.bulkAdd(rows)
        }
      else for (let i = 0; i < sizes.length; i++) await db.events.add(storedRow(sessionId, seq++))
      const took = now() - start
      const held = await db.events.where('[sessionId+seq]').between([sessionId, -Infinity], [sessionId, Infinity], true, true).count()
      if (held !== total) throw new Error(`dexie ${workload}: ${held} rows, expected ${total}`)
      return { total, took }
    }
    await append('prime', shape(workload, true))
    const r = await append('timed', shape(workload, false))
    events = r.total
    ms = r.took
  } finally {
    t0 = now()
    db.close()
  }
  // Not Dexie.delete: it warns while the connection closes (its last count's transaction still ending), which is expected here.
  await deleteDatabase(name)
  return { events, ms, openMs, cleanupMs: now() - t0 }
}

// ---- the physical limit -------------------------------------------------------------------

let rawWorker: Worker | undefined
let nextId = 0
const replies = new Map<number, (r: RawReply) => void>()

async function runRaw(workload: Workload, name: string): Promise<RunResult> {
  let t0 = now()
  if (!rawWorker) {
    rawWorker = new Worker(new URL('./raw-worker.ts', import.meta.url), { type: 'module', name: 'opfs-raw' })
    rawWorker.onmessage = (e: MessageEvent<RawReply>) => {
      replies.get(e.data.id)?.(e.data)
      replies.delete(e.data.id)
    }
  }
  // The bytes an append of the same events carries: each event's JSON and a newline, a write per batch (or per event).
  const encoder = new TextEncoder()
  let seq = 0
  const chunksOf = (sizes: number[]) =>
    sizes.map((k) => {
      const lines: string[] = []
      for (let i = 0; i < k; i++) lines.push(`${rowJson(seq++)}\n`)
      return encoder.encode(lines.join(''))
    })
  const prime = chunksOf(shape(workload, true))
  seq = 0
  const sizes = shape(workload, false)
  const chunks = chunksOf(sizes)
  const openMs = now() - t0
  const id = nextId++
  const reply = await new Promise<RawReply>((resolve) => {
    replies.set(id, resolve)
    rawWorker!.postMessage({ id, folder: name, prime, chunks } satisfies RawRequest)
  })
  t0 = now()
  await removeFolder(name)
  if (!reply.ok) throw new Error(`raw OPFS writes: ${reply.error}`)
  return { events: sizes.reduce((a, b) => a + b, 0), ms: reply.ms, openMs, cleanupMs: now() - t0 }
}

// ---- deleting -----------------------------------------------------------------------------

/** Removes the folder `name` of the origin's private file system, trying again while a closing worker still holds a file in it. */
async function removeFolder(name: string): Promise<void> {
  const root = await navigator.storage.getDirectory()
  for (const start = now(); ; ) {
    try {
      await root.removeEntry(name, { recursive: true })
      return
    } catch (err) {
      if ((err as Error).name === 'NotFoundError') return
      if (now() - start > 10_000) throw new Error(`could not remove the OPFS folder ${name}: ${err}`)
      await sleep(50)
    }
  }
}

// ---- the page's API -----------------------------------------------------------------------

const api: OpfsPage = {
  info: () => ({
    userAgent: navigator.userAgent,
    hardwareConcurrency: navigator.hardwareConcurrency,
    opfs: typeof navigator.storage?.getDirectory === 'function',
  }),

  setup(c) {
    if (c.events % c.batch !== 0) throw new Error(`events (${c.events}) must be a multiple of batch (${c.batch})`)
    cfg = c
    input = JSON.parse(c.inputJson) as EventInput
    const sample = Array.from({ length: 100 }, (_, i) => new TextEncoder().encode(rowJson(c.events - 100 + i)).length)
    return { eventJsonBytes: sample.reduce((a, b) => a + b, 0) / sample.length }
  },

  async run(system, workload, tag) {
    const c = config()
    await sleep(c.settleMs)
    const name = `opfs-bench-${c.stamp}-${tag}-${system}-${workload}`
    switch (system) {
      case 'opfs':
      case 'idb':
        return runSessionfold(system, workload, name)
      case 'dexie':
      case 'dexieStrict':
        return runDexie(system === 'dexieStrict', workload, name)
      case 'raw':
        return runRaw(workload, name)
    }
  },

  async leftovers() {
    const prefix = `opfs-bench-${config().stamp}-`
    const out = (await indexedDB.databases()).flatMap((d) => (d.name?.startsWith(prefix) ? [`IndexedDB ${d.name}`] : []))
    const root = (await navigator.storage.getDirectory()) as FileSystemDirectoryHandle & { keys(): AsyncIterable<string> }
    for await (const key of root.keys()) if (key.startsWith(prefix)) out.push(`OPFS ${key}`)
    return out
  },

  warnings: () => [...warnings],
}

;(window as unknown as { opfsBench?: OpfsPage }).opfsBench = api
