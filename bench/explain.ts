// The "why" below the targets table of BENCHMARKS.md: for each target that is missed or within
// reach of its line, what limits it, with the figures of this run filled in from results.json
// (the reasoning is written here once; the numbers are never typed by hand).
import { fmt, type Summary } from './stats'
import type { SuiteResults, Target } from './report'

// biome-ignore lint/suspicious/noExplicitAny: results.json is read back as the benches wrote it
type Any = any

const range = (s: Summary, d = 2) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`

export function explain(res: SuiteResults, targets: Target[]): string {
  const by = (id: string) => targets.find((t) => t.id === id)
  const out: string[] = ['### Misses and near misses: what limits them', '']
  const { storage, browser, scaling } = res.runs

  // ---- fs appends vs the raw disk ----
  const raw = by('fs-vs-raw')
  if (raw) {
    const ref = storage.reference
    const d = storage.diagnostics.a
    out.push(`**fs batched appends vs the raw disk limit, diagnostic (adapter level): ${raw.result}, ${range(raw.perRound)}.** ` +
      `Per batch of 100 events the adapter makes the same one write of the same bytes as the baseline and one fdatasync ` +
      `(diagnostic pass: ${fmt(d.logWrites, 0)} log writes and ${fmt(d.logSyncs, 0)} fdatasyncs for ${fmt(d.appends, 0)} appends). What it adds: ` +
      `(1) encoding each batch into records (UTF-8 copy and a CRC32 per record, about 33 KB per batch), which the baseline does before its clock starts; ` +
      `(2) the bookkeeping of the append pipeline (queueing for group commit, the promise that resolves the caller). The sync itself is the baseline's: ` +
      `a lone flush (one session flushing, as here) syncs on the calling thread with \`fdatasyncSync\`, as the baseline and better-sqlite3 do; while other ` +
      `sessions flush at the same moment it goes through libuv's thread pool (\`FileHandle.datasync\`) instead, so that they sync in parallel. For reference, ` +
      `the same bytes written and synced through the asynchronous API (\`FileHandle.write\` + \`datasync\`, measured in the same rounds) against the adapter: ` +
      `${range(ref.perRound)}.`)
    const pb = storage.perBatchUs
    if (pb) {
      out.push('')
      out.push(`Where a batch of 100 goes (untimed pass over one growing file, the sync taken three ways in turn on successive batches; µs, median (min–max)): ` +
        `encoding ${range(pb.encode, 0)}, the write into the page cache ${range(pb.write, 0)}, the sync through the thread pool as the adapter does it ` +
        `${range(pb.poolDatasync, 0)}, \`fdatasyncSync\` on the calling thread ${range(pb.fdatasyncSync, 0)}, \`fsyncSync\` (the baseline) ${range(pb.fsyncSync, 0)}. ` +
        `Encoding plus the pool's extra over a synchronous sync is ${fmt(pb.encode.median + pb.poolDatasync.median - pb.fsyncSync.median, 0)} µs per batch at the medians, ` +
        `against ${fmt(pb.write.median + pb.fsyncSync.median, 0)} µs of write and sync that both sides pay.`)
    }
    out.push('')
    out.push('Is the baseline fair? Same bytes (the adapter\'s own record encoding of the same events), same growth pattern (a new file appended ' +
      'batch after batch, so every sync also commits the new file size: on a growing file fdatasync does the same work as fsync), no preallocation on either ' +
      'side (preallocated space on ext4 is an unwritten extent, whose first write still needs a journal commit, so it would not remove the metadata sync ' +
      'without writing every byte twice). What was tried: fully synchronous fdatasync (0.66–0.72), no CRC (0.64–0.70), the index file handle kept open ' +
      '(0.61–0.68), the offset-index write taken off the append path (it cost three thread-pool round trips every 512 events; appends no ' +
      'longer wait for it), and the lone flush synced on the calling thread (kept: in an A/B on a quiet machine, 0.59–0.65 before and 0.69–0.74 after, ' +
      'five runs). The ratio stays near the line, and on this shared machine a per-round ratio spans ' +
      `${fmt(raw.perRound.min, 2)}–${fmt(raw.perRound.max, 2)} within one run. The measured limit: ${fmt(storage.appends.batched.median, 0)} events/s against ` +
      `${fmt(storage.appends.raw.median, 0)} events/s raw (medians), ${fmt(storage.appends.rawAsync.median, 0)} events/s for raw through the asynchronous API; ` +
      `better-sqlite3 at the same durability makes ${fmt(storage.appends.sqliteFullBatched.median, 0)} events/s.`)
    out.push('')
  }

  // ---- not a target: single appends against the peer ----
  const seq = (storage.peerReference as Any[] | undefined)?.find((r) => r.name.startsWith('(c) sequential'))
  const conc = (storage.peerReference as Any[] | undefined)?.find((r) => r.name.startsWith('(b) concurrent'))
  if (seq && conc) {
    out.push(`Not a target, but worth knowing, diagnostic (adapter level): one event per append, awaited one after another, the fs adapter makes ${range(seq.perRound)} of ` +
      `better-sqlite3's single-event transactions (synchronous=FULL). Each such append pays a whole sync, as the peer's does, plus the pipeline's ` +
      'bookkeeping (above). With 100 callers appending at once, group commit turns the same single appends into ' +
      `${range(conc.perRound)} times the peer's rate, since better-sqlite3's synchronous API makes concurrent callers queue one transaction each.`)
    out.push('')
  }

  // ---- cold open flat ----
  const flat = by('cold-flat')
  if (flat) {
    const sizes = scaling.cold.bySize as Any[]
    const small = sizes[0]
    const big = sizes.at(-1)
    const pr = res.runs.projections.reads
    out.push(`**Cold open with a checkpoint, ${fmt(big.size, 0)} vs ${fmt(small.size, 0)} events, diagnostic (engine level): ${flat.result}, ${range(flat.perRound)}.** ` +
      `Medians ${fmt(big.checkpoint.median, 2)} ms and ${fmt(small.checkpoint.median, 2)} ms. Opening a log reads its header, its sparse offset index ` +
      `(one 8-byte entry per 64 events: ${fmt((big.size / 64) * 8 / 1024, 0)} KiB at ${fmt(big.size, 0)} events) and the records after the last entry; ` +
      'then the engine reads and restores the checkpoint row and folds the events after it. Of these only the index grows with the log, by 8 bytes per 64 events. ' +
      `What does grow is the projection state: these logs hold the same 3 children at every length (rows of ${fmt(big.checkpointRowBytes / 1024, 1)} KiB), ` +
      'and a cold open costs in proportion to the row it restores, which is the size of the state, not of the log. For scale, the projections run\'s ' +
      `100,000-event log with a catalog of ${fmt(pr.catalogEntries, 0)} children has a ${fmt(pr.checkpointBytes / 1024, 1)} KiB row that restores in ` +
      `${fmt(pr.breakdown.restoreSlots, 2)} ms, and opens cold with checkpoint in ${range(pr.ms.checkpoint.new)} ms.`)
    out.push('')
  }

  // ---- refold vs checkpoint ----
  const refold = by('cold-vs-refold')
  if (refold && refold.result === 'MISS') {
    const at = (scaling.cold.bySize as Any[]).find((c) => c.size === 100_000)
    out.push(`**Full refold vs cold open with checkpoint at 100,000 events, diagnostic (engine level): MISS, ${range(refold.perRound)}.** Medians: refold ${fmt(at.refold.median, 1)} ms, ` +
      `with checkpoint ${fmt(at.checkpoint.median, 2)} ms. The projections run measures the same pair: ${range(res.runs.projections.reads.ratios?.cold?.new?.perRound ?? { n: 0, median: NaN, min: NaN, max: NaN, samples: [] })}.`)
    out.push('')
  }

  // ---- Chromium: subscriber vs Dexie ----
  const big = (browser.latency as Any[]).find((l) => !l.reference)
  const dexieTargets = targets.filter((t) => t.id.startsWith('liveQuery'))
  if (big && dexieTargets.length > 0) {
    const s = big.samples
    const worst = dexieTargets.reduce((a, b) => (a.perRound.median <= b.perRound.median ? a : b))
    out.push(`**Chromium, subscriber update vs Dexie liveQuery at ${fmt(big.prefill, 0)} events, through the public API: lowest of the four ratios ${fmt(worst.perRound.median, 2)} ` +
      `(${worst.result === 'PASS' ? 'all PASS' : 'MISS'}).** sessionfold's subscriber hears an append ${fmt(s.sfWriter.median, 2)} ms after it is made ` +
      `(median; the observer handle ${fmt(s.sfObserver.median, 2)} ms). Its floor is the durable IndexedDB commit of the append: the same ` +
      `transaction made directly from the page (get the session row, put the event and the row, commit(), strict) takes ${fmt(s.idbAppendTx.median, 2)} ms and a single ` +
      `put ${fmt(s.idbPut.median, 2)} ms; the other ${fmt(Math.max(0, s.sfWriter.median - s.idbAppendTx.median), 2)} ms are the page's validation of the input, ` +
      'the message to the worker, the fold and the push of the new values back to the page (two thread hops on a loaded 2-core machine, where a ' +
      'hop waits for a core). Dexie\'s default cache shows the new entry ' +
      `optimistically, before its transaction commits, so its ${fmt(s.dexie.median, 2)} ms is the recomputation alone; with cache 'disabled' it reports ` +
      `after the commit, as sessionfold does, in ${fmt(s.dexieNoCache.median, 2)} ms. A 10× margin over the optimistic figure needs an update in ` +
      `${fmt(s.dexie.median / 10, 2)} ms, ${s.dexie.median / 10 >= s.idbAppendTx.median
        ? `${fmt(s.dexie.median / 10 - s.idbAppendTx.median, 2)} ms above`
        : `${fmt(s.idbAppendTx.median - s.dexie.median / 10, 2)} ms below`} what the append-shaped transaction alone takes from the page in this run: ` +
      'no subscriber can hear a durable append before its commit. In this round sessionfold\'s append asks IndexedDB for its commit as soon as its ' +
      'requests are made (`tx.commit()`), which saves one round trip to the browser\'s IndexedDB per append; the raw idb rows do the same. ' +
      'Chromium coarsens performance.now() to 0.1 ms here (no cross-origin isolation), a few percent of these figures.')
    out.push('')
  }
  // ---- Chromium appends vs raw idb ----
  const idb = by('idb-appends')
  if (idb) {
    const ba = browser.appends
    const deferred = (browser.ratios as Any[]).find((r) => r.name.startsWith('appends: sessionfold, checkpoints deferred'))
    const d = browser.diagnostics
    const tx = Object.entries(d.tx as Record<string, { count: number; ms: number }>)
    const ck = tx.find(([k]) => k.includes('checkpoints'))
    const ap = tx.find(([k]) => k.includes('events'))
    const gap = d.appends ? d.appends.gapMs / Math.max(1, d.appends.gaps) : undefined
    out.push(`**Chromium appends vs raw idb, through the public API: ${idb.result}, ${range(idb.perRound)}.** Medians ${fmt(ba.sessionfold.median, 0)} and ` +
      `${fmt(ba.idb.median, 0)} events/s. Both make one strict transaction per batch of 100 (sessionfold's also reads and rewrites the session row, ` +
      'and its time includes the page-side validation, the hop to the worker, folding and the push back to the page). ' +
      `With checkpoints deferred past the run, sessionfold makes ${deferred ? range(deferred.perRound) : 'n/a'} of raw idb in the same rounds: ` +
      'the difference from the ratio above is what checkpoints cost the append path. ' +
      (ck && ap ? `A counted run made ${fmt(ap[1].count, 0)} append transactions and ${fmt(ck[1].count, 0)} checkpoint transactions ` +
        `(${fmt(ck[1].ms / ck[1].count, 2)} ms each from creation to complete, committed relaxed), which share the database with the appends` +
        (gap === undefined ? '. ' : `; between one append's commit and the next append's transaction (the answer to the page, its next call, the hop, ` +
          `the fold) ${fmt(gap, 2)} ms passed on average, against ${fmt((d.runMs / d.events) * 100, 2)} ms per batch in all. `) : '') +
      'Each run\'s events are deleted only when the phase ends: deleted right after a run, they slowed the same database\'s next run, and ' +
      'the system placed first (sessionfold), which runs twice in a row across rounds, read 0.81-0.88 of an identical store placed elsewhere ' +
      '(results measured before that change carry this bias). ' +
      'Checkpoints are what make a cold open cost milliseconds instead of a refold (see the cold-open targets); they are paced by their whole cost, commit included.')
    out.push('')
  }
  return out.join('\n')
}

/**
 * Below the public-API table: each headline figure beside the same scenario one layer down, from
 * the same results.json (the storage run: the fs adapter alone; the projections run: the engine
 * alone), so the page shows where the public API's cost sits. Empty when the api run is absent.
 */
export function explainApi(res: SuiteResults): string {
  const api = res.runs.api
  if (!api) return ''
  const { storage, projections } = res.runs
  const h = (id: string): Any => (api.headline as Any[]).find((x) => x.id === id)
  const v = (part: 'batched' | 'singles' | 'catalog', key: string): Summary | undefined => (api[part].variants as Any[]).find((x) => x.key === key)?.summary
  const verdict = (x: Any) => (x.result ? `${x.result}, ` : '')
  const out: string[] = ['### Through the public API against the layers below', '']

  const bw = h('batched-worker')
  const bt = h('batched-thread')
  const raw = v('batched', 'raw')
  const worker = v('batched', 'worker')
  const thread = v('batched', 'thread')
  if (bw && bt && raw && worker && thread) {
    const adapter = (storage?.ratios as Any[] | undefined)?.find((r) => r.name === '(a) batched / raw')
    out.push(`**Batched appends vs the raw disk limit: openStore() ${verdict(bw)}${range(bw.perRound)}; openStore({ worker: false }) ${verdict(bt)}${range(bt.perRound)}.** ` +
      `Medians: raw ${fmt(raw.median, 0)} events/s, openStore({ worker: false }) ${fmt(thread.median, 0)}, openStore() ${fmt(worker.median, 0)}. ` +
      (adapter ? `One layer down, the fs adapter called directly with the same batches (the storage run, diagnostic) makes ${range(adapter.perRound)} of its own raw ` +
        `limit (${fmt(storage.appends.batched.median, 0)} against ${fmt(storage.appends.raw.median, 0)} events/s). ` : '') +
      'Between the adapter and openStore({ worker: false }) lie the client (each event validated and encoded by session.append), the engine (the fold of ' +
      'every event, checkpoints) and the wait until the handle\'s values reflect the append, which session.append promises; in a worker, also the trip of ' +
      'each batch to the worker and of the new values back.')
    const b = api.batched.breakdown
    const floor = v('batched', 'jsonFloor')
    const floorWorker = v('batched', 'jsonFloorWorker')
    if (b?.ceiling !== undefined && floor && floorWorker) {
      const ms = (s: Summary) => fmt((api.config.batch / s.median) * 1000, 2)
      out.push('')
      out.push(`**The ceiling, measured in the same run: ${fmt(b.ceiling, 2)} in one thread, ${fmt(b.ceilingWorker, 2)} across a worker, below both targets ` +
        `(${fmt(api.targets.batchedThread, 1)} and ${fmt(api.targets.batchedWorker, 1)}).** The raw side writes records encoded before its clock starts. Any store that takes ` +
        'JSON events from an app does more for each batch: it checks that each input is plain JSON, stringifies it, and (for a fold to see what a cold read sees) parses ' +
        `the stored form back, then frames the records and writes and syncs them. That work alone, in a loop with nothing of sessionfold around it, takes ` +
        `${ms(floor)} ms per batch against raw's ${ms(raw)} ms; with the parse and the disk in a bare worker_threads worker (the bodies posted to it, a count posted ` +
        `back, no comlink) ${ms(floorWorker)} ms, the two thread wake-ups of the round trip included. openStore({ worker: false }) takes ${ms(thread)} ms and ` +
        `openStore() ${ms(worker)} ms; they run at ${fmt(thread.median / floor.median, 2)} and ${fmt(worker.median / floorWorker.median, 2)} of those floors' rates. The rest in the ` +
        'thread is the record codec (deflate, the frame and its pointer records), the change feed and offset index writes, the fold, the checkpoint rows (paced ' +
        'to a tenth of the time) and history rows, the handle\'s values and the promise chain; and an fdatasync takes longer when CPU work comes between ' +
        'two of them than in raw\'s back-to-back loop.')
    }
    out.push('')
  }

  const gw = h('group-commit-worker')
  const gt = h('group-commit-thread')
  const seqW = v('singles', 'workerSequential')
  const seqT = v('singles', 'threadSequential')
  if (gw && gt && seqW && seqT) {
    const adapter = (storage?.ratios as Any[] | undefined)?.find((r) => r.name === '(b) concurrent / (c) sequential')
    out.push(`**${api.config.singles} single appends at once vs one after another: openStore() ${verdict(gw)}${range(gw.perRound)}; ` +
      `openStore({ worker: false }) ${range(gt.perRound)}.** A sequential append takes ${fmt(1000 / seqW.median, 2)} ms through the worker and ` +
      `${fmt(1000 / seqT.median, 2)} ms with worker: false (medians)` +
      (adapter ? `; the fs adapter alone (storage run, diagnostic) takes ${fmt(1000 / storage.appends.sequential.median, 2)} ms, and there 100 callers appending one event at a time, ` +
        `concurrently, make ${range(adapter.perRound)} times its sequential rate (${fmt(storage.config.events, 0)} events per run, against ${api.config.singles} here)` : '') +
      '. The speed-up is bounded by what each append costs that group commit does not share: one message to the worker and one fsync serve ' +
      'the appends made together, but every append is still validated, numbered, folded and answered on its own.')
    out.push('')
  }

  const cw = h('catalog-writer')
  const co = h('catalog-observer')
  const small = v('catalog', 'smallWriter')
  const large = v('catalog', 'largeWriter')
  const oSmall = v('catalog', 'smallObserver')
  const oLarge = v('catalog', 'largeObserver')
  if (cw && co && small && large && oSmall && oLarge) {
    const c = api.config
    const pa = projections?.appends?.us?.default
    out.push(`**A catalog fact at ${fmt(c.catalogLarge, 0)} vs ${fmt(c.catalogSmall, 0)} entries, openStore(): ${verdict(cw)}${range(cw.perRound)}.** ` +
      `Medians until the writer's mirror holds it: ${fmt(large.median, 2)} ms against ${fmt(small.median, 2)} ms; until an observer's listener hears it: ` +
      `${fmt(oLarge.median, 2)} against ${fmt(oSmall.median, 2)} ms (ratio ${range(co.perRound)}). ` +
      (pa ? `One layer down, the engine's own append of one catalog fact (projections run, Engine.append on the memory adapter with no handle watching, ` +
        `diagnostic) takes ${fmt(pa.small.median, 1)} µs at ${fmt(projections.config.catalogSmall, 0)} entries and ${fmt(pa.large.median, 1)} µs at ${fmt(projections.config.catalogLarge, 0)}: ` +
        'folding the fact does not grow with the catalog, so what grows lies in what the public API does beyond it (the durable fs append and ' +
        'checkpoints of a larger state, and bringing the new value to the handles). ' : '') +
      `Filling the ${fmt(c.catalogLarge, 0)} entries through recordExternal, ${c.fillChunk} calls at once, took ${fmt(api.catalog.fillSeconds, 1)} s ` +
      `(${fmt((api.catalog.fillSeconds * 1000) / c.catalogLarge, 2)} ms per entry on average).`)
    out.push('')
  }
  return out.join('\n')
}
