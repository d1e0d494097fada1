// The in-page part of the browser benchmark (served by vite, driven by bench/browser/run.ts,
// which describes the scenarios): real IndexedDB on disk in headless Chromium. It takes raw
// samples only; run.ts summarises and reports.
//
// 1. Appends: sessionfold (openStore with its module Web Worker, durability 'strict',
//    session.append(array)) against raw idb puts of the same objects (one strict readwrite
//    transaction per batch, commit() once the puts are made, awaiting tx.done), back to back in
//    each round, the order alternating. The raw idb rows all call commit() after their last
//    request, as sessionfold's adapter does: the best raw idb can do.
// 2. Append-to-subscriber latency of `subagentCatalog`: one catalog fact per sample, timed in
//    the subscriber's listener when it sees the new entry count. sessionfold's writing handle
//    and an observer handle (store.observe) hear the same append; an observer in a second store
//    (its own worker, as another tab has) is sampled in a block of its own. Dexie liveQuery
//    recomputes the catalog from all events of the session, with Dexie's default cache
//    (optimistic: the entry shows before the commit) and with cache 'disabled' (the query runs
//    again after the commit). Raw idb transactions give the commit floor.
// 3. A catalog fact at two catalog sizes (issue 14's figure): session.recordExternal({ childId })
//    on a session whose catalog holds 10,000 entries and on one holding 100, each timed from the
//    call until the writer's own mirror (session.projections.get('subagentCatalog')) holds it.
import Dexie, { liveQuery, type Table } from 'dexie'
import { openDB, type IDBPDatabase } from 'idb'
import { openStore, type EventInput, type Session, type SessionView, type Store } from 'sessionfold'
import type { Json } from 'sessionfold'
import { frameProblem } from '../../src/client/answer-checks'
import {
  COUNTS_CHANNEL, LATENCY_SYSTEMS, type BenchEntry, type BrowserBenchConfig, type BrowserBenchResults, type CatalogResult,
  type LatencyScenarioConfig, type LatencyScenarioResult, type LatencySystem, type TxReport,
} from './types'

const CATALOG = 'subagent/catalog'
const TIME0 = 1_700_000_000_000
const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '
const WAIT_MS = 20_000

const warnings: string[] = []
for (const level of ['warn', 'error'] as const) {
  const original = console[level].bind(console)
  console[level] = (...args: unknown[]) => {
    warnings.push(`${level}: ${args.map(String).join(' ')}`)
    original(...args)
  }
}

const log = (msg: string) => console.log(`[bench] ${msg}`)
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const now = () => performance.now()

// ---- events -------------------------------------------------------------------------------

interface StoredEvent {
  seq: number
  type: string
  time: number
  data: Json
}

/** What Dexie stores: the event with its session id, the compound primary key [sessionId+seq]. */
interface DexieEvent extends StoredEvent {
  sessionId: string
}

/** Pads so an event with a 5-digit seq encodes to `bytes` of JSON, as sessionfold stores it. */
function padFor(bytes: number): string {
  const base = JSON.stringify({ seq: 10_000, type: 'message/assistant', time: TIME0, data: { role: 'assistant', text: '' } }).length
  const n = Math.max(0, bytes - base)
  return WORDS.repeat(Math.ceil(n / WORDS.length) + 1).slice(0, n)
}

function message(seq: number, pad: string): EventInput {
  return { type: 'message/assistant', time: TIME0 + seq, data: { role: 'assistant', text: pad } }
}

function catalogFact(childId: string, time = Date.now()): EventInput {
  return { type: CATALOG, time, data: { v: 2, childId, childCreatedAt: 1, mode: 'one-shot' } }
}

const stored = (seq: number, e: EventInput): StoredEvent => ({ seq, type: e.type, time: e.time ?? TIME0, data: e.data ?? null })

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

const jsonBytes = (events: readonly StoredEvent[]) =>
  events.reduce((n, e) => n + new TextEncoder().encode(JSON.stringify(e)).length, 0) / Math.max(1, events.length)

/** Waits for a subscriber's entry count; the time is taken in the listener itself. */
class Watcher {
  count = -1
  private waits: { n: number; resolve: (t: number) => void; timer: ReturnType<typeof setTimeout> }[] = []

  constructor(readonly label: string) {}

  see(n: number): void {
    const t = now()
    this.count = n
    this.waits = this.waits.filter((w) => {
      if (n < w.n) return true
      clearTimeout(w.timer)
      w.resolve(t)
      return false
    })
  }

  /** Resolves with the time the count first reached `n`. Call it before the write. */
  until(n: number): Promise<number> {
    if (this.count >= n) return Promise.resolve(now())
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: count stayed at ${this.count}, waited for ${n}`)), WAIT_MS)
      this.waits.push({ n, resolve, timer })
    })
  }
}

// ---- 1. appends ---------------------------------------------------------------------------

async function appendPhase(cfg: BrowserBenchConfig, raw: IDBPDatabase): Promise<BrowserBenchResults['appends'] & { eventJsonBytes: number }> {
  const pad = padFor(cfg.eventBytes)
  const inputs = Array.from({ length: cfg.events }, (_, seq) => message(seq, pad))
  const batches = chunk(inputs, cfg.batch)
  // The objects sessionfold stores (it parses each event back from its JSON: { seq, type, time, data }).
  const rawBatches = chunk(inputs.map((e, seq) => stored(seq, e)), cfg.batch)
  const eventJsonBytes = jsonBytes(rawBatches.flat())
  log(`appends: ${cfg.events} events of ${eventJsonBytes.toFixed(1)} bytes of JSON, batches of ${cfg.batch}`)

  const store = await openStore({ name: `bench-appends-${cfg.stamp}`, worker: true, durability: 'strict' })
  // For reference: the same with checkpoints pushed past the run (they are a cache of the
  // fold; the log alone is the truth), to show what they cost the append path.
  const deferred = await openStore({
    name: `bench-appends-deferred-${cfg.stamp}`, worker: true, durability: 'strict',
    checkpoint: { everyEvents: 1_000_000_000, everyMs: 3_600_000 },
  })
  let next = 0
  // Each run's events stay until the phase ends, then all are deleted. Deleted after each run,
  // they slowed the same database's next run when it came soon after (10,000 deletions in the
  // LevelDB it writes to): the system placed first, which runs twice in a row across rounds,
  // measured 0.81-0.88 of an identical store placed elsewhere, whichever store it was.
  const cleanups: (() => Promise<unknown>)[] = []

  const runSessionfold = async (s: Store): Promise<number> => {
    const session = await s.createSession({ id: `appends-${next++}` })
    const t0 = now()
    for (const b of batches) await session.append(b)
    const ms = now() - t0
    if (session.projections.asOfSeq !== cfg.events - 1) throw new Error(`sessionfold holds ${session.projections.asOfSeq + 1} events, expected ${cfg.events}`)
    await session.close()
    cleanups.push(() => s.deleteSession(session.id))
    return (cfg.events / ms) * 1000
  }

  const runIdb = async (): Promise<number> => {
    const id = `raw-${next++}`
    const t0 = now()
    for (const b of rawBatches) {
      const tx = raw.transaction('events', 'readwrite', { durability: 'strict' })
      for (const e of b) void tx.store.put(e, [id, e.seq])
      tx.commit() // as sessionfold's adapter does: commit without waiting for the puts' results to come back
      await tx.done
    }
    const ms = now() - t0
    const range = IDBKeyRange.bound([id, 0], [id, Infinity])
    const held = await raw.count('events', range)
    if (held !== cfg.events) throw new Error(`raw idb holds ${held} events, expected ${cfg.events}`)
    cleanups.push(() => raw.delete('events', range))
    return (cfg.events / ms) * 1000
  }

  type Key = 'sessionfold' | 'idb' | 'sessionfoldDeferred'
  const steps: [Key, () => Promise<number>][] = [
    ['sessionfold', () => runSessionfold(store)],
    ['idb', runIdb],
    ['sessionfoldDeferred', () => runSessionfold(deferred)],
  ]
  const out: BrowserBenchResults['appends'] = { sessionfold: [], idb: [], sessionfoldDeferred: [], order: [] }
  // Round 0 warms up (JIT, workers, database files) and is not recorded. sessionfold and raw
  // idb always run back to back (so do raw idb and the reference); who goes first alternates.
  for (let r = 0; r <= cfg.appendRounds; r++) {
    const order = r % 2 === 1 ? steps : [...steps].reverse()
    const line: string[] = []
    for (const [key, step] of order) {
      // A pause before each run: IndexedDB (one LevelDB per origin) compacts what the last
      // run wrote in the background; let that settle rather than land on the next.
      await sleep(cfg.settleMs)
      const v = await step()
      if (r > 0) out[key].push(v)
      line.push(`${key} ${v.toFixed(0)}`)
    }
    if (r > 0) out.order.push(order.map(([k]) => k).join(','))
    log(`appends ${r === 0 ? 'warm-up' : `round ${r}/${cfg.appendRounds}`}: ${line.join(', ')} events/s`)
  }
  for (const cleanup of cleanups) await cleanup()
  await deferred.close()
  await store.close()
  return { ...out, eventJsonBytes }
}

/** One append run through the counting worker: which transactions the engine makes, and their time. */
async function diagnose(cfg: BrowserBenchConfig): Promise<BrowserBenchResults['diagnostics']> {
  const pad = padFor(cfg.eventBytes)
  const batches = chunk(Array.from({ length: cfg.events }, (_, seq) => message(seq, pad)), cfg.batch)
  const channel = new BroadcastChannel(COUNTS_CHANNEL)
  const report = () => new Promise<TxReport>((resolve) => {
    channel.onmessage = (e: MessageEvent) => resolve((e.data as { counts: TxReport }).counts)
    channel.postMessage('report')
  })
  const store = await openStore({
    name: `bench-diag-${cfg.stamp}`, worker: true, durability: 'strict',
    workerUrl: new URL('./counting-worker.ts', import.meta.url),
  })
  const session = await store.createSession({ id: 'diag' })
  await sleep(cfg.settleMs)
  channel.postMessage('reset')
  await sleep(50)
  const t0 = now()
  for (const b of batches) await session.append(b)
  const runMs = now() - t0
  await sleep(200) // checkpoints started by the last appends complete
  const { kinds: tx, appends } = await report()
  await store.close()
  channel.close()
  log(`diagnostics: ${cfg.events} events in ${runMs.toFixed(0)} ms; transactions: ${Object.entries(tx).map(([k, v]) => `${k} x${v.count}`).join(', ')}`)
  return { events: cfg.events, runMs, tx, appends }
}

/**
 * Median ms of one call of `fn` over `n` samples; each sample repeats it for at least 5 ms
 * (the page's clock is coarse: 0.1 ms steps).
 */
function medianTime(n: number, fn: () => unknown): number {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    let reps = 0
    const t0 = now()
    let t = t0
    do {
      fn()
      reps++
      t = now()
    } while (t - t0 < 5)
    times.push((t - t0) / reps)
  }
  return times.sort((a, b) => a - b)[n >> 1]!
}

// ---- 2. latency ---------------------------------------------------------------------------

type CatalogDb = Dexie & { events: Table<DexieEvent, [string, number]> }

function openDexie(name: string, cache: 'immutable' | 'disabled'): CatalogDb {
  const db = new Dexie(name, { chromeTransactionDurability: 'strict', cache }) as CatalogDb
  db.version(1).stores({ events: '[sessionId+seq]' })
  return db
}

interface Entry {
  id: string
  createdAt: number
  mode: string
  label?: string
  seq: number
}

/** The catalog as a liveQuery recomputes it: every event of the session, the facts mapped to entries. */
function catalogQuery(db: CatalogDb, sessionId: string) {
  return liveQuery(async () => {
    const events = await db.events.where('[sessionId+seq]').between([sessionId, -Infinity], [sessionId, Infinity], true, true).toArray()
    const entries: Entry[] = []
    for (const e of events) {
      if (e.type !== CATALOG) continue
      const d = e.data as { childId: string; childCreatedAt: number; mode: string; label?: string }
      entries.push(d.label === undefined
        ? { id: d.childId, createdAt: d.childCreatedAt, mode: d.mode, seq: e.seq }
        : { id: d.childId, createdAt: d.childCreatedAt, mode: d.mode, label: d.label, seq: e.seq })
    }
    return entries
  })
}

const emptyRound = (): Record<LatencySystem, number[]> =>
  Object.fromEntries(LATENCY_SYSTEMS.map((s) => [s, [] as number[]])) as unknown as Record<LatencySystem, number[]>

async function latencyScenario(sc: LatencyScenarioConfig, cfg: BrowserBenchConfig, raw: IDBPDatabase): Promise<LatencyScenarioResult> {
  const pad = padFor(cfg.eventBytes)
  const sessionId = 'lat'
  const prefill = Array.from({ length: sc.prefill }, (_, i) =>
    (i + 1) % sc.catalogEvery === 0 ? catalogFact(`pre-${i}`, TIME0 + i) : message(i, pad))
  const catalogAtStart = prefill.filter((e) => e.type === CATALOG).length
  const prefillEventBytes = jsonBytes(prefill.map((e, seq) => stored(seq, e)))
  log(`latency ${sc.name}: ${sc.prefill} events (${prefillEventBytes.toFixed(0)} bytes of JSON on average) with ${catalogAtStart} catalog facts`)

  // sessionfold: a writer and an observer in one store, a second store (its own worker) for the cross-worker observer.
  const name = `bench-lat-${sc.name}-${cfg.stamp}`
  const store: Store = await openStore({ name, worker: true, durability: 'strict' })
  const other: Store = await openStore({ name, worker: true, durability: 'strict' })
  const session: Session = await store.createSession({ id: sessionId })
  let t0 = now()
  for (const b of chunk(prefill, cfg.prefillBatch)) await session.append(b)
  const sfPrefillMs = now() - t0
  const observer: SessionView = await store.observe(sessionId)
  const wWriter = new Watcher('sessionfold writer')
  const wObserver = new Watcher('sessionfold observer')
  const unsubs: (() => void)[] = [
    session.projections.subscribe('subagentCatalog', (v) => wWriter.see(v?.length ?? 0)),
    observer.projections.subscribe('subagentCatalog', (v) => wObserver.see(v?.length ?? 0)),
  ]

  // Dexie: the same events (with their session id) in two databases, default cache and none.
  const dx = openDexie(`${name}-dexie`, 'immutable')
  const dxn = openDexie(`${name}-dexie-nocache`, 'disabled')
  const rows = prefill.map((e, seq): DexieEvent => ({ sessionId, ...stored(seq, e) }))
  const prefillMs = { sessionfold: sfPrefillMs, dexie: 0, dexieNoCache: 0 }
  for (const [db, key] of [[dx, 'dexie'], [dxn, 'dexieNoCache']] as const) {
    t0 = now()
    for (const b of chunk(rows, cfg.prefillBatch)) await db.events.bulkAdd(b)
    prefillMs[key] = now() - t0
  }
  const wDexie = new Watcher('Dexie liveQuery (default cache)')
  const wDexieN = new Watcher('Dexie liveQuery (cache disabled)')
  const subs = [
    catalogQuery(dx, sessionId).subscribe({ next: (v) => wDexie.see(v.length), error: (e: unknown) => console.error('liveQuery', e) }),
    catalogQuery(dxn, sessionId).subscribe({ next: (v) => wDexieN.see(v.length), error: (e: unknown) => console.error('liveQuery', e) }),
  ]
  for (const w of [wWriter, wObserver, wDexie, wDexieN]) await w.until(catalogAtStart)
  log(`latency ${sc.name}: prefilled in ${prefillMs.sessionfold.toFixed(0)} ms (sessionfold), ${prefillMs.dexie.toFixed(0)} ms (Dexie bulkAdd)`)

  let sfSeq = sc.prefill
  let dxSeq = sc.prefill
  let dxnSeq = sc.prefill
  let floorSeq = 0
  let facts = 0
  const childId = () => `child-${facts++}`

  type Block = { name: string; run: (n: number, into: Record<LatencySystem, number[]>) => Promise<void> }
  const blocks: Block[] = [
    {
      name: 'sessionfold',
      async run(n, into) {
        for (let k = 0; k < n; k++) {
          const target = sfSeq - sc.prefill + catalogAtStart + 1
          const seen = [wWriter.until(target), wObserver.until(target)]
          const start = now()
          const appended = session.append(catalogFact(childId())).then(() => now())
          const [tw, to, ta] = await Promise.all([...seen, appended])
          into.sfWriter.push(tw! - start)
          into.sfObserver.push(to! - start)
          into.sfAppend.push(ta! - start)
          sfSeq++
          await sleep(cfg.gapMs)
        }
      },
    },
    {
      name: 'sessionfold, other store',
      async run(n, into) {
        const view = await other.observe(sessionId)
        const w = new Watcher('sessionfold observer in a second store')
        const unsub = view.projections.subscribe('subagentCatalog', (v) => w.see(v?.length ?? 0))
        await w.until(sfSeq - sc.prefill + catalogAtStart)
        await sleep(cfg.gapMs)
        for (let k = 0; k < n; k++) {
          const target = sfSeq - sc.prefill + catalogAtStart + 1
          const seen = w.until(target)
          const start = now()
          const appended = session.append(catalogFact(childId()))
          into.sfOtherStore.push((await seen) - start)
          await appended
          sfSeq++
          await sleep(cfg.gapMs)
        }
        unsub()
        await view.close()
      },
    },
    {
      name: 'Dexie',
      async run(n, into) {
        for (let k = 0; k < n; k++) {
          const target = dxSeq - sc.prefill + catalogAtStart + 1
          const seen = wDexie.until(target)
          const start = now()
          const added = dx.events.add({ sessionId, ...stored(dxSeq, catalogFact(childId())) }).then(() => now())
          const [t, ta] = await Promise.all([seen, added])
          into.dexie.push(t - start)
          into.dexieAdd.push(ta - start)
          dxSeq++
          await sleep(cfg.gapMs)
        }
      },
    },
    {
      name: 'Dexie, cache disabled',
      async run(n, into) {
        for (let k = 0; k < n; k++) {
          const target = dxnSeq - sc.prefill + catalogAtStart + 1
          const seen = wDexieN.until(target)
          const start = now()
          const added = dxn.events.add({ sessionId, ...stored(dxnSeq, catalogFact(childId())) })
          into.dexieNoCache.push((await seen) - start)
          await added
          dxnSeq++
          await sleep(cfg.gapMs)
        }
      },
    },
    {
      name: 'raw idb put',
      async run(n, into) {
        for (let k = 0; k < n; k++) {
          const e = stored(floorSeq, catalogFact(childId()))
          const start = now()
          const tx = raw.transaction('events', 'readwrite', { durability: 'strict' })
          void tx.store.put(e, [`floor-${sc.name}`, floorSeq++])
          tx.commit()
          await tx.done
          into.idbPut.push(now() - start)
          await sleep(cfg.gapMs)
        }
      },
    },
    {
      // The shape of sessionfold's append transaction (src/backends/indexeddb/index.ts): read the meta
      // row, then put the event and the new meta row, in one strict transaction.
      name: 'raw idb, append-shaped transaction',
      async run(n, into) {
        const key = `floor-${sc.name}-tx`
        for (let k = 0; k < n; k++) {
          const start = now()
          const tx = raw.transaction(['sessions', 'events'], 'readwrite', { durability: 'strict' })
          const meta = ((await tx.objectStore('sessions').get(key)) as { length: number } | undefined) ?? { length: 0 }
          const e = stored(meta.length, catalogFact(childId()))
          void tx.objectStore('events').put(e, [key, e.seq])
          void tx.objectStore('sessions').put({ length: meta.length + 1 }, key)
          tx.commit()
          await tx.done
          into.idbAppendTx.push(now() - start)
          await sleep(cfg.gapMs)
        }
      },
    },
  ]

  const rounds: Record<LatencySystem, number[]>[] = []
  for (let r = 0; r <= cfg.latencyRounds; r++) {
    const into = emptyRound()
    const order = [...blocks.slice(r % blocks.length), ...blocks.slice(0, r % blocks.length)]
    const n = r === 0 ? Math.min(3, cfg.samplesPerBlock) : cfg.samplesPerBlock
    for (const b of order) await b.run(n, into)
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? NaN
    log(`latency ${sc.name} ${r === 0 ? 'warm-up' : `round ${r}/${cfg.latencyRounds}`}: ` +
      `writer ${med(into.sfWriter).toFixed(1)}, observer ${med(into.sfObserver).toFixed(1)}, other store ${med(into.sfOtherStore).toFixed(1)}, ` +
      `Dexie ${med(into.dexie).toFixed(1)}, Dexie no cache ${med(into.dexieNoCache).toFixed(1)}, idb put ${med(into.idbPut).toFixed(1)}, idb append tx ${med(into.idbAppendTx).toFixed(1)} ms (medians)`)
    if (r > 0) rounds.push(into)
  }

  // The catalogs agree: every fact appended is seen, in every system.
  const sfEntries = session.projections.get('subagentCatalog')?.length
  if (sfEntries !== wWriter.count || sfEntries !== catalogAtStart + (sfSeq - sc.prefill)) throw new Error(`sessionfold catalog holds ${sfEntries} entries`)
  if (wDexie.count !== catalogAtStart + (dxSeq - sc.prefill)) throw new Error(`Dexie catalog holds ${wDexie.count} entries`)

  // What one frame of this session's values costs the page: its check, and a structured clone.
  const snapshot = session.projections.snapshot()
  const frame = { n: 1, sessionId, seq: snapshot.asOfSeq, values: snapshot.values, faults: {} }
  const frameCost = {
    catalogEntries: sfEntries,
    validateMs: medianTime(9, () => {
      if (frameProblem(frame) !== undefined) throw new Error('the frame check failed')
    }),
    cloneMs: medianTime(9, () => structuredClone(snapshot.values)),
  }

  for (const u of unsubs) u()
  for (const s of subs) s.unsubscribe()
  await observer.close()
  await session.close()
  await other.close()
  await store.close()
  dx.close()
  dxn.close()
  return { name: sc.name, prefill: sc.prefill, catalogEvery: sc.catalogEvery, reference: sc.reference, catalogAtStart, prefillEventBytes, prefillMs, rounds, frameCost }
}

// ---- 3. a catalog fact at two catalog sizes -------------------------------------------------

const catalogLength = (view: SessionView): number => view.projections.get('subagentCatalog')?.length ?? 0

/** Resolves once the handle's catalog holds `length` entries (or more). */
function untilCatalogLength(view: SessionView, length: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false
    let unsubscribe: (() => void) | undefined
    const timer = setTimeout(() => {
      done = true
      unsubscribe?.()
      reject(new Error(`catalog stayed at ${catalogLength(view)} entries, waited for ${length}`))
    }, WAIT_MS)
    unsubscribe = view.projections.subscribe('subagentCatalog', (value) => {
      if (done || (value?.length ?? 0) < length) return
      done = true
      clearTimeout(timer)
      unsubscribe?.()
      resolve()
    })
    if (done) unsubscribe()
  })
}

/**
 * Issue 14's catalog figure, through the page's openStore() (its Web Worker, IndexedDB,
 * strict): recordExternal on a session whose catalog holds `large` entries against one holding
 * `small`, from the call until the writer's own mirror holds the new entry. The large catalog is
 * filled once with recordExternal calls, `fillChunk` at once (untimed), and grows by one entry
 * per sample over the rounds; each small run gets a new session filled to `small`. The two
 * sizes run back to back in every round, the order alternating; round 0 warms up.
 */
async function catalogPhase(cfg: BrowserBenchConfig): Promise<CatalogResult> {
  const c = cfg.catalog
  const store = await openStore({ name: `bench-catalog-${cfg.stamp}`, worker: true, durability: 'strict' })
  let external = 0
  const fill = async (session: Session, count: number) => {
    const target = catalogLength(session) + count
    for (let done = 0; done < count; done += c.fillChunk) {
      const k = Math.min(c.fillChunk, count - done)
      await Promise.all(Array.from({ length: k }, () => session.recordExternal({ childId: `ext-${external++}` })))
    }
    if (catalogLength(session) !== target) throw new Error(`catalog holds ${catalogLength(session)} entries after filling, expected ${target}`)
  }
  const samples = async (session: Session, n: number): Promise<number[]> => {
    const from = catalogLength(session)
    const out: number[] = []
    for (let i = 0; i < n; i++) {
      const expected = from + i + 1
      const t0 = now()
      await session.recordExternal({ childId: `ext-${external++}` })
      // recordExternal resolves once this handle's values reflect it; should they lag, wait for them.
      if (catalogLength(session) < expected) await untilCatalogLength(session, expected)
      out.push(now() - t0)
      if (catalogLength(session) !== expected) throw new Error(`catalog holds ${catalogLength(session)} entries, expected ${expected}`)
      await sleep(c.paceMs)
    }
    return out
  }

  const t0 = now()
  const large = await store.createSession({ id: 'catalog-large' })
  await fill(large, c.large)
  const fillMs = now() - t0
  log(`catalog: filled ${c.large} entries with recordExternal (${c.fillChunk} at once) in ${fillMs.toFixed(0)} ms`)
  await sleep(cfg.settleMs)

  const out: CatalogResult = { small: [], large: [], smallSamples: [], largeSamples: [], lengths: { small: [], large: [] }, fillMs, order: [] }
  let smallRuns = 0
  const steps = {
    async small(n: number) {
      const session = await store.createSession({ id: `catalog-small-${smallRuns++}` })
      await fill(session, c.small)
      await sleep(cfg.settleMs)
      const from = catalogLength(session)
      const xs = await samples(session, n)
      await session.close()
      await store.deleteSession(session.id)
      return { from, xs }
    },
    async large(n: number) {
      const from = catalogLength(large)
      return { from, xs: await samples(large, n) }
    },
  }
  for (let r = 0; r <= c.rounds; r++) {
    const order = (r % 2 === 1 ? ['small', 'large'] : ['large', 'small']) as ('small' | 'large')[]
    const line: string[] = []
    for (const size of order) {
      const { from, xs } = await steps[size](r === 0 ? Math.min(10, c.samples) : c.samples)
      const m = [...xs].sort((a, b) => a - b)[xs.length >> 1]!
      if (r > 0) {
        out[size].push(m)
        out[`${size}Samples`].push(...xs)
        out.lengths[size].push(from)
      }
      line.push(`${size} (${from} entries) ${m.toFixed(2)}`)
    }
    if (r > 0) out.order.push(order.join(','))
    log(`catalog ${r === 0 ? 'warm-up' : `round ${r}/${c.rounds}`}: ${line.join(', ')} ms (medians)`)
  }
  await large.close()
  await store.close()
  return out
}

// ---- entry --------------------------------------------------------------------------------

const run: BenchEntry = async (cfg) => {
  const raw = await openDB(`bench-raw-${cfg.stamp}`, 1, {
    upgrade(db) {
      db.createObjectStore('events') // keys [sessionId, seq], out of line, as the adapter does
      db.createObjectStore('sessions') // meta rows, for the append-shaped transaction
    },
  })
  const out: BrowserBenchResults = { userAgent: navigator.userAgent, latency: [], warnings }
  if (cfg.phases.includes('appends')) {
    const { eventJsonBytes, ...appends } = await appendPhase(cfg, raw)
    Object.assign(out, { eventJsonBytes, appends, diagnostics: await diagnose(cfg) })
  }
  if (cfg.phases.includes('catalog')) out.catalog = await catalogPhase(cfg)
  if (cfg.phases.includes('latency')) for (const sc of cfg.scenarios) out.latency.push(await latencyScenario(sc, cfg, raw))
  raw.close()
  return out
}

;(window as unknown as { sessionfoldBench?: BenchEntry }).sessionfoldBench = run
