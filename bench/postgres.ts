// The PostgreSQL store through the public API (npm run bench:postgres): openStore({ storage:
// 'postgres', url }) with its defaults (worker, strict) on a throwaway cluster on 127.0.0.1 (fsync on).
//   (1) batched durable appends (batches of 100 events of ~300 B, each awaited), through the worker and
//       worker: false, against the same rows inserted with the same driver (`postgres`) into a plain
//       events table of the same shape, one transaction per batch. Diagnostics: the adapter alone,
//       storage 'memory'.
//   (2) 8 child processes × 50 sessions appending while observing another process's 50: aggregate
//       events/s and ack → subscriber time across processes; again paced (one append per 4 s, 2 s).
//   (3) cold open of a 100,000-event session against a 1,000-event one, both checkpointed; bytes on
//       disk per event.
// Ratios pair runs of the same round (rotating), after a warm-up round. Settings: BENCH_PG_ROUNDS,
// _BATCHES, _PROCS, _SESSIONS, _SECONDS, _BIG, _PACE_MS, _BUSY_PACE_MS, _SMALL, _OPEN_ROUNDS.
import postgres from 'postgres'
import { createPostgresAdapter } from '../src/backends/postgres'
import { HEADER_VERSION } from '../src/core/limits'
import { openStore, type EventInput, type Store } from '../src/index-node'
import { encodeEventInput } from '../src/core/validate'
import { startCluster, type PgCluster } from '../test/support/postgres'
import { runConcurrent } from './support/pg-concurrent'
import { messageInput, rotate, runBatched, runRounds, sourceState } from './common'
import { checkSettings, env, finishBench, fmt, headlineRatio, type Figure, type HeadlineRatio, summarize } from './stats'

const CONFIG = {
  eventBytes: 300,
  batch: 100,
  /** (1) batches per run, each of `batch` events. */
  batches: env('BENCH_PG_BATCHES', 50),
  /**
   * Rounds of (1), after one unrecorded warm-up round. A round takes a few seconds, and one
   * round's ratio ranged from 0.53 to 0.85 on a shared 2-core machine: 11 give a steadier median.
   */
  rounds: env('BENCH_PG_ROUNDS', 11),
  /** (2) child processes, sessions written by each, seconds of appending. */
  procs: env('BENCH_PG_PROCS', 8),
  sessions: env('BENCH_PG_SESSIONS', 50),
  seconds: env('BENCH_PG_SECONDS', 6),
  /** (2) the paced runs: ms between one session's appends (each of procs × sessions). */
  paceMs: env('BENCH_PG_PACE_MS', 4000),
  busyPaceMs: env('BENCH_PG_BUSY_PACE_MS', 2000),
  /** (3) events in the big and the small session, and rounds of cold opens. */
  big: env('BENCH_PG_BIG', 100_000),
  small: env('BENCH_PG_SMALL', 1_000),
  openRounds: env('BENCH_PG_OPEN_ROUNDS', 7),
  /** Events per append while building the sessions of (3) (untimed). */
  buildBatch: 2_000,
}

const TARGETS = {
  /** (1) openStore({ storage: 'postgres' }) events/s ÷ direct driver inserts events/s, at least. */
  batchedWorker: 0.7,
  /** (2) ack → subscriber in another process, p99 ms, at most: in the first paced run (a load that leaves the machine some room). */
  followP99Ms: 100,
  /** (3) cold open of the big session ÷ the small one, at most. */
  coldOpen: 2,
}

const LAYER = {
  worker: "openStore({ storage: 'postgres' }) in a worker",
  thread: "openStore({ storage: 'postgres', worker: false })",
  raw: 'direct driver baseline',
} as const

const log = (s: string) => process.stderr.write(`${s}\n`)

// ---- (1) batched appends ------------------------------------------------------------------

let runs = 0

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  const source = sourceState()
  log('starting a throwaway PostgreSQL cluster (fsync on)')
  const cluster: PgCluster = await startCluster()
  const stores: Store[] = []
  const sqls: postgres.Sql[] = []
  try {
    const url = await cluster.createDatabase('bench')
    const serverVersion = (await cluster.psql('SHOW server_version')).trim()
    const settings = (
      await cluster.psql(
        "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync','synchronous_commit','wal_sync_method','shared_buffers')",
      )
    ).trim()
    log(`PostgreSQL ${serverVersion}: ${settings}`)

    // ---- (1) ----
    const worker = await openStore({ storage: 'postgres', url, schema: 'bench_worker' })
    const thread = await openStore({ storage: 'postgres', url, schema: 'bench_thread', worker: false })
    // Checkpoints are a cache of the folded state, written beside the appends: the same store with
    // them pushed past the run shows what they cost a batch.
    const deferred = await openStore({ storage: 'postgres', url, schema: 'bench_deferred', checkpoint: { everyEvents: 1_000_000_000, everyMs: 3_600_000 } })
    const memWorker = await openStore({ storage: 'memory' })
    const memThread = await openStore({ storage: 'memory', worker: false })
    stores.push(worker, thread, deferred, memWorker, memThread)
    const adapter = createPostgresAdapter({ url, schema: 'bench_adapter' })
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    sqls.push(sql)
    await sql.unsafe(
      'CREATE SCHEMA bench_raw; CREATE TABLE bench_raw.events (session_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))',
    )
    const input = messageInput(CONFIG.eventBytes)
    const events = CONFIG.batches * CONFIG.batch
    const batches: EventInput[][] = Array.from({ length: CONFIG.batches }, () => Array.from({ length: CONFIG.batch }, () => input))
    const stamp = Date.now()
    const bodies = batches.map((b, i) => b.map((e, j) => encodeEventInput(e, i * CONFIG.batch + j, 'bench-raw', { now: stamp }).json))
    const bodyBytes = bodies.flat().reduce((n, b) => n + Buffer.byteLength(b), 0) / events

    const runRaw = async (): Promise<number> => {
      const id = `raw-${runs++}`
      const ids = Array.from({ length: CONFIG.batch }, () => id)
      const seqs = bodies.map((b, i) => b.map((_, j) => i * CONFIG.batch + j))
      const t0 = performance.now()
      for (let i = 0; i < bodies.length; i++) {
        await sql.begin((tx) => [
          tx.unsafe('INSERT INTO bench_raw.events (session_id, seq, body) SELECT * FROM unnest($1::text[], $2::int8[], $3::text[])', [
            ids,
            seqs[i]!,
            bodies[i]!,
          ]),
        ])
      }
      const ms = performance.now() - t0
      await sql.unsafe('DELETE FROM bench_raw.events WHERE session_id = $1', [id])
      return (events / ms) * 1000
    }
    const runAdapter = async (): Promise<number> => {
      const id = `adapter-${runs++}`
      const encoded = batches.map((b, i) => b.map((e, j) => encodeEventInput(e, i * b.length + j, id, { now: stamp })))
      await adapter.createSession({ version: HEADER_VERSION, id, createdAt: stamp, seedLength: 0, delegationDepth: 0, origin: 'root' })
      const t0 = performance.now()
      for (const b of encoded) await adapter.append(id, b)
      const ms = performance.now() - t0
      await adapter.deleteSession(id)
      return (events / ms) * 1000
    }
    const BATCHED = [
      { key: 'raw', label: 'postgres driver: one transaction per batch, INSERT … unnest into a plain events table', layer: LAYER.raw, run: runRaw },
      {
        key: 'worker',
        label: "openStore({ storage: 'postgres' }): session.append(batch), each awaited",
        layer: LAYER.worker,
        run: () => runBatched(worker, batches),
      },
      { key: 'thread', label: "openStore({ storage: 'postgres', worker: false }): the same", layer: LAYER.thread, run: () => runBatched(thread, batches) },
      {
        key: 'deferred',
        label: "(diagnostic) openStore({ storage: 'postgres', checkpoint: { everyEvents: 1e9 } }): checkpoints pushed past the run",
        layer: 'diagnostic (public API, checkpoints deferred)',
        run: () => runBatched(deferred, batches),
      },
      {
        key: 'adapter',
        label: '(diagnostic) the postgres adapter alone, strict: append(events already numbered and encoded)',
        layer: 'diagnostic (adapter level)',
        run: runAdapter,
      },
      {
        key: 'memWorker',
        label: "(diagnostic) openStore({ storage: 'memory' }): the same calls, no database",
        layer: 'diagnostic (no database)',
        run: () => runBatched(memWorker, batches),
      },
      {
        key: 'memThread',
        label: "(diagnostic) openStore({ storage: 'memory', worker: false }): the same calls",
        layer: 'diagnostic (no database)',
        run: () => runBatched(memThread, batches),
      },
    ]
    const batchedRuns = await runRounds(BATCHED, CONFIG.rounds, events, log, fmt)
    const bS = new Map(BATCHED.map((x) => [x.key, summarize(batchedRuns.get(x.key)!)]))
    for (const s of stores.splice(0)) await s.close()
    await adapter.close()

    // ---- (2) ----
    log(`concurrent: ${CONFIG.procs} processes × ${CONFIG.sessions} sessions for ${CONFIG.seconds} s`)
    const concurrent = await runConcurrent(CONFIG, url, 'bench_procs', true)
    // The same writers with nobody observing: what following 400 sessions from 8 engines costs the writers.
    const writersOnly = await runConcurrent(CONFIG, url, 'bench_procs_solo', false)
    log(`concurrent, no observers: ${fmt(writersOnly.eventsPerSecond, 0)} events/s`)
    // Latency under a given load rather than at saturation (where it is the length of the queue):
    // the same writers and observers, each session appending once every paceMs, then busyPaceMs.
    const paceMs = CONFIG.paceMs
    const paced = await runConcurrent(CONFIG, url, 'bench_procs_paced', true, paceMs)
    const pacedRate = (CONFIG.procs * CONFIG.sessions * 1000) / paceMs
    const busy = await runConcurrent(CONFIG, url, 'bench_procs_busy', true, CONFIG.busyPaceMs)
    log(
      `concurrent, paced at ${fmt(pacedRate, 0)} events/s: ${fmt(paced.eventsPerSecond, 0)} events/s, ack → other process p50 ${fmt(paced.latency.p50, 1)} ms, p99 ${fmt(paced.latency.p99, 1)} ms`,
    )
    log(
      `concurrent: ${fmt(concurrent.eventsPerSecond, 0)} events/s, ack → other process p50 ${fmt(concurrent.latency.p50, 1)} ms, p99 ${fmt(concurrent.latency.p99, 1)} ms`,
    )

    // ---- (3) ----
    const build = await openStore({ storage: 'postgres', url, schema: 'bench_open' })
    stores.push(build)
    const buildStart = performance.now()
    const sizes = { big: CONFIG.big, small: CONFIG.small }
    const ids: Record<'big' | 'small' | 'warm', string> = { big: '', small: '', warm: '' }
    const sizesAll = { ...sizes, warm: 10 }
    for (const k of ['big', 'small', 'warm'] as const) {
      const s = await build.createSession()
      ids[k] = s.id
      for (let done = 0; done < sizesAll[k]; done += CONFIG.buildBatch) {
        await s.append(Array.from({ length: Math.min(CONFIG.buildBatch, sizesAll[k] - done) }, () => input))
      }
      await s.close() // writes its close checkpoint
    }
    const buildSeconds = (performance.now() - buildStart) / 1000
    await stores.pop()!.close()
    const checkpoints = Number(
      (await cluster.psql(`SELECT count(*) FROM bench_open.checkpoints WHERE session_id IN ('${ids.big}', '${ids.small}')`, 'bench')).trim(),
    )
    if (checkpoints !== 2) throw new Error(`expected a checkpoint row for both sessions, found ${checkpoints}`)
    const rowCount = Number((await cluster.psql('SELECT count(*) FROM bench_open.events', 'bench')).trim())
    const onDisk = {
      events: rowCount,
      eventsTable: Number((await cluster.psql("SELECT pg_total_relation_size('bench_open.events')", 'bench')).trim()),
      checkpointsTable: Number((await cluster.psql("SELECT pg_total_relation_size('bench_open.checkpoints')", 'bench')).trim()),
      bodyBytes,
    }
    const bytesPerEvent = onDisk.eventsTable / rowCount
    log(
      `built ${fmt(rowCount, 0)} events in ${fmt(buildSeconds, 1)} s; events table ${fmt(onDisk.eventsTable / 2 ** 20, 1)} MiB, ${fmt(bytesPerEvent, 0)} B/event`,
    )

    const openRuns = { big: [] as number[], small: [] as number[] }
    for (let r = 0; r <= CONFIG.openRounds; r++) {
      const warmUp = r === 0
      // A new store each round: nothing of the session is in its memory.
      const store = await openStore({ storage: 'postgres', url, schema: 'bench_open' })
      // A first observe of a third, tiny session: what a store's first observe costs once (its
      // growth listener, the worker's first read) weighs on neither size.
      // It stays open through the timed opens: the store keeps following (listening) meanwhile.
      const warm = await store.observe(ids.warm)
      const line: string[] = []
      for (const k of rotate(['big', 'small'] as const, r)) {
        const t0 = performance.now()
        const view = await store.observe(ids[k])
        const snap = view.projections.snapshot()
        const ms = performance.now() - t0
        if (snap.asOfSeq < sizes[k] - 1) throw new Error(`cold open of ${k}: asOfSeq ${snap.asOfSeq}, expected ${sizes[k] - 1}`)
        await view.close()
        if (!warmUp) openRuns[k].push(ms)
        line.push(`${k} ${fmt(ms, 1)} ms`)
      }
      await warm.close()
      await store.close()
      log(`cold open ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.openRounds}`}: ${line.join(', ')}`)
    }
    const oS = { big: summarize(openRuns.big), small: summarize(openRuns.small) }

    // ---- report ----
    const msPerBatch = (key: string) => (CONFIG.batch / bS.get(key)!.median) * 1000
    const breakdown = {
      rows: [
        ['direct driver: one transaction, one INSERT (the baseline)', msPerBatch('raw')],
        ['the adapter alone (append_group: fence and length checks, INSERT, UPDATE and NOTIFY in one statement, commit)', msPerBatch('adapter')],
        ['client + engine in this thread, no database (validate, stringify, fold, views)', msPerBatch('memThread')],
        ['client + engine through the worker, no database (the same, and the hop)', msPerBatch('memWorker')],
        ["openStore({ storage: 'postgres', worker: false })", msPerBatch('thread')],
        ["openStore({ storage: 'postgres' }), checkpoints pushed past the run", msPerBatch('deferred')],
        ["openStore({ storage: 'postgres' }) (the worker)", msPerBatch('worker')],
      ] as [string, number][],
      floorThread: msPerBatch('raw') / (msPerBatch('adapter') + msPerBatch('memThread')),
      floorWorker: msPerBatch('raw') / (msPerBatch('adapter') + msPerBatch('memWorker')),
    }
    const what = `batched durable appends (${CONFIG.batches} × ${CONFIG.batch} events of ~${CONFIG.eventBytes} B) vs the same rows inserted with the driver, one transaction per batch`
    const headline: HeadlineRatio[] = [
      headlineRatio('pg-batched-worker', what, LAYER.worker, 'openStore events/s ÷ driver events/s', bS.get('worker')!, bS.get('raw')!, {
        atLeast: TARGETS.batchedWorker,
      }),
      headlineRatio('pg-batched-thread', what, LAYER.thread, 'openStore events/s ÷ driver events/s', bS.get('thread')!, bS.get('raw')!),
      headlineRatio(
        'pg-cold-open',
        `cold open (new store, observe → first snapshot) of a ${fmt(CONFIG.big, 0)}-event session vs a ${fmt(CONFIG.small, 0)}-event one, both checkpointed`,
        LAYER.worker,
        `time at ${fmt(CONFIG.big, 0)} ÷ time at ${fmt(CONFIG.small, 0)}`,
        oS.big,
        oS.small,
        { atMost: TARGETS.coldOpen },
      ),
    ]

    const followPass = paced.latency.p99 <= TARGETS.followP99Ms
    const one = (x: number) => summarize([x])
    finishBench(
      'postgres',
      `sessionfold PostgreSQL benchmark: openStore({ storage: 'postgres' }) with its defaults (worker, strict); PostgreSQL ${serverVersion} (${settings})`,
      [
        ...BATCHED.map((x): Figure => [`${x.label} (${x.layer})`, bS.get(x.key)!, 'events/s', 0]),
        [`${CONFIG.procs} processes × ${CONFIG.sessions} sessions appending while observing, aggregate`, one(concurrent.eventsPerSecond), 'events/s', 0],
        ['(diagnostic) the same writers, no observers', one(writersOnly.eventsPerSecond), 'events/s', 0],
        ['ack → observer in another process, p50', one(concurrent.latency.p50), 'ms', 1],
        ['the same, p99', one(concurrent.latency.p99), 'ms', 1],
        ...(
          [
            [paced, paceMs],
            [busy, CONFIG.busyPaceMs],
          ] as const
        ).map(([r, every]): Figure => [`paced (one append per ${fmt(every, 0)} ms per session): ack → observer p99`, one(r.latency.p99), 'ms', 1]),
        [`cold open, ${fmt(CONFIG.big, 0)} events`, oS.big, 'ms', 1],
        [`cold open, ${fmt(CONFIG.small, 0)} events`, oS.small, 'ms', 1],
        ['events table on disk per event', one(bytesPerEvent), 'B', 0],
      ],
      [
        ...headline,
        {
          name: `follow p99, one append per ${fmt(paceMs, 0)} ms per session, ms`,
          perRound: one(paced.latency.p99),
          target: `≤ ${TARGETS.followP99Ms}`,
          result: followPass ? 'PASS' : 'MISS',
        },
      ],
      {
        source,
        postgres: serverVersion,
        settings,
        config: CONFIG,
        targets: TARGETS,
        layers: LAYER,
        headline,
        batched: {
          unit: 'events/s',
          bodyBytes,
          breakdown,
          variants: BATCHED.map((x) => ({ key: x.key, label: x.label, layer: x.layer, summary: bS.get(x.key) })),
        },
        concurrent,
        writersOnly: { eventsPerSecond: writersOnly.eventsPerSecond, events: writersOnly.events, cpu: writersOnly.cpu },
        paced: { ...paced, paceMs, askedEventsPerSecond: pacedRate, targetP99Ms: TARGETS.followP99Ms, result: followPass ? 'PASS' : 'MISS' },
        busy: { ...busy, paceMs: CONFIG.busyPaceMs, askedEventsPerSecond: (CONFIG.procs * CONFIG.sessions * 1000) / CONFIG.busyPaceMs },
        coldOpen: { unit: 'ms', buildSeconds, big: oS.big, small: oS.small },
        onDisk: { ...onDisk, bytesPerEvent },
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
  } finally {
    for (const s of stores.splice(0)) await s.close().catch((err) => log(`closing a store: ${err}`))
    for (const s of sqls) await s.end({ timeout: 5 }).catch(() => {})
    await cluster.stop()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
