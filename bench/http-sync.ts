import type { ChangeBatch, ChangeCursor } from '../src/core/changes'
import { openStore, type Store } from '../src/index-node'
import { SYNC_PROTOCOL } from '../src/sync/server/index'
import { Resources, countEvents, pushTemplates, serve, startServerProcess, type ServerProcess } from './support/sync-server'
import { startCluster, postgresBin } from '../test/support/postgres'
import { messageInput, runRounds, sourceState } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  settlesWithin,
  type Figure,
  type HeadlineRatio,
  median,
  summarize,
  type Summary,
} from './stats'

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  eventBytes: 200,
  /** (1) appends per round, ms between their starts, rounds after one unrecorded warm-up. */
  appends: env('BENCH_SYNC_APPENDS', 200),
  gapMs: env('BENCH_SYNC_GAP_MS', 20),
  latencyRounds: env('BENCH_SYNC_LATENCY_ROUNDS', 3),
  /** (1) diagnostic: one more round with device A connected with this pollMs (0: skipped). */
  pollMs: env('BENCH_SYNC_POLL_MS', 10) || undefined,
  /** (2) sessions and events per session on the server; rounds after one unrecorded warm-up. */
  sessions: env('BENCH_SYNC_SESSIONS', 100),
  eventsPerSession: env('BENCH_SYNC_EVENTS', 1_000),
  syncRounds: env('BENCH_SYNC_ROUNDS', 2),
  /** (3) clients, batches per client per run, events per batch; rounds after one unrecorded warm-up. */
  clients: env('BENCH_SYNC_CLIENTS', 50),
  clientBatches: env('BENCH_SYNC_CLIENT_BATCHES', 4),
  clientBatch: env('BENCH_SYNC_CLIENT_BATCH', 100),
  pushRounds: env('BENCH_SYNC_PUSH_ROUNDS', 2),
  /** 1: run (3) against PostgreSQL too (when its binaries are installed); 0: skip it. */
  pg: env('BENCH_SYNC_PG', 1) !== 0,
  /** Which parts to run, e.g. '1,3'. */
  parts: process.env.BENCH_SYNC_PARTS || '1,2,3',
  /** (1) diagnostic: how long to wait for whenSynced() of live replications with nothing to sync. */
  firstSyncWaitMs: 3_000,
  /** Events per append while building the server's sessions of (2) (untimed). */
  buildBatch: 1_000,
  /** A wait that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 60_000,
}

const TARGETS = {
  /** (2) connect() events/s ÷ direct changesSince/applyChanges events/s, at least. */
  initialSync: 0.5,
}

const log = (s: string) => process.stderr.write(`${s}\n`)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

/** Waits until `check()` is true, polling every `everyMs`; throws after stallMs. */
async function until(what: string, check: () => boolean | Promise<boolean>, everyMs = 5): Promise<void> {
  const t0 = performance.now()
  while (!(await check())) {
    if (performance.now() - t0 > CONFIG.stallMs) throw new Error(`stalled waiting for ${what}`)
    await sleep(everyMs)
  }
}

const bounded = <T>(what: string, p: Promise<T>): Promise<T> => settlesWithin(p, `stalled waiting for ${what}`, CONFIG.stallMs)

// ---- (1) latency --------------------------------------------------------------------------

interface LatencyRound {
  /** ms from the append call until the subscriber had it, sorted. */
  sync: number[]
  tab: number[]
  /** ms from the append call until it resolved (durable on A), sorted. */
  ack: number[]
}

/**
 * One round: a new session on A, observed by B (through the server) and by `tab` (a second store
 * on A's folder); `appends` single appends spaced gapMs apart.
 */
async function latencyRound(a: Store, b: Store, tab: Store, round: string): Promise<LatencyRound> {
  const input = messageInput(CONFIG.eventBytes)
  const session = await a.createSession()
  const id = session.id
  await session.append(input)
  // B has the session once A pushed it and the server streamed it.
  await until(`device B to receive session ${id}`, async () => (await b.listSessions({ limit: 10_000 })).some((h) => h.id === id), 10)
  const viewB = await b.observe(id)
  const viewTab = await tab.observe(id)
  const seenB: [number, number][] = []
  const seenTab: [number, number][] = []
  const unsubB = viewB.projections.subscribe((snap) => seenB.push([snap.asOfSeq, now()]))
  const unsubTab = viewTab.projections.subscribe((snap) => seenTab.push([snap.asOfSeq, now()]))
  await until(`round ${round}: both observers to hold the first event`, () => seenB.some(([s]) => s >= 0) && seenTab.some(([s]) => s >= 0)).catch(
    (err: Error) => {
      throw new Error(
        `${err.message} (B saw ${JSON.stringify(seenB.map(([s]) => s))}, the second store on A's folder ${JSON.stringify(seenTab.map(([s]) => s))})`,
      )
    },
  )
  const sent: [number, number, number][] = [] // [seq, call time, ack time]
  const t0 = now()
  for (let i = 0; i < CONFIG.appends; i++) {
    const wait = t0 + i * CONFIG.gapMs - now()
    if (wait > 0) await sleep(wait)
    const call = now()
    const r = await session.append(input)
    sent.push([r.lastSeq, call, now()])
  }
  const last = sent[sent.length - 1]![0]
  await until(`round ${round}: both observers to hear seq ${last}`, () => seenB.some(([s]) => s >= last) && seenTab.some(([s]) => s >= last))
  unsubB()
  unsubTab()
  await viewB.close()
  await viewTab.close()
  await session.close()
  const match = (seen: [number, number][]) => sent.map(([seq, call]) => seen.find(([s]) => s >= seq)![1] - call).sort((x, y) => x - y)
  return { sync: match(seenB), tab: match(seenTab), ack: sent.map(([, call, ack]) => ack - call).sort((x, y) => x - y) }
}

// ---- (1) ----

async function partLatency(res: Resources) {
  log(`(1) latency: ${CONFIG.appends} appends ${CONFIG.gapMs} ms apart per round, ${CONFIG.latencyRounds} rounds after a warm-up`)
  const serverStore = await res.open(res.newDir('server1'))
  const server = await serve(serverStore)
  res.servers.push(server)
  const dirA = res.newDir('deviceA')
  const devA = await res.open(dirA)
  const devB = await res.open(res.newDir('deviceB'))
  const tab = await res.open(dirA)
  let replA = devA.connect(server.url, { live: true })
  const replB = devB.connect(server.url, { live: true })
  // Diagnostic: whenSynced() of two live replications with nothing to sync either way, both at
  // once; given up on (and not waited for further) after firstSyncWaitMs.
  const firstSyncStart = performance.now()
  const firstSync = await Promise.race([
    Promise.all([replA.whenSynced(), replB.whenSynced()]).then(() => performance.now() - firstSyncStart),
    sleep(CONFIG.firstSyncWaitMs).then(() => undefined),
  ])
  log(
    `whenSynced() of two live replications with nothing to sync: ${firstSync === undefined ? `not resolved after ${fmt(CONFIG.firstSyncWaitMs, 0)} ms (not waited for further)` : `${fmt(firstSync, 0)} ms`}`,
  )
  await until('devices A and B to be online', () => replA.status === 'online' && replB.status === 'online')
  const rounds: LatencyRound[] = []
  for (let r = 0; r <= CONFIG.latencyRounds; r++) {
    const x = await latencyRound(devA, devB, tab, String(r))
    if (r > 0) rounds.push(x)
    log(
      `latency ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.latencyRounds}`}: through the server p50 ${fmt(quantile(x.sync, 0.5), 1)} ms, p99 ${fmt(quantile(x.sync, 0.99), 1)} ms;` +
        ` second store on A's folder p50 ${fmt(quantile(x.tab, 0.5), 1)} ms, p99 ${fmt(quantile(x.tab, 0.99), 1)} ms; A's ack p50 ${fmt(quantile(x.ack, 0.5), 1)} ms`,
    )
  }
  // Diagnostic: A connected with a short pollMs: how much of the latency is A's wait for its next push.
  let fastPoll: { p50: number; p99: number } | undefined
  if (CONFIG.pollMs !== undefined) {
    await replA.close()
    const repl = devA.connect(server.url, { live: true, pollMs: CONFIG.pollMs })
    replA = repl
    await until('device A to be online', () => repl.status === 'online')
    const x = await latencyRound(devA, devB, tab, `pollMs ${CONFIG.pollMs}`)
    fastPoll = { p50: quantile(x.sync, 0.5), p99: quantile(x.sync, 0.99) }
    log(`latency, device A with pollMs ${CONFIG.pollMs}: through the server p50 ${fmt(fastPoll.p50, 1)} ms, p99 ${fmt(fastPoll.p99, 1)} ms`)
  }
  await replA.close()
  await replB.close()
  for (const s of [tab, devB, devA, serverStore]) await res.closeStore(s)
  await res.closeServer(server)
  return {
    unit: 'ms',
    syncP50: summarize(rounds.map((x) => quantile(x.sync, 0.5))),
    syncP99: summarize(rounds.map((x) => quantile(x.sync, 0.99))),
    tabP50: summarize(rounds.map((x) => quantile(x.tab, 0.5))),
    tabP99: summarize(rounds.map((x) => quantile(x.tab, 0.99))),
    ackP50: summarize(rounds.map((x) => quantile(x.ack, 0.5))),
    /** ms, or undefined when it had not resolved after firstSyncWaitMs. */
    firstSyncMs: firstSync,
    fastPoll: fastPoll && { pollMs: CONFIG.pollMs, ...fastPoll },
  }
}

// ---- (2) ----

async function partInitialSync(res: Resources) {
  const total = CONFIG.sessions * CONFIG.eventsPerSession
  log(`(2) initial sync: building ${fmt(CONFIG.sessions, 0)} sessions × ${fmt(CONFIG.eventsPerSession, 0)} events on the server store`)
  const serverStore = await res.open(res.newDir('server2'))
  const server = await serve(serverStore)
  res.servers.push(server)
  const buildStart = performance.now()
  const input = messageInput(CONFIG.eventBytes)
  for (let i = 0; i < CONFIG.sessions; i++) {
    const s = await serverStore.createSession()
    for (let done = 0; done < CONFIG.eventsPerSession; done += CONFIG.buildBatch) {
      await s.append(Array.from({ length: Math.min(CONFIG.buildBatch, CONFIG.eventsPerSession - done) }, () => input))
    }
    await s.close()
  }
  const held = await countEvents(serverStore)
  if (held.events !== total || held.sessions !== CONFIG.sessions)
    throw new Error(`the server store holds ${held.sessions} sessions, ${held.events} events; expected ${CONFIG.sessions}, ${total}`)
  log(`built ${fmt(total, 0)} events in ${fmt((performance.now() - buildStart) / 1000, 1)} s`)
  /** Checks a device after a run (untimed): every session and event arrived. */
  const check = async (device: Store, what: string) => {
    const got = await countEvents(device)
    if (got.events !== total || got.sessions !== CONFIG.sessions)
      throw new Error(`${what}: the device holds ${got.sessions} sessions, ${got.events} events; expected ${CONFIG.sessions}, ${total}`)
  }
  let runs = 0
  const notes: string[] = []
  const runConnect = async (): Promise<number> => {
    const device = await res.open(res.newDir('fresh'))
    const checkThis = runs++ === 0 // the first run: the full count (untimed)
    const t0 = performance.now()
    const repl = device.connect(server.url, { live: true })
    await bounded('whenSynced on a fresh device', repl.whenSynced())
    const ms = performance.now() - t0
    if (repl.state.pulled !== total) {
      const note = `whenSynced resolved after ${fmt(ms, 0)} ms with ${repl.state.pulled} of ${total} events pulled (status ${repl.status})`
      notes.push(note)
      log(`  ${note}`)
    }
    await repl.close()
    if (checkThis) await check(device, 'connect')
    await res.closeStore(device)
    return (total / ms) * 1000
  }
  const runDirect = async (): Promise<number> => {
    const device = await res.open(res.newDir('fresh'))
    const checkThis = runs++ === 0
    const t0 = performance.now()
    let cursor: ChangeCursor | null = null
    let copied = 0
    for (;;) {
      const c = await serverStore.changesSince(cursor)
      if (c.batch.sessions.length > 0) copied += (await device.applyChanges(c.batch)).copiedEvents
      cursor = c.cursor
      if (c.done) break
    }
    const ms = performance.now() - t0
    if (copied !== total) throw new Error(`direct loop copied ${copied} events, expected ${total}`)
    if (checkThis) await check(device, 'direct')
    await res.closeStore(device)
    return (total / ms) * 1000
  }
  const variants = [
    { key: 'connect', label: 'store.connect(url, { live: true }) on a fresh fs store, until whenSynced()', run: runConnect },
    { key: 'direct', label: 'server.changesSince(cursor) → device.applyChanges(batch) loop in this process, fresh fs store', run: runDirect },
  ]
  const by = await runRounds(variants, CONFIG.syncRounds, total, log, fmt)
  await res.closeStore(serverStore)
  await res.closeServer(server)
  return { unit: 'events/s', events: total, notes, variants: variants.map((x) => ({ key: x.key, label: x.label, summary: summarize(by.get(x.key)!) })) }
}

// ---- (3) ----

async function partPush(res: Resources) {
  const withPg = CONFIG.pg && postgresBin() !== undefined
  if (CONFIG.pg && !withPg) log('(3) PostgreSQL is not installed: its runs are skipped (scripts/ensure-postgres.sh installs it)')
  let pgUrl: string | undefined
  let postgresVersion: string | undefined
  if (withPg) {
    log('starting a throwaway PostgreSQL cluster (fsync on)')
    res.cluster = await startCluster()
    pgUrl = await res.cluster.createDatabase('bench')
    postgresVersion = (await res.cluster.psql('SHOW server_version')).trim()
  }
  const templates = await pushTemplates(res, CONFIG.clients, CONFIG.clientBatches, CONFIG.clientBatch, messageInput(CONFIG.eventBytes))
  const perClient = CONFIG.clientBatches * CONFIG.clientBatch
  const events = CONFIG.clients * perClient
  const requests = templates.reduce((n, t) => n + t.length, 0)
  const bodyBytes = templates.flat().reduce((n, b) => n + Buffer.byteLength(JSON.stringify(b)), 0) / requests
  log(
    `(3) push throughput: ${CONFIG.clients} clients at once, ${fmt(requests, 0)} pushes of ${fmt(bodyBytes / 1024, 1)} KiB on average, ${fmt(events, 0)} events per run`,
  )
  let run = 0
  const renamed = (): ChangeBatch[][] => {
    const r = run++
    return templates.map((bs) => bs.map((b) => ({ v: 1, sessions: b.sessions.map((e) => ({ ...e, header: { ...e.header, id: `${e.header.id}-r${r}` } })) })))
  }
  const servers: Record<string, ServerProcess> = {}
  servers.fs = await startServerProcess(['fs', res.newDir('push-server')])
  res.servers.push(servers.fs)
  const directFs = await res.open(res.newDir('push-direct'))
  let directPg: Store | undefined
  if (withPg) {
    servers.pg = await startServerProcess(['postgres', pgUrl!, 'sync_server'])
    res.servers.push(servers.pg)
    directPg = await openStore({ storage: 'postgres', url: pgUrl!, schema: 'sync_direct' })
    res.stores.push(directPg)
  }
  const cpu: Record<string, number[]> = { fs: [], pg: [] }
  const runHttp = (which: 'fs' | 'pg') => async (): Promise<number> => {
    const server = servers[which]!
    const bodies = renamed().map((bs) => bs.map((b) => JSON.stringify(b)))
    const cpu0 = await server.cpuUs()
    const t0 = performance.now()
    await Promise.all(
      bodies.map(async (bs) => {
        let copied = 0
        for (const body of bs) {
          const response = await fetch(`${server.url}/push`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/json', 'sessionfold-sync': SYNC_PROTOCOL },
          })
          const text = await response.text()
          if (!response.ok) throw new Error(`push answered ${response.status}: ${text}`)
          const result = JSON.parse(text) as { copiedEvents: number; conflicts: unknown[]; skipped: unknown[] }
          if (result.conflicts.length > 0 || result.skipped.length > 0) throw new Error(`a push left sessions behind: ${text.slice(0, 500)}`)
          copied += result.copiedEvents
        }
        if (copied !== perClient) throw new Error(`a client's pushes copied ${copied} events, expected ${perClient}`)
      }),
    )
    const ms = performance.now() - t0
    cpu[which]!.push((await server.cpuUs()) - cpu0)
    return (events / ms) * 1000
  }
  const runApply = (store: Store) => async (): Promise<number> => {
    const batches = renamed()
    const t0 = performance.now()
    await Promise.all(
      batches.map(async (bs) => {
        let copied = 0
        for (const b of bs) {
          const result = await store.applyChanges(b)
          if (result.conflicts.length > 0 || result.skipped.length > 0)
            throw new Error(`applyChanges left sessions behind: ${JSON.stringify(result).slice(0, 500)}`)
          copied += result.copiedEvents
        }
        if (copied !== perClient) throw new Error(`a client's applyChanges copied ${copied} events, expected ${perClient}`)
      }),
    )
    return (events / (performance.now() - t0)) * 1000
  }
  const variants = [
    { key: 'httpFs', label: 'POST /push, server in a child process, fs store', run: runHttp('fs') },
    { key: 'directFs', label: 'store.applyChanges(batch) straight into an fs store, this process', run: runApply(directFs) },
    ...(withPg
      ? [
          { key: 'httpPg', label: 'POST /push, server in a child process, PostgreSQL store', run: runHttp('pg') },
          { key: 'directPg', label: 'store.applyChanges(batch) straight into a PostgreSQL store, this process', run: runApply(directPg!) },
        ]
      : []),
  ]
  const by = await runRounds(variants, CONFIG.pushRounds, events, log, fmt)
  // Server CPU µs per event, median over the recorded runs (two per round; the warm-up's left out).
  const cpuPerEvent = (which: 'fs' | 'pg') => (cpu[which]!.length <= 2 ? undefined : median(cpu[which]!.slice(2)) / events)
  for (const s of Object.values(servers)) await res.closeServer(s)
  if (directPg) await res.closeStore(directPg)
  await res.closeStore(directFs)
  await res.cluster?.stop()
  res.cluster = undefined
  return {
    unit: 'events/s',
    events,
    requests,
    bodyBytes,
    withPg,
    postgresVersion,
    serverCpuUsPerEvent: { fs: cpuPerEvent('fs'), pg: withPg ? cpuPerEvent('pg') : undefined },
    variants: variants.map((x) => ({ key: x.key, label: x.label, summary: summarize(by.get(x.key)!) })),
  }
}

// ---- report -------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  const parts = new Set(CONFIG.parts.split(',').map((p) => p.trim()))
  const source = sourceState()
  const { root, cleanup } = await benchRoot('sessionfold-http-sync-')
  const res = new Resources(root)
  try {
    const lat = parts.has('1') ? await partLatency(res) : undefined
    const init = parts.has('2') ? await partInitialSync(res) : undefined
    const push = parts.has('3') ? await partPush(res) : undefined

    const headline: HeadlineRatio[] = []
    const of = (p: { variants: { key: string; summary: Summary }[] }, key: string) => p.variants.find((x) => x.key === key)!.summary
    if (lat) {
      headline.push(
        headlineRatio(
          'sync-latency-p50',
          `append on A → subscriber on B, p50 (${CONFIG.appends} appends ${CONFIG.gapMs} ms apart)`,
          'fs → HTTP live → fs',
          'through the server ÷ second store on the same folder',
          lat.syncP50,
          lat.tabP50,
        ),
        headlineRatio(
          'sync-latency-p99',
          'the same, p99',
          'fs → HTTP live → fs',
          'through the server ÷ second store on the same folder',
          lat.syncP99,
          lat.tabP99,
        ),
      )
    }
    if (init) {
      headline.push(
        headlineRatio(
          'sync-initial',
          `initial sync of ${fmt(init.events, 0)} events (${CONFIG.sessions} sessions × ${fmt(CONFIG.eventsPerSession, 0)}, ~${CONFIG.eventBytes} B) to a fresh fs store`,
          'store.connect(url, { live: true })',
          'connect events/s ÷ direct loop events/s',
          of(init, 'connect'),
          of(init, 'direct'),
          { atLeast: TARGETS.initialSync },
        ),
      )
    }
    if (push) {
      headline.push(
        headlineRatio(
          'sync-push-fs',
          `push throughput, ${CONFIG.clients} clients at once, fs server store`,
          'createSyncHandler (child process)',
          'HTTP events/s ÷ direct applyChanges events/s',
          of(push, 'httpFs'),
          of(push, 'directFs'),
        ),
      )
      if (push.withPg)
        headline.push(
          headlineRatio(
            'sync-push-pg',
            `push throughput, ${CONFIG.clients} clients at once, PostgreSQL server store`,
            'createSyncHandler (child process)',
            'HTTP events/s ÷ direct applyChanges events/s',
            of(push, 'httpPg'),
            of(push, 'directPg'),
          ),
        )
    }

    const figures: Figure[] = []
    if (lat) {
      figures.push(
        ['append on A → subscriber on B through the server, p50', lat.syncP50, 'ms', 1],
        ['the same, p99', lat.syncP99, 'ms', 1],
        ["baseline: a second openStore on A's folder, p50", lat.tabP50, 'ms', 1],
        ['the same, p99', lat.tabP99, 'ms', 1],
        ["(diagnostic) A's append → ack, p50", lat.ackP50, 'ms', 1],
      )
    }
    for (const x of init?.variants ?? []) figures.push([`initial sync: ${x.label}`, x.summary, 'events/s', 0])
    for (const x of push?.variants ?? []) figures.push([`push: ${x.label}`, x.summary, 'events/s', 0])
    finishBench('http-sync', 'sessionfold HTTP sync benchmark: store.connect(url) and createSyncHandler on 127.0.0.1', figures, headline, {
      source,
      postgres: push?.postgresVersion,
      config: CONFIG,
      targets: TARGETS,
      headline,
      latency: lat,
      initialSync: init,
      push,
      totalSeconds: (performance.now() - started) / 1000,
    })
  } finally {
    await res.closeAll()
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
