// The in-page part of the browser benchmark (served by vite, driven by bench/browser/run.ts,
// which describes the scenarios): real IndexedDB on disk in headless Chromium. It takes raw
// samples only; run.ts summarises and reports. The latency scenarios are in ./latency.ts.
import { openDB, type IDBPDatabase } from 'idb'
import { openStore, type Session, type Store } from 'sessionfold'
import { latencyScenario } from './latency'
import { catalogLength, chunk, jsonBytes, log, message, now, padFor, sleep, stored, untilCatalogLength, warnings } from './page-common'
import type { BenchEntry, BrowserBenchConfig, BrowserBenchResults, CatalogResult } from './types'

// ---- 1. appends ---------------------------------------------------------------------------

async function appendPhase(cfg: BrowserBenchConfig, raw: IDBPDatabase): Promise<BrowserBenchResults['appends'] & { eventJsonBytes: number }> {
  const pad = padFor(cfg.eventBytes)
  const inputs = Array.from({ length: cfg.events }, (_, seq) => message(seq, pad))
  const batches = chunk(inputs, cfg.batch)
  // The objects sessionfold stores (it parses each event back from its JSON: { seq, type, time, data }).
  const rawBatches = chunk(
    inputs.map((e, seq) => stored(seq, e)),
    cfg.batch,
  )
  const eventJsonBytes = jsonBytes(rawBatches.flat())
  log(`appends: ${cfg.events} events of ${eventJsonBytes.toFixed(1)} bytes of JSON, batches of ${cfg.batch}`)

  const store = await openStore({ name: `bench-appends-${cfg.stamp}`, worker: true, durability: 'strict' })
  // For reference: the same with checkpoints pushed past the run (they are a cache of the
  // fold; the log alone is the truth), to show what they cost the append path.
  const deferred = await openStore({
    name: `bench-appends-deferred-${cfg.stamp}`,
    worker: true,
    durability: 'strict',
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

// ---- 3. a catalog fact at two catalog sizes -------------------------------------------------

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
    Object.assign(out, { eventJsonBytes, appends })
  }
  if (cfg.phases.includes('catalog')) out.catalog = await catalogPhase(cfg)
  if (cfg.phases.includes('latency')) for (const sc of cfg.scenarios) out.latency.push(await latencyScenario(sc, cfg, raw))
  raw.close()
  return out
}

;(window as unknown as { sessionfoldBench?: BenchEntry }).sessionfoldBench = run
