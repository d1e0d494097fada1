// HTTP sync through the public API (npm run bench:sync): what store.connect(url) and
// createSyncHandler (sessionfold/server, served by node:http through toNodeListener on
// 127.0.0.1) cost against moving the same changes without HTTP.
//
//   (1) latency: device A (an fs store, store.connect(url, { live: true })) appends one event of
//       about 200 bytes every ~20 ms to a session; device B (another fs store, connected live to
//       the same server, whose store is a third fs store) observes it
//       (store.observe(id).projections.subscribe). Per append, the ms from the append call until
//       B's subscriber gets a snapshot that holds it; p50 and p99 per round. Baseline, on the same
//       appends: a second openStore on A's own folder in this process (the closest Node stand-in
//       for another tab of the same browser: it follows appends through the fs growth watcher)
//       observing the same session. Diagnostics: A's own ack, one round with A connected with a
//       short pollMs, and connect → whenSynced() of live replications with nothing to sync.
//   (2) initial sync: a fresh device (an fs store) connected live to a server whose fs store holds
//       100 sessions × 1,000 events of about 200 bytes: from connect() until whenSynced() (and the
//       device holds every event), against a direct loop in this process between the same server
//       store and another fresh fs store (server.changesSince(cursor) → device.applyChanges(batch)
//       until done). events/s of both, and the ratio.
//   (3) push throughput: 50 clients at once, each POSTing its own batches one after another to
//       /push of a server running in a child process, whose store is an fs store, then a
//       PostgreSQL store (a throwaway cluster, fsync on): aggregate events/s. Each client's
//       batches are made once by changesSince({ maxEvents: 100 }) of its own memory store (4 × 100
//       events of ~200 B) and sent again each run under new session ids, JSON made before the
//       clock starts. Baseline: the same batches applied by 50 concurrent store.applyChanges(batch)
//       call chains straight into a store of the same kind in this process (no HTTP). Also the
//       server process's CPU per event.
//
// Every figure is the median over rounds (min and max beside it) after one unrecorded warm-up
// round; ratios pair runs of the same round, in an order that rotates from round to round. Stores
// live in a temp folder removed at the end; servers, the child process and the cluster are
// stopped. Results go to BENCH_OUT when it is set (nothing is written otherwise). Settings:
// BENCH_SYNC_PARTS (default '1,2,3'), BENCH_SYNC_APPENDS, BENCH_SYNC_GAP_MS,
// BENCH_SYNC_LATENCY_ROUNDS, BENCH_SYNC_POLL_MS (device A's pollMs in one extra diagnostic latency
// round; 0 skips it), BENCH_SYNC_SESSIONS, BENCH_SYNC_EVENTS, BENCH_SYNC_ROUNDS,
// BENCH_SYNC_CLIENTS, BENCH_SYNC_CLIENT_BATCHES, BENCH_SYNC_CLIENT_BATCH, BENCH_SYNC_PUSH_ROUNDS,
// BENCH_SYNC_PG (0: no PostgreSQL).
import { fork, type ChildProcess } from 'node:child_process'
import * as fs from 'node:fs'
import * as http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ChangeBatch, ChangeCursor } from '../src/core/changes'
import { openStore, type Store } from '../src/index-node'
import { createSyncHandler, toNodeListener } from '../src/sync/server/index'
import { startCluster, postgresBin, type PgCluster } from '../test/support/postgres'
import { messageInput, runRounds, sourceState } from './common'
import { benchRoot, checkSettings, env, fmt, fmtSummary, headlineRatio, type HeadlineRatio, median, printTable, summarize, type Summary } from './stats'

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

/** Races `p` against stallMs. */
async function bounded<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`stalled waiting for ${what}`)), CONFIG.stallMs) })])
  } finally {
    clearTimeout(timer)
  }
}

// ---- a sync server ------------------------------------------------------------------------

interface Server {
  url: string
  close(): Promise<void>
}

/** createSyncHandler over `store`, served by node:http on 127.0.0.1 and a free port. */
async function serve(store: Store): Promise<Server> {
  const server = http.createServer(toNodeListener(createSyncHandler({ store, authorize: () => true })))
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}

// ---- (3) the server child process ---------------------------------------------------------

type ToServer = { kind: 'cpu' } | { kind: 'close' }
type FromServer = { kind: 'ready'; url: string } | { kind: 'cpu'; us: number } | { kind: 'error'; message: string }

async function serverChild(): Promise<void> {
  const [storage, where, schema] = process.argv.slice(process.argv.indexOf('--server') + 1)
  const send = (m: FromServer) => process.send!(m)
  try {
    const store = storage === 'postgres'
      ? await openStore({ storage: 'postgres', url: where!, schema: schema! })
      : await openStore({ storage: 'fs', dir: where! })
    const server = await serve(store)
    process.on('message', async (m: ToServer) => {
      if (m.kind === 'cpu') {
        const u = process.cpuUsage()
        send({ kind: 'cpu', us: u.user + u.system })
      } else if (m.kind === 'close') {
        await server.close()
        await store.close()
        process.exit(0)
      }
    })
    process.on('disconnect', () => process.exit(0))
    send({ kind: 'ready', url: server.url })
  } catch (err) {
    send({ kind: 'error', message: String((err as Error)?.stack ?? err) })
    process.exit(1)
  }
}

interface ServerProcess {
  url: string
  /** CPU µs of the server process so far (all its threads). */
  cpuUs(): Promise<number>
  close(): Promise<void>
}

async function startServerProcess(args: string[]): Promise<ServerProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--server', ...args], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const next = <K extends FromServer['kind']>(kind: K) => new Promise<Extract<FromServer, { kind: K }>>((resolve, reject) => {
    const onMessage = (m: FromServer) => {
      if (m.kind === 'error') reject(new Error(`the server process failed: ${m.message}`))
      if (m.kind !== kind) return
      child.off('message', onMessage)
      child.off('exit', onExit)
      resolve(m as Extract<FromServer, { kind: K }>)
    }
    const onExit = (code: number | null) => reject(new Error(`the server process exited (${code}) while waiting for ${kind}`))
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
  const ready = await next('ready').catch((err) => {
    if (child.exitCode === null) child.kill()
    throw err
  })
  return {
    url: ready.url,
    async cpuUs() {
      const answer = next('cpu')
      child.send({ kind: 'cpu' } satisfies ToServer)
      return (await answer).us
    },
    async close() {
      if (child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.send({ kind: 'close' } satisfies ToServer)
      const timer = setTimeout(() => child.kill(), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

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
  await until(`round ${round}: both observers to hold the first event`, () => seenB.some(([s]) => s >= 0) && seenTab.some(([s]) => s >= 0))
    .catch((err: Error) => { throw new Error(`${err.message} (B saw ${JSON.stringify(seenB.map(([s]) => s))}, the second store on A's folder ${JSON.stringify(seenTab.map(([s]) => s))})`) })
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

// ---- (2) initial sync ---------------------------------------------------------------------

/** Every event a store holds, counted through changesSince (untimed checks). */
async function countEvents(store: Store): Promise<{ sessions: number; events: number }> {
  let cursor: ChangeCursor | null = null
  const ids = new Set<string>()
  let events = 0
  for (;;) {
    const c = await store.changesSince(cursor, { maxEvents: 10_000 })
    for (const e of c.batch.sessions) {
      ids.add(e.header.id)
      events += e.events.length
    }
    cursor = c.cursor
    if (c.done) break
  }
  return { sessions: ids.size, events }
}

// ---- main ---------------------------------------------------------------------------------

/** What the parts share: the temp folder, and everything to close at the end. */
class Resources {
  readonly stores: Store[] = []
  readonly servers: { close(): Promise<void> }[] = []
  cluster: PgCluster | undefined
  #dirs = 0
  constructor(readonly root: string) {}

  newDir(name: string): string {
    const d = join(this.root, `${name}-${this.#dirs++}`)
    fs.mkdirSync(d)
    return d
  }

  async open(dir: string): Promise<Store> {
    const s = await openStore({ storage: 'fs', dir })
    this.stores.push(s)
    return s
  }

  async closeStore(s: Store): Promise<void> {
    const i = this.stores.indexOf(s)
    if (i >= 0) this.stores.splice(i, 1)
    await s.close()
  }

  async closeServer(s: { close(): Promise<void> }): Promise<void> {
    const i = this.servers.indexOf(s)
    if (i >= 0) this.servers.splice(i, 1)
    await s.close()
  }

  async closeAll(): Promise<void> {
    for (const s of this.servers.splice(0).reverse()) await s.close().catch((err) => log(`closing a server: ${err}`))
    for (const s of this.stores.splice(0).reverse()) await s.close().catch((err) => log(`closing a store: ${err}`))
    await this.cluster?.stop().catch((err) => log(`stopping the cluster: ${err}`))
    this.cluster = undefined
  }
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
  log(`whenSynced() of two live replications with nothing to sync: ${firstSync === undefined ? `not resolved after ${fmt(CONFIG.firstSyncWaitMs, 0)} ms (not waited for further)` : `${fmt(firstSync, 0)} ms`}`)
  await until('devices A and B to be online', () => replA.status === 'online' && replB.status === 'online')
  const rounds: LatencyRound[] = []
  for (let r = 0; r <= CONFIG.latencyRounds; r++) {
    const x = await latencyRound(devA, devB, tab, String(r))
    if (r > 0) rounds.push(x)
    log(`latency ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.latencyRounds}`}: through the server p50 ${fmt(quantile(x.sync, 0.5), 1)} ms, p99 ${fmt(quantile(x.sync, 0.99), 1)} ms;` +
      ` second store on A's folder p50 ${fmt(quantile(x.tab, 0.5), 1)} ms, p99 ${fmt(quantile(x.tab, 0.99), 1)} ms; A's ack p50 ${fmt(quantile(x.ack, 0.5), 1)} ms`)
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
  if (held.events !== total || held.sessions !== CONFIG.sessions) throw new Error(`the server store holds ${held.sessions} sessions, ${held.events} events; expected ${CONFIG.sessions}, ${total}`)
  log(`built ${fmt(total, 0)} events in ${fmt((performance.now() - buildStart) / 1000, 1)} s`)
  /** Checks a device after a run (untimed): every session and event arrived. */
  const check = async (device: Store, what: string) => {
    const got = await countEvents(device)
    if (got.events !== total || got.sessions !== CONFIG.sessions) throw new Error(`${what}: the device holds ${got.sessions} sessions, ${got.events} events; expected ${CONFIG.sessions}, ${total}`)
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
  // Each client's own memory store makes its batches once (untimed): one session of
  // clientBatches × clientBatch events, cut by changesSince({ maxEvents: clientBatch }). Each run
  // sends them again under new session ids (the header's id changed), so every run writes new sessions.
  const input = messageInput(CONFIG.eventBytes)
  const templates: ChangeBatch[][] = []
  for (let i = 0; i < CONFIG.clients; i++) {
    const c = await openStore({ storage: 'memory', worker: false })
    res.stores.push(c)
    const s = await c.createSession({ id: `client${i}` })
    for (let j = 0; j < CONFIG.clientBatches; j++) await s.append(Array.from({ length: CONFIG.clientBatch }, () => input))
    await s.close()
    const out: ChangeBatch[] = []
    let cursor: ChangeCursor | null = null
    for (;;) {
      const ch = await c.changesSince(cursor, { maxEvents: CONFIG.clientBatch })
      if (ch.batch.sessions.length > 0) out.push(ch.batch)
      cursor = ch.cursor
      if (ch.done) break
    }
    templates.push(out)
    await res.closeStore(c)
  }
  const perClient = CONFIG.clientBatches * CONFIG.clientBatch
  const events = CONFIG.clients * perClient
  const requests = templates.reduce((n, t) => n + t.length, 0)
  const bodyBytes = templates.flat().reduce((n, b) => n + Buffer.byteLength(JSON.stringify(b)), 0) / requests
  log(`(3) push throughput: ${CONFIG.clients} clients at once, ${fmt(requests, 0)} pushes of ${fmt(bodyBytes / 1024, 1)} KiB on average, ${fmt(events, 0)} events per run`)
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
    await Promise.all(bodies.map(async (bs) => {
      let copied = 0
      for (const body of bs) {
        const response = await fetch(`${server.url}/push`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'sessionfold-sync': '1' } })
        const text = await response.text()
        if (!response.ok) throw new Error(`push answered ${response.status}: ${text}`)
        const result = JSON.parse(text) as { copiedEvents: number; conflicts: unknown[]; skipped: unknown[] }
        if (result.conflicts.length > 0 || result.skipped.length > 0) throw new Error(`a push left sessions behind: ${text.slice(0, 500)}`)
        copied += result.copiedEvents
      }
      if (copied !== perClient) throw new Error(`a client's pushes copied ${copied} events, expected ${perClient}`)
    }))
    const ms = performance.now() - t0
    cpu[which]!.push((await server.cpuUs()) - cpu0)
    return (events / ms) * 1000
  }
  const runApply = (store: Store) => async (): Promise<number> => {
    const batches = renamed()
    const t0 = performance.now()
    await Promise.all(batches.map(async (bs) => {
      let copied = 0
      for (const b of bs) {
        const result = await store.applyChanges(b)
        if (result.conflicts.length > 0 || result.skipped.length > 0) throw new Error(`applyChanges left sessions behind: ${JSON.stringify(result).slice(0, 500)}`)
        copied += result.copiedEvents
      }
      if (copied !== perClient) throw new Error(`a client's applyChanges copied ${copied} events, expected ${perClient}`)
    }))
    return (events / (performance.now() - t0)) * 1000
  }
  const variants = [
    { key: 'httpFs', label: 'POST /push, server in a child process, fs store', run: runHttp('fs') },
    { key: 'directFs', label: 'store.applyChanges(batch) straight into an fs store, this process', run: runApply(directFs) },
    ...(withPg ? [
      { key: 'httpPg', label: 'POST /push, server in a child process, PostgreSQL store', run: runHttp('pg') },
      { key: 'directPg', label: 'store.applyChanges(batch) straight into a PostgreSQL store, this process', run: runApply(directPg!) },
    ] : []),
  ]
  const by = await runRounds(variants, CONFIG.pushRounds, events, log, fmt)
  // Server CPU µs per event, median over the recorded runs (two per round; the warm-up's left out).
  const cpuPerEvent = (which: 'fs' | 'pg') => cpu[which]!.length <= 2 ? undefined : median(cpu[which]!.slice(2)) / events
  for (const s of Object.values(servers)) await res.closeServer(s)
  if (directPg) await res.closeStore(directPg)
  await res.closeStore(directFs)
  await res.cluster?.stop()
  res.cluster = undefined
  return {
    unit: 'events/s', events, requests, bodyBytes, withPg, postgresVersion,
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
        headlineRatio('sync-latency-p50', `append on A → subscriber on B, p50 (${CONFIG.appends} appends ${CONFIG.gapMs} ms apart)`, 'fs → HTTP live → fs',
          'through the server ÷ second store on the same folder', lat.syncP50, lat.tabP50),
        headlineRatio('sync-latency-p99', 'the same, p99', 'fs → HTTP live → fs', 'through the server ÷ second store on the same folder', lat.syncP99, lat.tabP99),
      )
    }
    if (init) {
      headline.push(headlineRatio('sync-initial', `initial sync of ${fmt(init.events, 0)} events (${CONFIG.sessions} sessions × ${fmt(CONFIG.eventsPerSession, 0)}, ~${CONFIG.eventBytes} B) to a fresh fs store`,
        'store.connect(url, { live: true })', 'connect events/s ÷ direct loop events/s', of(init, 'connect'), of(init, 'direct'), { atLeast: TARGETS.initialSync }))
    }
    if (push) {
      headline.push(headlineRatio('sync-push-fs', `push throughput, ${CONFIG.clients} clients at once, fs server store`, 'createSyncHandler (child process)', 'HTTP events/s ÷ direct applyChanges events/s', of(push, 'httpFs'), of(push, 'directFs')))
      if (push.withPg) headline.push(headlineRatio('sync-push-pg', `push throughput, ${CONFIG.clients} clients at once, PostgreSQL server store`, 'createSyncHandler (child process)', 'HTTP events/s ÷ direct applyChanges events/s', of(push, 'httpPg'), of(push, 'directPg')))
    }

    console.log('')
    console.log('sessionfold HTTP sync benchmark: store.connect(url) and createSyncHandler on 127.0.0.1')
    console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? '?'})${push?.postgresVersion ? `; PostgreSQL ${push.postgresVersion}` : ''}`)
    if (source.commit) console.log(`source: commit ${source.commit}${source.dirty?.length ? `, with uncommitted changes to ${source.dirty.join(', ')}` : ''}`)
    console.log('figures: median (min–max) over rounds; ratios are per round, median (min–max)')
    if (lat) {
      console.log('')
      console.log(`(1) Latency, ms from A's append call until a subscriber has it: ${CONFIG.appends} appends of ~${CONFIG.eventBytes} B, ${CONFIG.gapMs} ms apart; ${CONFIG.latencyRounds} rounds`)
      printTable(['path', 'p50 ms', 'p99 ms'], [
        ['A (fs, connect live) → server (fs) → B (fs, connect live), B observing', fmtSummary(lat.syncP50, 1), fmtSummary(lat.syncP99, 1)],
        ["baseline: a second openStore on A's folder, same process, observing", fmtSummary(lat.tabP50, 1), fmtSummary(lat.tabP99, 1)],
        ["(diagnostic) A's append call → ack (durable on A)", fmtSummary(lat.ackP50, 1), ''],
        ...(lat.fastPoll ? [[`(diagnostic) through the server, A connected with pollMs ${lat.fastPoll.pollMs} (one round)`, fmt(lat.fastPoll.p50, 1), fmt(lat.fastPoll.p99, 1)]] : []),
        ['(diagnostic) connect → whenSynced() of two live replications, nothing to sync', lat.firstSyncMs === undefined ? `> ${fmt(CONFIG.firstSyncWaitMs, 0)}` : fmt(lat.firstSyncMs, 0), ''],
      ], ['left', 'right', 'right'])
    }
    if (init) {
      console.log('')
      console.log(`(2) Initial sync of ${fmt(init.events, 0)} events to a fresh fs store, events/s; ${CONFIG.syncRounds} rounds`)
      printTable(['variant', 'events/s median (min–max)'], init.variants.map((x) => [x.label, fmtSummary(x.summary, 0)]), ['left', 'right'])
      for (const n of init.notes) console.log(`  note: ${n}`)
    }
    if (push) {
      console.log('')
      console.log(`(3) Push throughput: ${CONFIG.clients} clients at once, each pushing ${fmt(push.requests / CONFIG.clients, 0)} batches (changesSince, maxEvents ${CONFIG.clientBatch}; ${fmt(push.bodyBytes / 1024, 1)} KiB per body) one after another; aggregate events/s; ${CONFIG.pushRounds} rounds`)
      printTable(['variant', 'events/s median (min–max)'], push.variants.map((x) => [x.label, fmtSummary(x.summary, 0)]), ['left', 'right'])
      const us = (v: number | undefined) => (v === undefined ? 'n/a' : fmt(v, 0))
      console.log(`  server process CPU per event pushed (µs, all its threads): fs ${us(push.serverCpuUsPerEvent.fs)}${push.withPg ? `, PostgreSQL ${us(push.serverCpuUsPerEvent.pg)} (the database's own CPU not included)` : ''}`)
    }
    console.log('')
    console.log('Headline figures')
    printTable(
      ['figure', 'layer', 'ratio', 'per round median (min–max)', 'of medians', 'target', 'result'],
      headline.map((x) => [x.figure, x.layer, x.ratio, fmtSummary(x.perRound, 2), fmt(x.ofMedians, 2), x.target || '(information)', x.result]),
      ['left', 'left', 'left', 'right', 'right', 'right', 'left'],
    )
    const totalSeconds = (performance.now() - started) / 1000
    console.log('')
    console.log(`total ${fmt(totalSeconds, 1)} s`)

    const out = process.env.BENCH_OUT
    if (out) {
      const results = {
        benchmark: 'http-sync',
        date: new Date().toISOString(),
        source,
        environment: { node: process.version, platform: os.platform(), arch: os.arch(), cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, postgres: push?.postgresVersion },
        config: CONFIG,
        targets: TARGETS,
        headline,
        latency: lat,
        initialSync: init,
        push,
        totalSeconds,
      }
      fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
      console.log(`results written to ${out}`)
    }
  } finally {
    await res.closeAll()
    cleanup()
  }
}

if (process.argv.includes('--server')) {
  void serverChild()
} else {
  main().catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
}
