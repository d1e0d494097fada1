// HTTP sync in real Chromium (npm run bench:sync-browser), issue 17's first target: an append on
// one device reaches a subscriber on another through the server, p50 and p99 on loopback, each
// against the same append reaching an observer in another tab of the same browser.
//
// The pages are the sync demo (examples/demo-page/sync.html + sync.ts, served by Vite with the
// demo page's config, so they run this source tree): the page's openStore() on IndexedDB, its
// engine in a Web Worker, `store.connect(url, { live: true })` (token user1) to the demo's sync
// server (examples/sync-server.ts: createSyncHandler over an fs store, node:http on 127.0.0.1).
// Chromium's path and flags are test/support/chromium.ts's.
//   device A, tab 1  a persistent context (its own profile), ?device=a. Per round it creates a
//                    session u1-lat-…, then `appends` single appends of ~200 B, one every `gapMs`.
//   device A, tab 2  another page of that context (same database, its own engine worker): the
//                    baseline, told of tab 1's appends by the growth notices between tabs.
//   device B         another persistent context (another Chromium, another profile), ?device=b,
//                    told of them by the server (A's pushes, the server's live stream to B).
// B and A's tab 2 each observe the session (store.observe(id).projections.subscribe) and note
// when `snap.asOfSeq` first reaches each seq. Each page's clock offset from this process (the
// shortest of several round trips) is measured before every round and taken out. Per append, the
// ms from A's call until each subscriber had it: p50 and p99 per round, and per round the ratio
// through the server ÷ the other tab, over `rounds` rounds after one unrecorded warm-up.
// Diagnostics: A's append until it resolves; an observer on the server's own store, which splits
// the path into A → server and server → B; the POST /push requests as the server answered them
// (node:http's diagnostics channels); live streams and replication states at the end.
//
// Everything started is closed and the temp folder (profiles, server store, Vite's cache) removed
// at the end. Results go to BENCH_OUT when it is set. Settings: BENCH_SYNC_BROWSER_APPENDS (200),
// _GAP_MS (25), _ROUNDS (3), _SERVER_POLL_MS (the server's pollMs, 100 as in the demo), CHROMIUM_PATH.
import { subscribe as subscribeChannel, unsubscribe as unsubscribeChannel } from 'node:diagnostics_channel'
import * as fs from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright'
import { createServer, type ViteDevServer } from 'vite'
import type { EventInput, Replication, Session, SessionView, Store } from '../src/index-node'
import { startDemoSyncServer, type DemoSyncServer } from '../examples/sync-server'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium'
import { messageInput, sourceState } from './common'
import { checkSettings, env, finishBench, fmt, headlineRatio, type HeadlineRatio, summarize, type Summary } from './stats'

const CONFIG = {
  eventBytes: 200,
  /** Appends per round, ms between their starts, rounds after one unrecorded warm-up. */
  appends: env('BENCH_SYNC_BROWSER_APPENDS', 200),
  gapMs: env('BENCH_SYNC_BROWSER_GAP_MS', 25),
  rounds: env('BENCH_SYNC_BROWSER_ROUNDS', 3),
  /** The sync server's pollMs (a push wakes its live streams at once either way). */
  serverPollMs: env('BENCH_SYNC_BROWSER_SERVER_POLL_MS', 100),
  /** A wait that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 60_000,
  /** Round trips to a page per estimate of its clock's offset. */
  clockProbes: 20,
}

const REPO = fileURLToPath(new URL('../', import.meta.url))
const LAYER = "the page's openStore() (Chromium: IndexedDB, engine in a Web Worker) → HTTP live → the same"
const log = (s: string) => process.stderr.write(`${s}\n`)
const now = () => performance.timeOrigin + performance.now()
const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const sorted = (xs: number[]) => xs.sort((x, y) => x - y)
const med = (xs: number[]) => (xs.length === 0 ? Number.NaN : quantile(sorted([...xs]), 0.5))

/** What examples/demo-page/sync.ts puts on window, and what this benchmark adds. */
interface Win {
  demo: { store: Store; replication: Replication }
  /** Tab 1 of A: the session it writes this round. */
  __writer?: Session
  /** B and A's tab 2: this round's observer; seen[seq] = page time its subscriber first held seq. */
  __obs?: { view: SessionView; unsubscribe: (() => void) | null; seen: (number | null)[]; max: number }
}

interface Device {
  name: string
  page: Page
  problems: string[]
}

interface Round {
  /** Sorted ms from A's append call until B's subscriber had it (sync), A's tab 2's (tab), the call resolved (ack), the server's observer had it. */
  sync: number[]
  tab: number[]
  ack: number[]
  server: number[]
  /** Sorted ms from the server's observer having it until B's subscriber had it. */
  serverToB: number[]
  /** ms from the session's creation on A until B listed it. */
  arrivalMs: number
  /** The POST /push requests the server answered during the appends. */
  pushes: { count: number; serverMs: number; gapMs: number; preflights: number }
}

// ---- pushes as the server sees them (node:http's diagnostics channels) --------------------

const pushLog: [number, number][] = []
const preflightLog: number[] = []
const pushStarts = new WeakMap<ServerResponse, number>()
const onRequestStart = (m: unknown) => {
  const { request, response } = m as { request: IncomingMessage; response: ServerResponse }
  if (request.method === 'POST' && request.url?.includes('/push')) pushStarts.set(response, now())
  if (request.method === 'OPTIONS') preflightLog.push(now())
}
const onResponseFinish = (m: unknown) => {
  const start = pushStarts.get((m as { response: ServerResponse }).response)
  if (start !== undefined) pushLog.push([start, now()])
}

function pushesBetween(from: number, to: number): Round['pushes'] {
  const within = pushLog.filter(([start]) => start >= from && start <= to)
  return {
    count: within.length,
    serverMs: med(within.map(([s, f]) => f - s)),
    gapMs: med(within.slice(1).map(([start], i) => start - within[i]![0])),
    preflights: preflightLog.filter((t) => t >= from && t <= to).length,
  }
}

// ---- pages --------------------------------------------------------------------------------

/** `page`'s clock (timeOrigin + now()) minus this process's, from the shortest of clockProbes round trips. */
async function clockOffset(page: Page): Promise<{ offsetMs: number; rttMs: number }> {
  let best = { offsetMs: Number.NaN, rttMs: Number.POSITIVE_INFINITY }
  for (let i = 0; i < CONFIG.clockProbes; i++) {
    const t0 = now()
    const p = await page.evaluate(() => performance.timeOrigin + performance.now())
    const t1 = now()
    if (t1 - t0 < best.rttMs) best = { offsetMs: p - (t0 + t1) / 2, rttMs: t1 - t0 }
  }
  return best
}

/** Observes `id` in `page`'s store, noting when its subscriber first holds each seq. */
async function observe(page: Page, id: string): Promise<void> {
  await page.evaluate(async (id) => {
    const w = window as unknown as Win
    const view = await w.demo.store.observe(id)
    // No function-valued consts or properties in page code: tsx's __name helper is not there.
    const obs: NonNullable<Win['__obs']> = { view, unsubscribe: null, seen: [], max: -1 }
    obs.unsubscribe = view.projections.subscribe((snap) => {
      const t = performance.timeOrigin + performance.now()
      for (let s = obs.max + 1; s <= snap.asOfSeq; s++) obs.seen[s] = t
      if (snap.asOfSeq > obs.max) obs.max = snap.asOfSeq
    })
    w.__obs = obs
  }, id)
}

/** Waits until `device`'s observer holds `seq`. */
async function heard(device: Device, seq: number): Promise<void> {
  try {
    await device.page.waitForFunction((seq) => ((window as unknown as Win).__obs?.max ?? -1) >= seq, seq, { timeout: CONFIG.stallMs, polling: 5 })
  } catch (err) {
    const max = await device.page.evaluate(() => (window as unknown as Win).__obs?.max ?? -1).catch(() => -1)
    throw new Error(`stalled waiting for ${device.name} to hear seq ${seq} (it holds ${max}): ${(err as Error).message}`)
  }
}

/** The observer's page times for seqs 0..last; the observer is closed. */
async function takeSeen(page: Page, last: number): Promise<(number | null)[]> {
  return page.evaluate(async (last) => {
    const w = window as unknown as Win
    const obs = w.__obs!
    w.__obs = undefined
    obs.unsubscribe?.()
    await obs.view.close()
    return Array.from({ length: last + 1 }, (_, s) => obs.seen[s] ?? null)
  }, last)
}

// ---- one round ----------------------------------------------------------------------------

async function round(a: Device, tab: Device, b: Device, server: Store, id: string, json: string): Promise<Round> {
  // Each page's clock against this process's: every page time below is moved onto this process's clock.
  const [offA, offTab, offB] = [(await clockOffset(a.page)).offsetMs, (await clockOffset(tab.page)).offsetMs, (await clockOffset(b.page)).offsetMs]
  // The event goes to the pages as JSON text (its recursive type is too deep for evaluate's).
  const created =
    (await a.page.evaluate(
      async ({ id, json }) => {
        const w = window as unknown as Win
        const t = performance.timeOrigin + performance.now()
        const session = await w.demo.store.createSession({ id })
        await session.append(JSON.parse(json) as EventInput)
        w.__writer = session
        return t
      },
      { id, json },
    )) - offA
  // B has the session once A pushed it and the server streamed it to B.
  const listed =
    (await b.page.evaluate(
      async ({ id, stallMs }) => {
        const w = window as unknown as Win
        const t0 = performance.now()
        for (;;) {
          if ((await w.demo.store.listSessions({ limit: 1000 })).some((h) => h.id === id)) return performance.timeOrigin + performance.now()
          if (performance.now() - t0 > stallMs) throw new Error(`session ${id} did not reach device B in ${stallMs} ms`)
          await new Promise((r) => setTimeout(r, 5))
        }
      },
      { id, stallMs: CONFIG.stallMs },
    )) - offB
  await observe(b.page, id)
  await observe(tab.page, id)
  const serverView = await server.observe(id)
  const seenServer: number[] = []
  let serverMax = -1
  const unsubscribeServer = serverView.projections.subscribe((snap) => {
    const t = now()
    for (let s = serverMax + 1; s <= snap.asOfSeq; s++) seenServer[s] = t
    if (snap.asOfSeq > serverMax) serverMax = snap.asOfSeq
  })
  await heard(b, 0)
  await heard(tab, 0)
  const sent = (
    await a.page.evaluate(
      async ({ json, n, gap }) => {
        const session = (window as unknown as Win).__writer!
        const input = JSON.parse(json) as EventInput
        const out: [number, number, number][] = [] // [seq, call, resolved]
        const t0 = performance.timeOrigin + performance.now()
        for (let i = 0; i < n; i++) {
          const wait = t0 + i * gap - (performance.timeOrigin + performance.now())
          if (wait > 0) await new Promise((r) => setTimeout(r, wait))
          const call = performance.timeOrigin + performance.now()
          const r = await session.append(input)
          out.push([r.lastSeq, call, performance.timeOrigin + performance.now()])
        }
        return out
      },
      { json, n: CONFIG.appends, gap: CONFIG.gapMs },
    )
  ).map(([seq, call, done]) => [seq, call - offA, done - offA] as const)
  const last = sent.at(-1)![0]
  const pushes = pushesBetween(sent[0]![1], sent.at(-1)![2])
  await heard(b, last)
  await heard(tab, last)
  const seenB = (await takeSeen(b.page, last)).map((t) => (t === null ? null : t - offB))
  const seenTab = (await takeSeen(tab.page, last)).map((t) => (t === null ? null : t - offTab))
  unsubscribeServer()
  await serverView.close()
  if (serverMax < last) throw new Error(`the server's observer holds seq ${serverMax}, B ${last}`)
  await a.page.evaluate(() => (window as unknown as Win).__writer?.close())
  const at = (seen: readonly (number | null | undefined)[], seq: number, who: string) => {
    const t = seen[seq]
    if (t === null || t === undefined) throw new Error(`${who} has no time for seq ${seq}`)
    return t
  }
  const match = (seen: readonly (number | null | undefined)[], who: string) => sorted(sent.map(([seq, call]) => at(seen, seq, who) - call))
  return {
    sync: match(seenB, 'device B'),
    tab: match(seenTab, "A's second tab"),
    ack: sorted(sent.map(([, call, done]) => done - call)),
    server: match(seenServer, "the server's observer"),
    serverToB: sorted(sent.map(([seq]) => at(seenB, seq, 'device B') - at(seenServer, seq, "the server's observer"))),
    arrivalMs: listed - created,
    pushes,
  }
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`)
  const source = sourceState()
  const tmp = fs.mkdtempSync(join(os.tmpdir(), 'sessionfold-bench-sync-browser-'))
  let vite: ViteDevServer | undefined
  let sync: DemoSyncServer | undefined
  const contexts: BrowserContext[] = []
  let cleaned = false
  const cleanup = async () => {
    if (cleaned) return
    cleaned = true
    for (const c of contexts.splice(0).reverse()) await c.close().catch((err) => log(`closing a Chromium context: ${err}`))
    await vite?.close().catch((err) => log(`closing vite: ${err}`))
    await sync?.close().catch((err) => log(`closing the sync server: ${err}`))
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)))
  subscribeChannel('http.server.request.start', onRequestStart)
  subscribeChannel('http.server.response.finish', onResponseFinish)

  try {
    sync = await startDemoSyncServer({ dir: join(tmp, 'server'), pollMs: CONFIG.serverPollMs })
    // No file watching: source edited while the benchmark runs must not reload its pages.
    vite = await createServer({
      configFile: join(REPO, 'examples/demo-page/vite.config.ts'),
      cacheDir: join(tmp, 'vite'),
      logLevel: 'warn',
      clearScreen: false,
      server: { host: '127.0.0.1', port: 0, hmr: false, watch: null },
    })
    await vite.listen()
    const base = `http://127.0.0.1:${(vite.httpServer!.address() as AddressInfo).port}`
    log(`sync server ${sync.url}, vite ${base}, temp folder ${tmp}`)

    const contextOf = new Map<string, BrowserContext>()
    const show = async (name: string, device: string, newTab = false): Promise<Device> => {
      let context = contextOf.get(device)
      if (!context) {
        const profile = join(tmp, `profile-${device}`)
        fs.mkdirSync(profile, { recursive: true })
        context = await chromium.launchPersistentContext(profile, {
          executablePath: CHROMIUM_PATH,
          headless: true,
          args: CHROMIUM_ARGS,
          viewport: { width: 1000, height: 560 },
        })
        context.setDefaultTimeout(CONFIG.stallMs)
        contexts.push(context)
        contextOf.set(device, context)
      }
      const page = (!newTab && context.pages()[0]) || (await context.newPage())
      const problems: string[] = []
      const problem = (p: string) => void (problems.push(p), log(`${name}: ${p}`))
      page.on('pageerror', (e) => problem(`page error: ${e.message}`))
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problem(`console ${m.type()}: ${m.text()}`)
      })
      const q = new URLSearchParams({ device, server: sync!.url, control: sync!.control, token: 'user1' })
      await page.goto(`${base}/sync.html?${q}`)
      await page.waitForFunction(() => (window as unknown as { demo?: unknown }).demo !== undefined, undefined, { timeout: CONFIG.stallMs })
      await page.waitForSelector('#sync[data-status="online"]', { timeout: CONFIG.stallMs })
      return { name, page, problems }
    }
    const a = await show("A's tab 1", 'a')
    const b = await show('device B', 'b')
    const tab = await show("A's tab 2", 'a', true)
    const devices = [a, tab, b]
    const chromiumVersion = contexts[0]!.browser()?.version() ?? ''
    const visibility = Object.fromEntries(await Promise.all(devices.map(async (d) => [d.name, await d.page.evaluate(() => document.visibilityState)] as const)))
    for (const [name, v] of Object.entries(visibility)) if (v !== 'visible') log(`warning: ${name} is ${v} (its timers may be throttled)`)
    const clocks = async () => {
      const out: Record<string, { offsetMs: number; rttMs: number }> = {}
      for (const d of devices) out[d.name] = await clockOffset(d.page)
      return out
    }
    const clocksBefore = await clocks()

    log(`${CONFIG.appends} appends ${CONFIG.gapMs} ms apart per round, ${CONFIG.rounds} rounds after a warm-up`)
    const json = JSON.stringify(messageInput(CONFIG.eventBytes))
    const stamp = Date.now().toString(36)
    const rounds: Round[] = []
    for (let r = 0; r <= CONFIG.rounds; r++) {
      const x = await round(a, tab, b, sync.store, `u1-lat-${stamp}-${r === 0 ? 'w' : `r${r}`}`, json)
      if (r > 0) rounds.push(x)
      const q = (xs: number[]) => `p50 ${fmt(quantile(xs, 0.5), 1)}, p99 ${fmt(quantile(xs, 0.99), 1)}`
      log(
        `${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (ms): B ${q(x.sync)}; A's tab 2 ${q(x.tab)}; A's ack ${q(x.ack)}; A → server ${q(x.server)}; server → B ${q(x.serverToB)}; ` +
          `${x.pushes.count} pushes (${fmt(x.pushes.serverMs, 1)} ms each, ${fmt(x.pushes.gapMs, 1)} ms apart); new session on B after ${fmt(x.arrivalMs, 0)}`,
      )
    }
    const clocksAfter = await clocks()
    const liveStreams = sync.liveStreams()
    const replication = Object.fromEntries(
      await Promise.all(
        devices.map(
          async (d) =>
            [
              d.name,
              await d.page.evaluate(() => {
                const s = (window as unknown as Win).demo.replication.state
                return {
                  status: s.status,
                  pending: s.pending,
                  pushed: s.pushed,
                  pulled: s.pulled,
                  conflicts: s.conflicts.length,
                  ...(s.error ? { error: s.error.message } : {}),
                }
              }),
            ] as const,
        ),
      ),
    )

    // ---- report ----
    const of = (pick: (x: Round) => number[], q: number): Summary => summarize(rounds.map((x) => quantile(pick(x), q)))
    const lat = {
      unit: 'ms',
      syncP50: of((x) => x.sync, 0.5),
      syncP99: of((x) => x.sync, 0.99),
      tabP50: of((x) => x.tab, 0.5),
      tabP99: of((x) => x.tab, 0.99),
      ackP50: of((x) => x.ack, 0.5),
      ackP99: of((x) => x.ack, 0.99),
      serverP50: of((x) => x.server, 0.5),
      serverP99: of((x) => x.server, 0.99),
      serverToBP50: of((x) => x.serverToB, 0.5),
      serverToBP99: of((x) => x.serverToB, 0.99),
      arrivalMs: summarize(rounds.map((x) => x.arrivalMs)),
      pushesPerRound: summarize(rounds.map((x) => x.pushes.count)),
      pushServerMs: summarize(rounds.map((x) => x.pushes.serverMs)),
      pushGapMs: summarize(rounds.map((x) => x.pushes.gapMs)),
      preflights: rounds.reduce((n, x) => n + x.pushes.preflights, 0),
    }
    const what = "through the server ÷ A's other tab"
    const headline: HeadlineRatio[] = [
      headlineRatio(
        'sync-browser-latency-p50',
        `Chromium: append on A → subscriber on B, p50 (${CONFIG.appends} appends ${CONFIG.gapMs} ms apart)`,
        LAYER,
        what,
        lat.syncP50,
        lat.tabP50,
      ),
      headlineRatio('sync-browser-latency-p99', 'Chromium: the same, p99', LAYER, what, lat.syncP99, lat.tabP99),
    ]

    const allProblems = devices.flatMap((d) => d.problems.map((p) => `${d.name}: ${p}`))
    if (allProblems.length > 0) log(`page problems: ${allProblems.join(' | ')}`)
    log(`live streams open on the server at the end: ${liveStreams} (one per device expected); CORS preflights: ${lat.preflights}`)
    const q = (xs: number[]) => ({ p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: xs.at(-1) })
    finishBench(
      'sync-browser',
      `sessionfold HTTP sync in Chromium ${chromiumVersion}: two devices (persistent contexts) through the demo sync server on 127.0.0.1`,
      [
        ['A → server (fs) → B, B observing: p50', lat.syncP50, 'ms', 1],
        ['the same, p99', lat.syncP99, 'ms', 1],
        ["baseline: A's second tab, observing: p50", lat.tabP50, 'ms', 1],
        ['the same, p99', lat.tabP99, 'ms', 1],
        ["(diagnostic) A's append call → resolved, p50", lat.ackP50, 'ms', 1],
        ["(diagnostic) A's append → the server's observer, p50", lat.serverP50, 'ms', 1],
        ["(diagnostic) the server's observer → B's subscriber, p50", lat.serverToBP50, 'ms', 1],
        ['(diagnostic) a new session on A → listed on B', lat.arrivalMs, 'ms', 0],
      ],
      headline,
      {
        source,
        chromium: chromiumVersion,
        config: CONFIG,
        headline,
        latency: lat,
        rounds: rounds.map((x) => ({
          sync: q(x.sync),
          tab: q(x.tab),
          ack: q(x.ack),
          server: q(x.server),
          serverToB: q(x.serverToB),
          arrivalMs: x.arrivalMs,
          pushes: x.pushes,
        })),
        clocks: { before: clocksBefore, after: clocksAfter },
        visibility,
        liveStreams,
        replication,
        problems: allProblems,
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
  } finally {
    unsubscribeChannel('http.server.request.start', onRequestStart)
    unsubscribeChannel('http.server.response.finish', onResponseFinish)
    await cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
