// Append-to-subscriber latency in the browser benchmark's page (driven by bench/browser/run.ts):
// one catalog fact per sample, timed in each subscriber's listener when it sees the new entry
// count; sessionfold's writer and observer handles, an observer in a second store (another tab),
// Dexie liveQuery with its default cache and with cache 'disabled', and raw idb commit floors.
import Dexie, { liveQuery, type Table } from 'dexie'
import type { IDBPDatabase } from 'idb'
import { openStore, type Session, type SessionView, type Store } from 'sessionfold'
import { frameProblem } from '../../src/client/answer-checks'
import { LATENCY_SYSTEMS, type BrowserBenchConfig, type LatencyScenarioConfig, type LatencyScenarioResult, type LatencySystem } from './types'
import { CATALOG, TIME0, Watcher, catalogFact, chunk, jsonBytes, log, medianTime, message, now, padFor, sleep, stored, type DexieEvent } from './page-common'

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
      entries.push(
        d.label === undefined
          ? { id: d.childId, createdAt: d.childCreatedAt, mode: d.mode, seq: e.seq }
          : { id: d.childId, createdAt: d.childCreatedAt, mode: d.mode, label: d.label, seq: e.seq },
      )
    }
    return entries
  })
}

const emptyRound = (): Record<LatencySystem, number[]> =>
  Object.fromEntries(LATENCY_SYSTEMS.map((s) => [s, [] as number[]])) as unknown as Record<LatencySystem, number[]>

export async function latencyScenario(sc: LatencyScenarioConfig, cfg: BrowserBenchConfig, raw: IDBPDatabase): Promise<LatencyScenarioResult> {
  const pad = padFor(cfg.eventBytes)
  const sessionId = 'lat'
  const prefill = Array.from({ length: sc.prefill }, (_, i) => ((i + 1) % sc.catalogEvery === 0 ? catalogFact(`pre-${i}`, TIME0 + i) : message(i, pad)))
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
  for (const [db, key] of [
    [dx, 'dexie'],
    [dxn, 'dexieNoCache'],
  ] as const) {
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
    log(
      `latency ${sc.name} ${r === 0 ? 'warm-up' : `round ${r}/${cfg.latencyRounds}`}: ` +
        `writer ${med(into.sfWriter).toFixed(1)}, observer ${med(into.sfObserver).toFixed(1)}, other store ${med(into.sfOtherStore).toFixed(1)}, ` +
        `Dexie ${med(into.dexie).toFixed(1)}, Dexie no cache ${med(into.dexieNoCache).toFixed(1)}, idb put ${med(into.idbPut).toFixed(1)}, idb append tx ${med(into.idbAppendTx).toFixed(1)} ms (medians)`,
    )
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
  return {
    name: sc.name,
    prefill: sc.prefill,
    catalogEvery: sc.catalogEvery,
    reference: sc.reference,
    catalogAtStart,
    prefillEventBytes,
    prefillMs,
    rounds,
    frameCost,
  }
}
