// The session list (§14) through the public API (npm run bench:sessions): store.sessions(query),
// the live list an app's sidebar shows, read from the store-wide session index.
//   (1) First page, a big store vs one of 100 sessions: from store.sessions({ limit: 50 }) to its
//       first listener call (loaded). Cold: a new store object each round (openStore with its
//       defaults, timed apart), then the list; warm: a second list on that open store. fs and
//       PostgreSQL in Node, IndexedDB in Chromium (the page's openStore({ name })).
//   (2) Update latency in another process: a child process (bench/sessions-child.ts) opens the
//       same store and subscribes to store.sessions(); this process appends one event to an old
//       session (at the bottom of the list), and the time until the child's list shows it first,
//       grown, is measured on this process's clock (append → the child's listener → IPC back).
//       p50 and p99 of the big store against the 100-session one, in alternating blocks. fs and
//       PostgreSQL. Diagnostic: the same with an appender that keeps no index of its own.
//   (3) The index's cost on appends: batched appends (10,000 events, batches of 100, into 4
//       sessions) by an engine over the fs adapter, against the same engine over the same adapter
//       with its change feed hidden, where no index runs (sessionIndexOf needs a feed); and the
//       folder's bytes after it, with the index's share (index/ and the _summary rows).
// The big stores are built once per run through the API (createSession({ title }) in parallel
// chunks, each handle closed, openStore's durability 'relaxed' for the build; PostgreSQL with
// synchronous_commit off meanwhile), all three at once, up to BENCH_SESSIONS_BIG sessions or
// until the build budget runs out: the sizes reached are the sizes reported. Ratios pair runs of
// the same round (the order rotating), after a warm-up round. Settings: BENCH_SESSIONS_BIG,
// _SMALL, _BUILD_S, _BROWSER_BUILD_S, _BUILD_CONCURRENCY, _PAGE_ROUNDS, _APPENDS, _DIAG_APPENDS,
// _OVERHEAD_ROUNDS, _BACKENDS (fs,postgres,chromium), _PHASES (pages,update,overhead); CHROMIUM_PATH.
import { type ChildProcess, fork, spawnSync } from 'node:child_process'
import * as fs from 'node:fs'
import os from 'node:os'
import { join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { serveBenchPage } from './support/vite-page'
import { createFsAdapter, type FsPromises } from '../src/backends/fs'
import { createPostgresAdapter } from '../src/backends/postgres'
import { Engine } from '../src/engine'
import { openStore, type EventInput, type Store } from '../src/index-node'
import { RECORDS, recordsOf } from '../src/storage/records'
import { openSealed } from '../src/storage/codec'
import { nodeCipher, nodeCompressor } from '../src/storage/codec/node'
import type { KeyValueStore, StorageAdapter } from '../src/storage/types'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium'
import { startCluster, type PgCluster } from '../test/support/postgres'
import type { ColdPage, SessionsPageApi } from './sessions-browser/page'
import type { ChildTask, FromChild, Target, ToWatcher } from './sessions-child'
import { quantile } from './support/latency'
import type { BuildOptions, BuildResult } from './support/session-build'
import { messageInput, rotate, sourceState } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  type Figure,
  type HeadlineRatio,
  median,
  settlesWithin,
  summarize,
  type Summary,
} from './stats'

const CONFIG = {
  /** Sessions in the big store (the build stops earlier when its budget runs out). */
  big: env('BENCH_SESSIONS_BIG', 100_000),
  small: env('BENCH_SESSIONS_SMALL', 100),
  /** Wall-clock budget of each Node build (fs, PostgreSQL), seconds; the three builds run at once. */
  buildSeconds: env('BENCH_SESSIONS_BUILD_S', 240),
  /** The same for Chromium's (IndexedDB). */
  browserBuildSeconds: env('BENCH_SESSIONS_BROWSER_BUILD_S', 240),
  /** createSession calls in flight at once while building. */
  buildConcurrency: env('BENCH_SESSIONS_BUILD_CONCURRENCY', 64),
  /** Sessions per build chunk (the index catches up after each). */
  buildChunk: 500,
  /** The list's page. */
  limit: 50,
  /** (1) rounds, after one unrecorded warm-up round. */
  pageRounds: env('BENCH_SESSIONS_PAGE_ROUNDS', 7),
  /** (2) appends per store size, in blocks of `block` (the sizes alternating), after a warm-up block of `warmUp`. */
  appends: env('BENCH_SESSIONS_APPENDS', 100),
  block: 10,
  warmUp: 5,
  /** (2, diagnostic) appends per size by an appender that keeps no index. */
  diagAppends: env('BENCH_SESSIONS_DIAG_APPENDS', 30),
  /** (2) idle ms after each sample: uniform in [gapMinMs, gapMaxMs], so samples fall on every phase of the list's timers. */
  gapMinMs: 20,
  gapMaxMs: 150,
  /** (2) a sample the other process has not seen after this long counts as this long (and is reported). */
  seenTimeoutMs: 15_000,
  /**
   * (3) events per run, per append, sessions written (round robin); rounds after a warm-up round,
   * each of `overheadRepeats` palindromes (A B B A): a run takes a few hundred ms, and a 2 % target
   * needs many of them on a shared machine.
   */
  overheadEvents: 10_000,
  overheadBatch: 100,
  overheadSessions: 4,
  /** (3) Sessions written an hour apart, for the index's size on a store written over days. */
  spreadSessions: env('BENCH_SESSIONS_SPREAD', 40),
  overheadRounds: env('BENCH_SESSIONS_OVERHEAD_ROUNDS', 9),
  overheadRepeats: env('BENCH_SESSIONS_OVERHEAD_REPEATS', 2),
  eventBytes: 300,
  /** (diagnostic) fresh engines per store for the anatomy of a first page. */
  anatomySamples: 5,
  /** A step of the benchmark that makes no progress for this long is a hang. */
  stallMs: 120_000,
}

const TARGETS = {
  /** (1) first page at the big size ÷ at 100 sessions, at most (cold and warm). */
  page: 2,
  /** (2) p50 and p99 at the big size ÷ at 100 sessions, at most. */
  update: 2,
  /** (2) fs: p99 in ms, at most. */
  updateP99Ms: 100,
  /** (3) append time with the index ÷ without, at most. */
  appendOverhead: 1.02,
  /** (3) store bytes with the index ÷ without, at most. */
  sizeOverhead: 1.01,
}

type Backend = 'fs' | 'postgres' | 'chromium'
type Size = 'big' | 'small'
const SIZES: readonly Size[] = ['big', 'small']
const BACKENDS = (process.env.BENCH_SESSIONS_BACKENDS || 'fs,postgres,chromium').split(',').map((s) => s.trim()) as Backend[]
const PHASES = (process.env.BENCH_SESSIONS_PHASES || 'pages,update,overhead').split(',').map((s) => s.trim())

const LAYER: Record<Backend, string> = {
  fs: "openStore({ storage: 'fs', dir }) in a worker",
  postgres: "openStore({ storage: 'postgres', url }) in a worker",
  chromium: "Chromium: the page's openStore({ name }) (IndexedDB, its Web Worker)",
}
const NAME: Record<Backend, string> = { fs: 'fs', postgres: 'PostgreSQL', chromium: 'Chromium (IndexedDB)' }

const REPO = fileURLToPath(new URL('..', import.meta.url))
const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const now = () => performance.now()
const within = <T>(promise: Promise<T>, what: string, ms = CONFIG.stallMs): Promise<T> => settlesWithin(promise, what, ms)
const n0 = (x: number) => fmt(x, 0)

// ---- child processes ------------------------------------------------------------------------

interface Child {
  proc: ChildProcess
  /** The next message of `kind` (a 'ready' or 'built' that came first is kept for it). */
  next<K extends FromChild['kind']>(kind: K, timeoutMs: number): Promise<Extract<FromChild, { kind: K }>>
  send(m: ToWatcher): void
  stop(): Promise<void>
}

function startChild(task: ChildTask): Child {
  const proc = fork(join(REPO, 'bench/sessions-child.ts'), [JSON.stringify(task)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  type Waiter = { kind: string; resolve: (m: FromChild) => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> }
  const waiters: Waiter[] = []
  const kept = new Map<string, FromChild>()
  let failure: Error | undefined
  const fail = (err: Error) => {
    failure ??= err
    for (const w of waiters.splice(0)) {
      clearTimeout(w.timer)
      w.reject(err)
    }
  }
  proc.on('message', (m: FromChild) => {
    if (m.kind === 'log') return log(m.line)
    if (m.kind === 'error') return fail(new Error(`child (${task.mode} ${task.target.storage}): ${m.message}`))
    const i = waiters.findIndex((w) => w.kind === m.kind)
    if (i >= 0) {
      const [w] = waiters.splice(i, 1)
      clearTimeout(w!.timer)
      w!.resolve(m)
    } else if (m.kind === 'ready' || m.kind === 'built') kept.set(m.kind, m)
  })
  const exited = new Promise<void>((resolve) =>
    proc.on('exit', (code, signal) => {
      fail(new Error(`child (${task.mode} ${task.target.storage}) exited (${code ?? signal})`))
      resolve()
    }),
  )
  return {
    proc,
    next(kind, timeoutMs) {
      const k = kept.get(kind)
      if (k) {
        kept.delete(kind)
        return Promise.resolve(k as never)
      }
      if (failure) return Promise.reject(failure)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const i = waiters.findIndex((w) => w.timer === timer)
          if (i >= 0) waiters.splice(i, 1)
          reject(new TimeoutError(`child (${task.mode} ${task.target.storage}): no '${kind}' within ${timeoutMs / 1000} s`))
        }, timeoutMs)
        waiters.push({ kind, resolve: resolve as (m: FromChild) => void, reject, timer })
      })
    },
    send: (m) => void proc.send(m),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        if (proc.connected) proc.send({ kind: 'stop' } satisfies ToWatcher)
        const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(killer)
      }
    },
  }
}

class TimeoutError extends Error {}

// ---- Chromium -------------------------------------------------------------------------------

interface Browser {
  page: Page
  version: string
  close(): Promise<void>
}

async function startBrowser(tmp: string): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`)
  let server: ViteDevServer | undefined
  let context: BrowserContext | undefined
  const close = async () => {
    await context?.close().catch((err) => log(`closing Chromium: ${err}`))
    await server?.close().catch((err) => log(`closing vite: ${err}`))
  }
  try {
    const served = await serveBenchPage('sessions-browser', join(tmp, 'vite'))
    server = served.server
    context = await chromium.launchPersistentContext(join(tmp, 'profile'), { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS })
    const version = context.browser()?.version() ?? ''
    const page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (m) => {
      const text = m.text()
      if (text.startsWith('[bench] ')) log(text.slice(8))
      else if ((m.type() === 'error' || m.type() === 'warning') && !m.location().url.endsWith('/favicon.ico')) log(`page ${m.type()}: ${text}`)
    })
    page.on('pageerror', (err) => log(`page error: ${err.message}`))
    await page.goto(served.url)
    await page.waitForFunction(() => typeof (window as unknown as { sessionsBench?: unknown }).sessionsBench === 'object', null, { timeout: CONFIG.stallMs })
    log(`Chromium ${version}, profile (IndexedDB on disk) in ${join(tmp, 'profile')}`)
    return { page, version, close }
  } catch (err) {
    await close()
    throw err
  }
}

/** Calls window.sessionsBench[name](...args) in the page; the timing happens there. */
async function call<K extends keyof SessionsPageApi>(
  page: Page,
  name: K,
  args: Parameters<SessionsPageApi[K]>,
  stallMs = CONFIG.stallMs,
): Promise<Awaited<ReturnType<SessionsPageApi[K]>>> {
  // An inline function only: tsx's __name helper is not in the page.
  const result = page.evaluate(
    ({ name, args }) => {
      const api = (window as unknown as { sessionsBench: Record<string, (...a: unknown[]) => unknown> }).sessionsBench
      return api[name]!(...args)
    },
    { name: name as string, args: args as unknown[] },
  )
  return (await within(result, `the page's ${String(name)}()`, stallMs)) as Awaited<ReturnType<SessionsPageApi[K]>>
}

// ---- storage helpers ------------------------------------------------------------------------

/** `inner` under the record codec as openStore() puts it (compression 'deflate', no key): what its engine writes and reads. */
const sealed = (inner: StorageAdapter): Promise<StorageAdapter> => openSealed(inner, { compressor: nodeCompressor, cipher: nodeCipher })

/** The adapter without its change feed: an engine over it keeps no session index (sessionIndexOf needs a feed). */
function withoutFeed(adapter: StorageAdapter): StorageAdapter {
  const { feed: _feed, ...rest } = adapter
  return rest
}

interface OpStat {
  calls: number
  /** Summed ms of the calls (they may overlap). */
  ms: number
}

/** The adapter with its records, feed and session reads counted and timed (what a page costs, call by call). */
function counted(adapter: StorageAdapter): { storage: StorageAdapter; ops: Map<string, OpStat> } {
  const ops = new Map<string, OpStat>()
  const timedCall =
    <A extends unknown[], R>(name: string, f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      const t0 = now()
      try {
        return await f(...a)
      } finally {
        const s = ops.get(name) ?? { calls: 0, ms: 0 }
        s.calls++
        s.ms += now() - t0
        ops.set(name, s)
      }
    }
  const records = recordsOf(adapter)
  if (!records || !adapter.feed) throw new Error(`the ${adapter.kind} adapter has no records or feed`)
  const kv: KeyValueStore = {
    get: timedCall('records.get', (k) => records.get(k)),
    put: timedCall('records.put', (k, v, o) => records.put(k, v, o)),
    delete: timedCall('records.delete', (k) => records.delete(k)),
    list: timedCall('records.list', (p, r) => records.list(p, r)),
  }
  const feed = adapter.feed
  const storage = {
    ...adapter,
    getSession: timedCall('getSession', (id: string) => adapter.getSession(id)),
    feed: {
      id: timedCall('feed.id', () => feed.id()),
      head: timedCall('feed.head', () => feed.head()),
      read: timedCall('feed.read', (after: string, limit: number) => feed.read(after, limit)),
    },
    [RECORDS]: kv,
  } as StorageAdapter
  return { storage, ops }
}

/** node:fs/promises with every call counted (the fs adapter's file operations). */
function countedFs(ops: Map<string, OpStat>): FsPromises {
  const p = fs.promises
  const wrap =
    <A extends unknown[], R>(name: string, f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      const t0 = now()
      try {
        return await f(...a)
      } finally {
        const s = ops.get(`fs.${name}`) ?? { calls: 0, ms: 0 }
        s.calls++
        s.ms += now() - t0
        ops.set(`fs.${name}`, s)
      }
    }
  return {
    open: wrap('open', p.open) as FsPromises['open'],
    mkdir: wrap('mkdir', p.mkdir) as FsPromises['mkdir'],
    readdir: wrap('readdir', p.readdir) as FsPromises['readdir'],
    readFile: wrap('readFile', p.readFile) as FsPromises['readFile'],
    rename: wrap('rename', p.rename),
    rm: wrap('rm', p.rm),
    stat: wrap('stat', p.stat) as FsPromises['stat'],
    unlink: wrap('unlink', p.unlink),
    link: wrap('link', p.link),
    rmdir: wrap('rmdir', p.rmdir),
    writeSync: fs.writeSync,
    fdatasyncSync: fs.fdatasyncSync,
  }
}

interface FolderSize {
  /** Sum of the files' sizes (their bytes, what the store wrote). */
  bytes: number
  /** Blocks allocated (st_blocks × 512) to the files and, when the whole folder is counted, its folders. */
  disk: number
  files: number
  folders: number
}

/** The files under `dir` (bytes, allocated bytes, count) and its folders; `pick` chooses files (and then no folder is counted). */
function folderSize(dir: string, pick?: (path: string) => boolean): FolderSize {
  const out: FolderSize = { bytes: 0, disk: 0, files: 0, folders: 0 }
  const walk = (d: string) => {
    if (!pick) {
      out.disk += fs.lstatSync(d).blocks * 512
      out.folders++
    }
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) walk(p)
      else if (!pick || pick(p)) {
        const st = fs.lstatSync(p)
        out.bytes += st.size
        out.disk += st.blocks * 512
        out.files++
      }
    }
  }
  if (fs.existsSync(dir)) walk(dir)
  return out
}

/** The same with find(1), for the big store's hundreds of thousands of files; `args` choose files (and then no folder is counted). */
function findSize(dir: string, args: string[] = []): FolderSize {
  const r = spawnSync('find', [dir, ...(args.length > 0 ? ['-type', 'f', ...args] : []), '-printf', '%y %s %b\n'], { encoding: 'utf8', maxBuffer: 1 << 30 })
  if (r.status !== 0) throw new Error(`find ${dir}: ${r.stderr}`)
  const out: FolderSize = { bytes: 0, disk: 0, files: 0, folders: 0 }
  for (const line of r.stdout.split('\n')) {
    if (!line) continue
    const [y, s, b] = line.split(' ')
    out.disk += Number(b) * 512
    if (y === 'd') out.folders++
    else {
      out.bytes += Number(s)
      out.files++
    }
  }
  return out
}

const mib = (b: number) => `${fmt(b / 2 ** 20, 1)} MiB`

// ---- (1) first pages ------------------------------------------------------------------------

interface PageSample {
  open: number
  page: number
  warm: number
  rows: number
}

/** A new store (openStore, timed), a list's first page, a second list's first page; all closed after. */
async function coldPageNode(target: Target, limit: number): Promise<PageSample> {
  const t0 = now()
  const store = await within(openStore(target), 'openStore')
  const open = now() - t0
  try {
    const first = await within(timedList(store, limit), 'a first page')
    const second = await within(timedList(store, limit), 'a second list')
    first.close()
    second.close()
    return { open, page: first.ms, warm: second.ms, rows: first.rows }
  } finally {
    await store.close()
  }
}

async function timedList(store: Store, limit: number): Promise<{ ms: number; rows: number; close: () => void }> {
  const t0 = now()
  const list = store.sessions({ limit })
  const rows = await new Promise<number>((resolve, reject) => list.subscribe((items, meta) => (meta.error ? reject(meta.error) : resolve(items.length))))
  return { ms: now() - t0, rows, close: () => list.close() }
}

interface PageSeries {
  open: Summary
  page: Summary
  warm: Summary
}

async function runPages(backend: Backend, sample: (size: Size) => Promise<PageSample>, sizes: Record<Size, number>): Promise<Record<Size, PageSeries>> {
  const got: Record<Size, { open: number[]; page: number[]; warm: number[] }> = {
    big: { open: [], page: [], warm: [] },
    small: { open: [], page: [], warm: [] },
  }
  for (let r = 0; r <= CONFIG.pageRounds; r++) {
    const line: string[] = []
    for (const size of rotate(SIZES, r)) {
      const s = await sample(size)
      const expected = Math.min(CONFIG.limit, sizes[size])
      if (s.rows !== expected) throw new Error(`${backend} ${size}: a first page of ${s.rows} rows, expected ${expected}`)
      if (r > 0) {
        got[size].open.push(s.open)
        got[size].page.push(s.page)
        got[size].warm.push(s.warm)
      }
      line.push(`${size} open ${fmt(s.open, 0)} page ${fmt(s.page, 1)} warm ${fmt(s.warm, 1)}`)
    }
    log(`${backend} pages ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.pageRounds}`} (ms): ${line.join('; ')}`)
  }
  const s = (size: Size): PageSeries => ({ open: summarize(got[size].open), page: summarize(got[size].page), warm: summarize(got[size].warm) })
  return { big: s('big'), small: s('small') }
}

// ---- (diagnostic) a first page, call by call ------------------------------------------------

interface Anatomy {
  /** Median ms of engine.sessionsPage on a fresh engine over a fresh adapter. */
  ms: number
  /** Per operation: calls and summed ms per page (medians over the samples). */
  ops: Record<string, OpStat>
}

async function anatomy(make: (ops: Map<string, OpStat>) => Promise<StorageAdapter>): Promise<Anatomy> {
  const times: number[] = []
  const per: Map<string, OpStat>[] = []
  for (let i = 0; i <= CONFIG.anatomySamples; i++) {
    const fsOps = new Map<string, OpStat>()
    const { storage, ops } = counted(await make(fsOps))
    const engine = new Engine({ storage, onError: (err) => log(`anatomy engine: ${err.message}`) })
    const t0 = now()
    const page = await within(engine.sessionsPage({ limit: CONFIG.limit }, CONFIG.limit), 'an engine page')
    const ms = now() - t0
    if (page.items.length === 0) throw new Error('anatomy: an empty page')
    await engine.close()
    if (i === 0) continue // the first: the OS's caches warmed for all that follow
    times.push(ms)
    per.push(new Map([...ops, ...fsOps]))
  }
  const names = [...new Set(per.flatMap((m) => [...m.keys()]))].sort()
  const ops = Object.fromEntries(names.map((n) => [n, { calls: median(per.map((m) => m.get(n)?.calls ?? 0)), ms: median(per.map((m) => m.get(n)?.ms ?? 0)) }]))
  return { ms: median(times), ops }
}

// ---- (2) update latency ---------------------------------------------------------------------

interface Appender {
  /** Appends one event to `id`, which has `length` events; resolves when the append resolved. */
  open(id: string): Promise<{ length: number; append: () => Promise<void>; close: () => Promise<void> }>
  close(): Promise<void>
}

function storeAppender(store: Store, input: EventInput): Appender {
  return {
    async open(id) {
      const s = await store.openSession(id)
      return {
        length: s.projections.snapshot().asOfSeq + 1,
        append: async () => void (await s.append(input)),
        close: () => s.close(),
      }
    },
    close: () => store.close(),
  }
}

/** An engine over the adapter with its feed hidden, in this thread: it writes no index rows, so only the watcher's engine moves them. */
function bareAppender(adapter: StorageAdapter, input: EventInput): Appender {
  const engine = new Engine({ storage: withoutFeed(adapter), onError: (err) => log(`bare appender: ${err.message}`) })
  if (engine.index) throw new Error('the bare appender has an index')
  return {
    async open(id) {
      const { length } = await engine.openSession(id)
      return {
        length,
        append: async () => void (await engine.append(id, [input])),
        close: () => engine.release(id, 'writer'),
      }
    },
    close: () => engine.close(),
  }
}

interface UpdateSeries {
  /** Every recorded sample (ms, append called → the other process's list shows it first). */
  seen: number[]
  /** The same appends: until append() resolved here. */
  ack: number[]
  /** Per block, the median of its samples. */
  blocks: number[]
  /** Listener calls in the other process before the one that showed it (per sample). */
  calls: number[]
  timeouts: number
}

const emptySeries = (): UpdateSeries => ({ seen: [], ack: [], blocks: [], calls: [], timeouts: 0 })

async function runUpdates(
  label: string,
  appenders: Record<Size, Appender>,
  watchers: Record<Size, Child>,
  ids: Record<Size, string[]>,
  cursor: Record<Size, number>,
  appends: number,
  warmUp: number,
): Promise<Record<Size, UpdateSeries>> {
  const out: Record<Size, UpdateSeries> = { big: emptySeries(), small: emptySeries() }
  const blocks = Math.ceil(appends / CONFIG.block)
  for (let b = -1; b < blocks; b++) {
    const line: string[] = []
    for (const size of rotate(SIZES, b + 1)) {
      const n = b < 0 ? warmUp : Math.min(CONFIG.block, appends - b * CONFIG.block)
      const block: number[] = []
      for (let i = 0; i < n; i++) {
        const list = ids[size]
        const id = list[cursor[size]++ % list.length]!
        const w = watchers[size]
        const s = await within(appenders[size].open(id), 'openSession')
        const armed = w.next('armed', CONFIG.stallMs)
        w.send({ kind: 'arm', id, length: s.length + 1 })
        await armed
        const seen = w.next('seen', CONFIG.seenTimeoutMs)
        const t0 = now()
        await within(s.append(), 'an append')
        const ack = now() - t0
        let ms: number
        let calls = Number.NaN
        try {
          calls = (await seen).calls
          ms = now() - t0
        } catch (err) {
          if (!(err instanceof TimeoutError)) throw err
          ms = CONFIG.seenTimeoutMs
          if (b >= 0) out[size].timeouts++
          log(`${label} ${size}: the other process did not show ${id} first within ${CONFIG.seenTimeoutMs / 1000} s`)
        }
        await within(s.close(), 'a session close')
        if (b >= 0) {
          out[size].seen.push(ms)
          out[size].ack.push(ack)
          out[size].calls.push(calls)
        }
        block.push(ms)
        await sleep(CONFIG.gapMinMs + Math.random() * (CONFIG.gapMaxMs - CONFIG.gapMinMs))
      }
      if (b >= 0) out[size].blocks.push(median(block))
      line.push(`${size} ${fmt(median(block), 1)}`)
    }
    log(`${label} ${b < 0 ? 'warm-up' : `block ${b + 1}/${blocks}`} (median ms): ${line.join(', ')}`)
  }
  return out
}

// ---- (3) index overhead ---------------------------------------------------------------------

interface OverheadRun {
  /** ms from the first append called to the last resolved. */
  appendMs: number
  /** The engine's storage calls from the first append until the index caught up (records, feed, getSession). */
  ops: Record<string, OpStat>
  /** ms until, besides, the index caught up (engine.index.pass()); = appendMs without an index. */
  caughtUpMs: number
  size: FolderSize
  index: FolderSize
  summaries: FolderSize
}

let overheadRuns = 0

const medianSize = (xs: readonly FolderSize[]): FolderSize => ({
  bytes: median(xs.map((x) => x.bytes)),
  disk: median(xs.map((x) => x.disk)),
  files: median(xs.map((x) => x.files)),
  folders: median(xs.map((x) => x.folders)),
})

/** Per storage operation, the median calls and summed ms over `runs`. */
function medianOps(runs: readonly OverheadRun[]): Record<string, OpStat> {
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.ops)))].sort()
  return Object.fromEntries(names.map((n) => [n, { calls: median(runs.map((r) => r.ops[n]?.calls ?? 0)), ms: median(runs.map((r) => r.ops[n]?.ms ?? 0)) }]))
}

interface Overhead {
  with: OverheadRun[]
  without: OverheadRun[]
  control: OverheadRun[]
  /** Per round, the mean ms of a run of each (withCaught: the with runs until their index caught up). */
  rounds: { with: number[]; without: number[]; withCaught: number[]; control: number[] }
}

async function overheadRun(root: string, withIndex: boolean, batch: readonly EventInput[]): Promise<OverheadRun> {
  const dir = join(root, `overhead-${overheadRuns++}`)
  // Both sides through the same counting wrapper (the calls timed alike); the baseline then hides the feed.
  const fsOps = new Map<string, OpStat>()
  const { storage, ops } = counted(await sealed(createFsAdapter({ dir, fs: countedFs(fsOps) })))
  const engine = new Engine({ storage: withIndex ? storage : withoutFeed(storage), onError: (err) => log(`overhead engine: ${err.message}`) })
  if (Boolean(engine.index) !== withIndex) throw new Error(`overhead: expected ${withIndex ? 'an' : 'no'} index`)
  const ids: string[] = []
  for (let i = 0; i < CONFIG.overheadSessions; i++) ids.push((await engine.createSession()).id)
  await engine.index?.pass() // the creations' rows are in before the clock starts
  await sleep(20)
  ops.clear()
  fsOps.clear()
  const batches = CONFIG.overheadEvents / CONFIG.overheadBatch
  const t0 = now()
  for (let b = 0; b < batches; b++) await within(engine.append(ids[b % ids.length]!, batch), 'a batched append')
  const appendMs = now() - t0
  await engine.index?.pass()
  const caughtUpMs = now() - t0
  const during = Object.fromEntries([...ops, ...fsOps].map(([k, v]) => [k, { ...v }]))
  for (const id of ids) await engine.release(id, 'writer')
  await engine.index?.pass()
  await engine.close() // closes the adapter too
  const size = folderSize(dir)
  const index = folderSize(join(dir, 'index'))
  const summaries = folderSize(join(dir, 'sessions'), (p) => p.endsWith(`${sep}summary.json`))
  fs.rmSync(dir, { recursive: true, force: true })
  return { appendMs, ops: during, caughtUpMs, size, index, summaries }
}

/**
 * (3) The store's folder after sessions written an hour apart (the engine's clock moved by the
 * run), each of `events` events in batches of 10 a second apart: an app's store over days, where
 * a burst-built store puts many sessions in each of the index's folders and this puts few.
 */
async function spreadRun(
  root: string,
  withIndex: boolean,
  sessions: number,
  events: number,
  event: EventInput,
): Promise<{ size: FolderSize; index: FolderSize; summaries: FolderSize }> {
  const dir = join(root, `spread-${overheadRuns++}`)
  let clock = Date.parse('2026-01-05T08:00:00Z')
  const storage = await sealed(createFsAdapter({ dir }))
  const engine = new Engine({ storage: withIndex ? storage : withoutFeed(storage), now: () => clock, onError: (err) => log(`spread engine: ${err.message}`) })
  for (let i = 0; i < sessions; i++) {
    clock += 3_600_000
    const { id } = await engine.createSession()
    for (let n = 0; n < events; n += 10) {
      clock += 1000
      await engine.append(
        id,
        Array.from({ length: Math.min(10, events - n) }, () => event),
      )
    }
    await engine.release(id, 'writer')
    await engine.index?.pass()
  }
  await engine.close()
  const out = {
    size: folderSize(dir),
    index: folderSize(join(dir, 'index')),
    summaries: folderSize(join(dir, 'sessions'), (p) => p.endsWith(`${sep}summary.json`)),
  }
  fs.rmSync(dir, { recursive: true, force: true })
  return out
}

// ---- main -----------------------------------------------------------------------------------

interface Built {
  backend: Backend
  size: Size
  result: BuildResult
}

async function main(): Promise<void> {
  checkSettings(CONFIG)
  for (const b of BACKENDS) if (!['fs', 'postgres', 'chromium'].includes(b)) throw new Error(`bad BENCH_SESSIONS_BACKENDS entry ${b}`)
  for (const p of PHASES) if (!['pages', 'update', 'overhead'].includes(p)) throw new Error(`bad BENCH_SESSIONS_PHASES entry ${p}`)
  if (CONFIG.overheadEvents % CONFIG.overheadBatch !== 0) throw new Error('overheadEvents must be a multiple of overheadBatch')
  const source = sourceState()
  const { root, cleanup } = await benchRoot('sessionfold-bench-sessions-')
  log(`temp dir ${root}; backends ${BACKENDS.join(',')}; phases ${PHASES.join(',')}`)
  let cluster: PgCluster | undefined
  let browser: Browser | undefined
  const children: Child[] = []
  const open: { close(): Promise<void> }[] = []
  const input = messageInput(CONFIG.eventBytes)
  const has = (b: Backend) => BACKENDS.includes(b)
  const phase = (p: string) => PHASES.includes(p)
  const needsBig = phase('pages') || phase('update')
  const targets: Partial<Record<Backend, Record<Size, Target>>> = {}
  try {
    if (has('fs')) targets.fs = { big: { storage: 'fs', dir: join(root, 'fs-big') }, small: { storage: 'fs', dir: join(root, 'fs-small') } }
    let pgInfo = ''
    if (has('postgres') && needsBig) {
      log('starting a throwaway PostgreSQL cluster (fsync on)')
      cluster = await startCluster()
      const big = await cluster.createDatabase('sessions_big')
      const small = await cluster.createDatabase('sessions_small')
      targets.postgres = { big: { storage: 'postgres', url: big }, small: { storage: 'postgres', url: small } }
      pgInfo = `PostgreSQL ${(await cluster.psql('SHOW server_version')).trim()}`
    }
    if (has('chromium') && phase('pages')) browser = await startBrowser(root)

    // ---- the stores: built at once, the big ones up to CONFIG.big or their budget ----
    const built: Built[] = []
    const buildOptions = (count: number, budgetS: number, keepIds: number, titlePrefix: string): BuildOptions => ({
      count,
      budgetMs: budgetS * 1000,
      concurrency: CONFIG.buildConcurrency,
      chunk: CONFIG.buildChunk,
      keepIds,
      titlePrefix,
    })
    const keepBig = CONFIG.warmUp + CONFIG.appends + CONFIG.diagAppends + 20
    const buildNode = async (backend: 'fs' | 'postgres', size: Size): Promise<void> => {
      const options =
        size === 'big' ? buildOptions(CONFIG.big, CONFIG.buildSeconds, keepBig, 'session') : buildOptions(CONFIG.small, 3600, CONFIG.small, 'session')
      const child = startChild({ mode: 'build', target: targets[backend]![size], options })
      children.push(child)
      const { result } = await child.next('built', options.budgetMs + 30 * 60_000)
      await child.stop()
      built.push({ backend, size, result })
      log(
        `${backend} ${size}: ${n0(result.made)} sessions in ${fmt(result.totalMs / 1000, 1)} s (creating ${fmt(result.createMs / 1000, 1)} s, ` +
          `the index catching up ${fmt(result.catchUpMs / 1000, 1)} s)${result.budgetHit ? `: the ${n0(options.budgetMs / 1000)} s budget ran out` : ''}`,
      )
    }
    const buildBrowser = async (size: Size): Promise<void> => {
      const options =
        size === 'big' ? buildOptions(CONFIG.big, CONFIG.browserBuildSeconds, 10, 'session') : buildOptions(CONFIG.small, 3600, CONFIG.small, 'session')
      const result = await call(browser!.page, 'build', [size, options, 'relaxed'], options.budgetMs + 30 * 60_000)
      built.push({ backend: 'chromium', size, result })
      log(
        `chromium ${size}: ${n0(result.made)} sessions in ${fmt(result.totalMs / 1000, 1)} s (creating ${fmt(result.createMs / 1000, 1)} s, ` +
          `the index catching up ${fmt(result.catchUpMs / 1000, 1)} s)${result.budgetHit ? `: the ${n0(options.budgetMs / 1000)} s budget ran out` : ''}`,
      )
    }
    const buildStarted = now()
    if (needsBig) {
      // A server setting for the build only (untimed): commits do not wait for the WAL flush. Reset before measuring.
      if (cluster) await setSyncCommit(cluster, false)
      await Promise.all([
        ...(targets.fs ? [buildNode('fs', 'big')] : []),
        ...(targets.postgres ? [buildNode('postgres', 'big')] : []),
        ...(browser ? [buildBrowser('big')] : []),
      ])
      for (const b of ['fs', 'postgres'] as const) if (targets[b]) await buildNode(b, 'small')
      if (browser) await buildBrowser('small')
      if (cluster) await setSyncCommit(cluster, true)
    }
    const buildSeconds = (now() - buildStarted) / 1000
    const builtOf = (backend: Backend, size: Size) => built.find((b) => b.backend === backend && b.size === size)?.result
    const sizesOf = (backend: Backend): Record<Size, number> => ({ big: builtOf(backend, 'big')?.made ?? 0, small: builtOf(backend, 'small')?.made ?? 0 })
    if (needsBig) log(`stores built in ${fmt(buildSeconds, 0)} s`)

    // ---- (1) first pages ----
    const pages: Partial<Record<Backend, Record<Size, PageSeries>>> = {}
    const anatomies: Partial<Record<Backend, Record<Size, Anatomy>>> = {}
    if (phase('pages')) {
      for (const backend of BACKENDS) {
        if (backend === 'chromium') {
          pages.chromium = await runPages(
            'chromium',
            async (size) => {
              const c: ColdPage = await call(browser!.page, 'coldPage', [size, CONFIG.limit])
              return c
            },
            sizesOf('chromium'),
          )
        } else {
          const t = targets[backend]!
          pages[backend] = await runPages(backend, (size) => coldPageNode(t[size], CONFIG.limit), sizesOf(backend))
        }
      }
      // Where a first page's time goes: a fresh engine over a fresh adapter in this thread, its storage calls counted.
      for (const backend of BACKENDS) {
        if (backend === 'chromium') continue
        const t = targets[backend]!
        const make = (size: Size) => (fsOps: Map<string, OpStat>) => {
          const target = t[size]
          return sealed(target.storage === 'fs' ? createFsAdapter({ dir: target.dir, fs: countedFs(fsOps) }) : createPostgresAdapter({ url: target.url }))
        }
        anatomies[backend] = { big: await anatomy(make('big')), small: await anatomy(make('small')) }
        log(`${backend} page anatomy: ${SIZES.map((s) => `${s} ${fmt(anatomies[backend]![s].ms, 1)} ms`).join(', ')}`)
      }
    }

    // ---- (2) update latency in another process ----
    const updates: Partial<Record<'fs' | 'postgres', { main: Record<Size, UpdateSeries>; bare: Record<Size, UpdateSeries> }>> = {}
    if (phase('update')) {
      for (const backend of ['fs', 'postgres'] as const) {
        if (!targets[backend]) continue
        const t = targets[backend]
        const ids: Record<Size, string[]> = { big: builtOf(backend, 'big')!.oldIds, small: builtOf(backend, 'small')!.oldIds }
        const cursor: Record<Size, number> = { big: 0, small: 0 }
        const watchers = {} as Record<Size, Child>
        for (const size of SIZES) {
          watchers[size] = startChild({ mode: 'watch', target: t[size] })
          children.push(watchers[size])
        }
        for (const size of SIZES) await watchers[size].next('ready', CONFIG.stallMs)
        const appenders = {} as Record<Size, Appender>
        for (const size of SIZES) {
          const a = storeAppender(await openStore(t[size]), input)
          appenders[size] = a
          open.push(a)
        }
        const main = await runUpdates(`${backend} update`, appenders, watchers, ids, cursor, CONFIG.appends, CONFIG.warmUp)
        for (const size of SIZES) {
          await appenders[size].close()
          open.splice(open.indexOf(appenders[size]), 1)
        }
        // Diagnostic: the same appends by an engine that writes no index rows of its own (its feed hidden).
        for (const size of SIZES) {
          const target = t[size]
          const adapter = await sealed(target.storage === 'fs' ? createFsAdapter({ dir: target.dir }) : createPostgresAdapter({ url: target.url }))
          appenders[size] = bareAppender(adapter, input)
          open.push(appenders[size])
        }
        const bare = await runUpdates(`${backend} update (appender without an index)`, appenders, watchers, ids, cursor, CONFIG.diagAppends, 3)
        for (const size of SIZES) {
          await appenders[size].close()
          open.splice(open.indexOf(appenders[size]), 1)
        }
        for (const size of SIZES) await watchers[size].stop()
        updates[backend] = { main, bare }
      }
    }

    // ---- sizes of the index in the big stores (information) ----
    const bigStore: Record<string, unknown> = {}
    if (needsBig && targets.fs && builtOf('fs', 'big')) {
      const dir = (targets.fs.big as { dir: string }).dir
      bigStore.fs = {
        sessions: builtOf('fs', 'big')!.made,
        total: findSize(dir),
        index: findSize(join(dir, 'index')),
        summaries: findSize(join(dir, 'sessions'), ['-name', 'summary.json']),
        logs: findSize(join(dir, 'sessions'), ['-name', 'events.log']),
      }
    }
    if (needsBig && cluster && targets.postgres) {
      const q = async (sql: string) => (await cluster!.psql(sql, 'sessions_big')).trim()
      bigStore.postgres = {
        sessions: builtOf('postgres', 'big')!.made,
        database: Number(await q("SELECT pg_database_size('sessions_big')")),
        recordsTable: Number(await q("SELECT pg_total_relation_size('sessionfold.records')")),
        indexRows: Number(await q("SELECT count(*) FROM sessionfold.records WHERE key LIKE '\\_index%'")),
        summaryRows: Number(await q("SELECT count(*) FROM sessionfold.session_records WHERE key = '_summary'")),
        sessionRecordsTable: Number(await q("SELECT pg_total_relation_size('sessionfold.session_records')")),
        eventsTable: Number(await q("SELECT pg_total_relation_size('sessionfold.events')")),
      }
    }
    if (browser && builtOf('chromium', 'big')) bigStore.chromium = { sessions: builtOf('chromium', 'big')!.made, usage: await call(browser.page, 'usage', []) }

    // ---- (3) the index's cost on appends (fs, engine level) ----
    let overhead: Overhead | undefined
    if (phase('overhead') && has('fs')) {
      const batch = Array.from({ length: CONFIG.overheadBatch }, () => input)
      const dir = join(root, 'overhead')
      fs.mkdirSync(dir)
      overhead = { with: [], without: [], control: [], rounds: { with: [], without: [], withCaught: [], control: [] } }
      // The control: the baseline again, as a third variant: how far two runs of the same thing differ here.
      const variants = ['with', 'without', 'control'] as const
      const runs = 2 * CONFIG.overheadRepeats
      for (let r = 0; r <= CONFIG.overheadRounds; r++) {
        const ms = { with: 0, without: 0, withCaught: 0, control: 0 }
        const order = rotate(variants, r)
        for (const v of Array.from({ length: CONFIG.overheadRepeats }, () => [...order, ...[...order].reverse()]).flat()) {
          const run = await overheadRun(dir, v === 'with', batch)
          ms[v] += run.appendMs
          if (v === 'with') ms.withCaught += run.caughtUpMs
          if (r > 0) overhead[v].push(run)
        }
        if (r > 0) for (const k of ['with', 'without', 'withCaught', 'control'] as const) overhead.rounds[k].push(ms[k] / runs)
        log(
          `index overhead ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.overheadRounds}`} (ms per run): with ${fmt(ms.with / runs, 0)} ` +
            `(caught up ${fmt(ms.withCaught / runs, 0)}), without ${fmt(ms.without / runs, 0)}, without again (control) ${fmt(ms.control / runs, 0)}`,
        )
      }
    }

    const spread: Measured['spread'] = []
    if (phase('overhead') && has('fs')) {
      const dir = join(root, 'spread')
      fs.mkdirSync(dir)
      for (const events of [1, 100, 1000]) {
        const n = CONFIG.spreadSessions
        spread.push({ events, with: await spreadRun(dir, true, n, events, input), without: await spreadRun(dir, false, n, events, input) })
        log(`spread: ${n} sessions of ${events} events an hour apart done`)
      }
    }

    // ---- close everything before reporting ----
    for (const o of open.splice(0)) await o.close().catch((err) => log(`closing: ${err}`))
    for (const c of children.splice(0)) await c.stop()
    const chromiumVersion = browser?.version
    await browser?.close()
    browser = undefined

    report({ source, pgInfo, chromiumVersion, built, buildSeconds, sizesOf, pages, anatomies, updates, overhead, spread, bigStore })
  } finally {
    for (const o of open.splice(0)) await o.close().catch((err) => log(`closing: ${err}`))
    for (const c of children.splice(0)) await c.stop().catch(() => {})
    await browser?.close()
    await cluster?.stop()
    cleanup()
  }
}

async function setSyncCommit(cluster: PgCluster, on: boolean): Promise<void> {
  await cluster.psql(on ? 'ALTER SYSTEM RESET synchronous_commit' : "ALTER SYSTEM SET synchronous_commit = 'off'")
  await cluster.psql('SELECT pg_reload_conf()')
}

// ---- report ---------------------------------------------------------------------------------

interface Measured {
  source: ReturnType<typeof sourceState>
  pgInfo: string
  chromiumVersion: string | undefined
  built: Built[]
  buildSeconds: number
  sizesOf: (b: Backend) => Record<Size, number>
  pages: Partial<Record<Backend, Record<Size, PageSeries>>>
  anatomies: Partial<Record<Backend, Record<Size, Anatomy>>>
  updates: Partial<Record<'fs' | 'postgres', { main: Record<Size, UpdateSeries>; bare: Record<Size, UpdateSeries> }>>
  overhead: Overhead | undefined
  spread: { events: number; with: Awaited<ReturnType<typeof spreadRun>>; without: Awaited<ReturnType<typeof spreadRun>> }[]
  bigStore: Record<string, unknown>
}

function report(m: Measured): void {
  const headline: HeadlineRatio[] = []
  const figures: Figure[] = []
  const meaning: string[] = []
  const one = (x: number) => summarize([x])

  // (1)
  for (const backend of BACKENDS) {
    const p = m.pages[backend]
    if (!p) continue
    const s = m.sizesOf(backend)
    const what = `time at ${n0(s.big)} ÷ time at ${n0(s.small)} sessions`
    headline.push(
      headlineRatio(
        `sessions-page-cold-${backend}`,
        `${NAME[backend]}: first page (limit ${CONFIG.limit}), cold: a new store, then store.sessions() until loaded`,
        LAYER[backend],
        what,
        p.big.page,
        p.small.page,
        { atMost: TARGETS.page },
      ),
      headlineRatio(
        `sessions-page-warm-${backend}`,
        `${NAME[backend]}: first page, warm: a second list on the same open store`,
        LAYER[backend],
        what,
        p.big.warm,
        p.small.warm,
        { atMost: TARGETS.page },
      ),
      headlineRatio(
        `sessions-open-${backend}`,
        `${NAME[backend]}: (information) openStore() itself, before that cold page`,
        LAYER[backend],
        what,
        p.big.open,
        p.small.open,
      ),
    )
    for (const size of SIZES) {
      figures.push(
        [`${NAME[backend]}: openStore(), ${n0(s[size])} sessions`, p[size].open, 'ms', 1],
        [`${NAME[backend]}: first page, cold, ${n0(s[size])} sessions`, p[size].page, 'ms', 1],
        [`${NAME[backend]}: first page, warm, ${n0(s[size])} sessions`, p[size].warm, 'ms', 1],
      )
    }
    const cold = headline.at(-3)!
    const warm = headline.at(-2)!
    meaning.push(
      `${NAME[backend]}: a first page costs ${fmt(p.big.page.median, 1)} ms cold and ${fmt(p.big.warm.median, 1)} ms warm at ${n0(s.big)} sessions against ` +
        `${fmt(p.small.page.median, 1)} ms and ${fmt(p.small.warm.median, 1)} ms at ${n0(s.small)} (ratios ${fmt(cold.perRound.median, 2)} and ${fmt(warm.perRound.median, 2)}); ` +
        `openStore() itself takes ${fmt(p.big.open.median, 0)} ms and ${fmt(p.small.open.median, 0)} ms.` +
        (cold.result === 'MISS' || warm.result === 'MISS'
          ? ' The page grows with the store here: see the anatomy below.'
          : ' The page costs the page, not the store.'),
    )
  }

  // (1, diagnostic)
  const anatomyRows: string[][] = []
  for (const backend of ['fs', 'postgres'] as const) {
    const a = m.anatomies[backend]
    if (!a) continue
    const names = [...new Set([...Object.keys(a.big.ops), ...Object.keys(a.small.ops)])].sort()
    for (const n of names) {
      const b = a.big.ops[n] ?? { calls: 0, ms: 0 }
      const s = a.small.ops[n] ?? { calls: 0, ms: 0 }
      anatomyRows.push([`${backend} ${n}`, `${n0(b.calls)} (${fmt(b.ms, 1)} ms)`, `${n0(s.calls)} (${fmt(s.ms, 1)} ms)`])
    }
    anatomyRows.push([`${backend}: engine.sessionsPage, fresh engine and adapter (ms)`, fmt(a.big.ms, 1), fmt(a.small.ms, 1)])
  }

  // (2)
  for (const backend of ['fs', 'postgres'] as const) {
    const u = m.updates[backend]
    if (!u) continue
    const s = m.sizesOf(backend)
    const p = (xs: number[], q: number) => quantile(xs, q)
    const big = u.main.big
    const small = u.main.small
    const what = `at ${n0(s.big)} ÷ at ${n0(s.small)} sessions`
    const figure = `${NAME[backend]}: an append here → another process's store.sessions() shows that session first`
    headline.push(
      headlineRatio(
        `sessions-update-p50-${backend}`,
        `${figure}: p50 (${CONFIG.appends} appends to old sessions a size, in blocks of ${CONFIG.block}: the blocks' medians)`,
        LAYER[backend],
        `p50 ${what}`,
        summarize(big.blocks),
        summarize(small.blocks),
        { atMost: TARGETS.update },
      ),
    )
    const p99 = { big: p(big.seen, 0.99), small: p(small.seen, 0.99) }
    const p99Ratio = p99.big / p99.small
    headline.push({
      id: `sessions-update-p99-${backend}`,
      figure: `${figure}: p99 of all samples`,
      layer: LAYER[backend],
      ratio: `p99 ${what}`,
      perRound: one(p99Ratio),
      ofMedians: p99Ratio,
      target: `≤ ${TARGETS.update}`,
      pass: p99Ratio <= TARGETS.update,
      result: p99Ratio <= TARGETS.update ? 'PASS' : 'MISS',
    })
    if (backend === 'fs') {
      for (const size of SIZES) {
        const v = p99[size]
        headline.push({
          id: `sessions-update-p99-ms-${backend}-${size}`,
          figure: `${figure}: p99 at ${n0(s[size])} sessions`,
          layer: LAYER[backend],
          ratio: 'ms (absolute)',
          perRound: one(v),
          ofMedians: v,
          target: `≤ ${TARGETS.updateP99Ms}`,
          pass: v <= TARGETS.updateP99Ms,
          result: v <= TARGETS.updateP99Ms ? 'PASS' : 'MISS',
        })
      }
    }
    for (const size of SIZES) {
      const x = u.main[size]
      figures.push(
        [`${NAME[backend]}: append → other process's list, ${n0(s[size])} sessions, p50`, one(p(x.seen, 0.5)), 'ms', 1],
        [`${NAME[backend]}: the same, p99`, one(p(x.seen, 0.99)), 'ms', 1],
        [`${NAME[backend]}: the same appends until append() resolved here, p50`, one(p(x.ack, 0.5)), 'ms', 1],
        [`${NAME[backend]}: (diagnostic) appender keeping no index, ${n0(s[size])} sessions, p50`, one(p(u.bare[size].seen, 0.5)), 'ms', 1],
        [`${NAME[backend]}: (diagnostic) the same, p99`, one(p(u.bare[size].seen, 0.99)), 'ms', 1],
      )
    }
    const mainP50 = p(big.seen, 0.5)
    const bareP50 = p(u.bare.big.seen, 0.5)
    // Both sizes pooled: whether an appender that keeps no index is seen much sooner.
    const pooledP50 = p([...big.seen, ...small.seen], 0.5)
    const pooledBareP50 = p([...u.bare.big.seen, ...u.bare.small.seen], 0.5)
    const timeouts = big.timeouts + small.timeouts
    meaning.push(
      `${NAME[backend]}: another process's list shows an append p50 ${fmt(mainP50, 0)} ms, p99 ${fmt(p99.big, 0)} ms at ${n0(s.big)} sessions ` +
        `(p50 ${fmt(p(small.seen, 0.5), 0)} ms, p99 ${fmt(p99.small, 0)} ms at ${n0(s.small)}); the append itself resolves in ${fmt(p(big.ack, 0.5), 1)} ms (p50).` +
        (timeouts > 0 ? ` ${timeouts} appends were not shown within ${CONFIG.seenTimeoutMs / 1000} s (counted as that).` : '') +
        (pooledBareP50 < pooledP50 / 2
          ? ` With an appender that writes no index rows (its feed hidden), the same list shows it in ${fmt(bareP50, 0)} ms (p50): the other process's list is ` +
            "told of a change only when its own index pass moves a row, and the appending engine has moved it already (its own pass, 10 ms after the append), so the list learns of it from its 1 s activity timer. A pass that reads feed entries of other engines' writes could tell its lists whether or not it moved a row."
          : ''),
    )
  }

  // (3)
  if (m.overhead) {
    const o = m.overhead
    const withS = summarize(o.rounds.with)
    const withoutS = summarize(o.rounds.without)
    const caughtS = summarize(o.rounds.withCaught)
    const controlS = summarize(o.rounds.control)
    const what = `fs: batched appends (${n0(CONFIG.overheadEvents)} events of ~${CONFIG.eventBytes} B, ${CONFIG.overheadBatch} a batch, ${CONFIG.overheadSessions} sessions) with the index vs the adapter's feed hidden (no index)`
    const layer = "an engine over the fs adapter under the codec, as openStore's (which has no switch for the index)"
    headline.push(
      headlineRatio('sessions-index-append', `${what}: until the last append resolved`, layer, 'time with ÷ time without', withS, withoutS, {
        atMost: TARGETS.appendOverhead,
      }),
      headlineRatio('sessions-index-append-caught-up', `${what}: until, besides, the index caught up`, layer, 'time with ÷ time without', caughtS, withoutS),
      headlineRatio(
        'sessions-index-append-control',
        "fs: (control) the same batched appends, the adapter's feed hidden, against themselves: the noise of this machine",
        layer,
        'time without ÷ time without',
        controlS,
        withoutS,
      ),
    )
    const bytesWith = summarize(o.with.map((r) => r.size.bytes))
    const bytesWithout = summarize(o.without.map((r) => r.size.bytes))
    const diskWith = summarize(o.with.map((r) => r.size.disk))
    const diskWithout = summarize(o.without.map((r) => r.size.disk))
    const sizeRatio = bytesWith.median / bytesWithout.median
    const diskRatio = diskWith.median / diskWithout.median
    headline.push(
      {
        id: 'sessions-index-size',
        figure: "fs: the store's folder after those appends: bytes of its files, with the index vs without",
        layer,
        ratio: 'bytes with ÷ bytes without',
        perRound: one(sizeRatio),
        ofMedians: sizeRatio,
        target: `≤ ${TARGETS.sizeOverhead}`,
        pass: sizeRatio <= TARGETS.sizeOverhead,
        result: sizeRatio <= TARGETS.sizeOverhead ? 'PASS' : 'MISS',
      },
      {
        id: 'sessions-index-disk',
        figure: 'fs: the same folder on disk: blocks allocated to its files and folders (du), with the index vs without',
        layer,
        ratio: 'disk bytes with ÷ disk bytes without',
        perRound: one(diskRatio),
        ofMedians: diskRatio,
        target: `≤ ${TARGETS.sizeOverhead}`,
        pass: diskRatio <= TARGETS.sizeOverhead,
        result: diskRatio <= TARGETS.sizeOverhead ? 'PASS' : 'MISS',
      },
    )
    const idx = summarize(o.with.map((r) => r.index.bytes))
    const idxFiles = median(o.with.map((r) => r.index.files))
    const sum = summarize(o.with.map((r) => r.summaries.bytes))
    const idxDisk = median(o.with.map((r) => r.index.disk))
    const sumDisk = median(o.with.map((r) => r.summaries.disk))
    figures.push(
      ['(3) batched appends with the index', withS, 'ms', 0],
      ['(3) the same until the index caught up', caughtS, 'ms', 0],
      ['(3) batched appends, feed hidden (no index)', withoutS, 'ms', 0],
      ['(3) the same again (control)', controlS, 'ms', 0],
      ['(3) store folder with the index', bytesWith, 'B', 0],
      ['(3) store folder without', bytesWithout, 'B', 0],
      ['(3) of it index/', idx, 'B', 0],
      ['(3) of it the _summary rows', sum, 'B', 0],
    )
    const appendRatio = headline.find((h) => h.id === 'sessions-index-append')!
    const control = headline.find((h) => h.id === 'sessions-index-append-control')!
    // What the index did meanwhile: the engine's storage calls in a run with it against one without (medians).
    const opNames = [...new Set(o.with.flatMap((r) => Object.keys(r.ops)))].sort()
    const calls = (runs: OverheadRun[], n: string) => median(runs.map((r) => r.ops[n]?.calls ?? 0))
    const opMs = (runs: OverheadRun[], n: string) => median(runs.map((r) => r.ops[n]?.ms ?? 0))
    const extra = opNames
      .map((n) => [n, calls(o.with, n) - calls(o.without, n), opMs(o.with, n) - opMs(o.without, n)] as const)
      .filter(([, d]) => d !== 0)
      .map(([n, d, t]) => `${n} ${d > 0 ? '+' : ''}${n0(d)} (${t >= 0 ? '+' : ''}${fmt(t, 1)} ms)`)
    const band = Math.max(Math.abs(control.perRound.median - 1), (control.perRound.max - control.perRound.min) / 2)
    meaning.push(
      `Index overhead (fs, engine level): ${n0(CONFIG.overheadEvents)} events take ${fmt(withS.median, 0)} ms with the index and ${fmt(withoutS.median, 0)} ms without ` +
        `(${fmt((appendRatio.perRound.median - 1) * 100, 1)} % per round, median), ${fmt(caughtS.median, 0)} ms until the index has caught up too; ` +
        `the baseline against itself (the control) gives ${fmt(control.perRound.median, 3)} (${fmt(control.perRound.min, 2)}–${fmt(control.perRound.max, 2)}) per round, ` +
        `so this machine's noise is about ±${fmt(band * 100, 0)} %: ${Math.abs(appendRatio.perRound.median - 1) > band ? 'the difference stands out of it' : `the difference is within it${band > TARGETS.appendOverhead - 1 ? `, and so is the ${fmt((TARGETS.appendOverhead - 1) * 100, 0)} % target` : ''}`}. ` +
        `The index's work during a run, in storage calls beyond the baseline's (medians; ms summed, calls overlap): ${extra.join(', ') || 'none'}, for ${n0(CONFIG.overheadEvents / CONFIG.overheadBatch)} appends. ` +
        `The folder's files hold ${n0(bytesWith.median)} B with the index and ${n0(bytesWithout.median)} B without (+${fmt((sizeRatio - 1) * 100, 2)} %): index/ ${n0(idx.median)} B in ${n0(idxFiles)} files, ` +
        `the _summary rows ${n0(sum.median)} B; in blocks allocated (files and folders) index/ takes ${n0(idxDisk)} B and the rows ${n0(sumDisk)} B, ` +
        `+${fmt((diskRatio - 1) * 100, 2)} % of the folder's (a 4 KiB block for each small file and folder).`,
    )
  }
  for (const sp of m.spread) {
    const layer = 'an engine over the fs adapter under the codec, its clock moved an hour a session'
    const what = `fs: ${CONFIG.spreadSessions} sessions written an hour apart, ${n0(sp.events)} event${sp.events === 1 ? '' : 's'} each`
    for (const [key, unit, ratio] of [
      ['bytes', 'bytes of its files', sp.with.size.bytes / sp.without.size.bytes],
      ['disk', 'blocks allocated to its files and folders (du)', sp.with.size.disk / sp.without.size.disk],
    ] as const) {
      headline.push({
        id: `sessions-index-spread-${key}-${sp.events}`,
        figure: `${what}: the store's folder, ${unit}, with the index vs without`,
        layer,
        ratio: `${key === 'disk' ? 'disk bytes' : 'bytes'} with ÷ without`,
        perRound: one(ratio),
        ofMedians: ratio,
        target: `≤ ${TARGETS.sizeOverhead}`,
        pass: ratio <= TARGETS.sizeOverhead,
        result: ratio <= TARGETS.sizeOverhead ? 'PASS' : 'MISS',
      })
    }
    const per = (b: number) => `${fmt(b / CONFIG.spreadSessions / 1024, 1)} KiB`
    meaning.push(
      `${what}: a session takes ${per(sp.without.size.disk)} of blocks without the index; the index adds ${per(sp.with.size.disk - sp.without.size.disk)} a session ` +
        `(index/: ${per(sp.with.index.disk)} in ${n0(sp.with.index.folders / CONFIG.spreadSessions)} folders a session; the row, summary.json, ${per(sp.with.summaries.disk)}), ` +
        `${fmt(((sp.with.size.disk - sp.without.size.disk) / sp.without.size.disk) * 100, 0)} % of the store's blocks; bytes of files +${fmt(((sp.with.size.bytes - sp.without.size.bytes) / sp.without.size.bytes) * 100, 2)} %. ` +
        "The entries lie in the four list folders until each holds 256 (empty files: no blocks); what is left is the row, a file of its own in the session's folder, a 4 KiB block: the floor while each record is a file of its own.",
    )
  }

  // The big stores: how they were built and what the index takes of them.
  const builds = m.built.map((b) => ({
    backend: b.backend,
    size: b.size,
    made: b.result.made,
    seconds: b.result.totalMs / 1000,
    createSeconds: b.result.createMs / 1000,
    catchUpSeconds: b.result.catchUpMs / 1000,
    perSecond: (b.result.made / b.result.totalMs) * 1000,
    budgetHit: b.result.budgetHit,
  }))
  const buildMeaning: string[] = []
  for (const b of builds.filter((x) => x.size === 'big')) {
    buildMeaning.push(
      `${NAME[b.backend]}: the big store has ${n0(b.made)} sessions${b.budgetHit ? ` (not ${n0(CONFIG.big)}: its build budget of ${n0(b.backend === 'chromium' ? CONFIG.browserBuildSeconds : CONFIG.buildSeconds)} s ran out)` : ''}, ` +
        `built through the API in ${fmt(b.seconds, 0)} s, ${fmt(b.perSecond, 0)} sessions/s (${fmt(b.createSeconds, 0)} s in createSession and close, ` +
        `${fmt(b.catchUpSeconds, 0)} s more waiting for the index to catch up: ${fmt((b.catchUpSeconds * 1000) / b.made, 1)} ms a session), the three builds running at once` +
        `${b.backend === 'postgres' ? ', with synchronous_commit off meanwhile' : ''}.`,
    )
  }
  const fsBig = m.bigStore.fs as { sessions: number; total: FolderSize; index: FolderSize; summaries: FolderSize; logs: FolderSize } | undefined
  if (fsBig) {
    buildMeaning.push(
      `fs, the big store (${n0(fsBig.sessions)} sessions of one event): ${mib(fsBig.total.bytes)} in ${n0(fsBig.total.files)} files (${mib(fsBig.total.disk)} of blocks); ` +
        `index/ ${mib(fsBig.index.bytes)} in ${n0(fsBig.index.files)} files and ${n0(fsBig.index.folders)} folders (${mib(fsBig.index.disk)} of blocks), the _summary rows ${mib(fsBig.summaries.bytes)} in ` +
        `${n0(fsBig.summaries.files)} files (${mib(fsBig.summaries.disk)} of blocks): ${fmt(((fsBig.index.bytes + fsBig.summaries.bytes) / fsBig.total.bytes) * 100, 1)} % of its bytes, ` +
        `${fmt(((fsBig.index.disk + fsBig.summaries.disk) / fsBig.total.disk) * 100, 1)} % of its blocks (a store built in a burst, its sessions of one event; a store written over days is measured below).`,
    )
  }
  const pgBig = m.bigStore.postgres as { sessions: number; database: number; recordsTable: number; indexRows: number; summaryRows: number } | undefined
  if (pgBig) {
    buildMeaning.push(
      `PostgreSQL, the big store: database ${mib(pgBig.database)}; the records table (the index's ${n0(pgBig.indexRows)} rows, and others) ${mib(pgBig.recordsTable)}; ${n0(pgBig.summaryRows)} _summary rows.`,
    )
  }
  meaning.unshift(...buildMeaning)

  for (const b of builds) log(`built ${b.backend} ${b.size}: ${n0(b.made)} sessions in ${fmt(b.seconds, 1)} s${b.budgetHit ? ' (budget ran out)' : ''}`)
  if (anatomyRows.length > 0) {
    console.log('\nWhere a first page goes (a fresh engine and adapter in this thread, limit 50): calls per page (summed ms, calls overlap), median of 5')
    const w0 = Math.max(...anatomyRows.map((r) => r[0]!.length))
    console.log(`${'operation'.padEnd(w0)}  ${'big store'.padStart(20)}  ${'small store'.padStart(20)}`)
    for (const r of anatomyRows) console.log(`${r[0]!.padEnd(w0)}  ${r[1]!.padStart(20)}  ${r[2]!.padStart(20)}`)
  }
  console.log('')
  for (const line of meaning) console.log(`* ${line}`)

  finishBench(
    'sessions',
    `sessionfold session list benchmark (§14): store.sessions() through openStore()${m.pgInfo ? `; ${m.pgInfo}` : ''}${m.chromiumVersion ? `; Chromium ${m.chromiumVersion}` : ''}`,
    figures,
    headline,
    {
      source: m.source,
      config: CONFIG,
      targets: TARGETS,
      backends: BACKENDS,
      phases: PHASES,
      chromium: m.chromiumVersion,
      postgres: m.pgInfo,
      sizes: Object.fromEntries(BACKENDS.map((b) => [b, m.sizesOf(b)])),
      headline,
      meaning,
      builds,
      buildSeconds: m.buildSeconds,
      pages: m.pages,
      anatomy: m.anatomies,
      updates: Object.fromEntries(
        Object.entries(m.updates).map(([b, u]) => [
          b,
          Object.fromEntries(
            (['main', 'bare'] as const).map((k) => [
              k,
              Object.fromEntries(
                SIZES.map((size) => {
                  const x = u[k][size]
                  return [
                    size,
                    {
                      p50: quantile(x.seen, 0.5),
                      p99: quantile(x.seen, 0.99),
                      max: quantile(x.seen, 1),
                      ackP50: quantile(x.ack, 0.5),
                      blocks: summarize(x.blocks),
                      callsMedian: median(x.calls.filter((c) => Number.isFinite(c))),
                      timeouts: x.timeouts,
                      samples: x.seen,
                    },
                  ]
                }),
              ),
            ]),
          ),
        ]),
      ),
      overhead: m.overhead && {
        rounds: m.overhead.rounds,
        unit: "ms per run (rounds: the mean of a round's runs); bytes",
        runs: { with: m.overhead.with.length, without: m.overhead.without.length, control: m.overhead.control.length },
        /** The folder after a run, medians over the runs: with the index (and its index/ and _summary rows), without. */
        folder: {
          with: medianSize(m.overhead.with.map((r) => r.size)),
          without: medianSize(m.overhead.without.map((r) => r.size)),
          index: medianSize(m.overhead.with.map((r) => r.index)),
          summaries: medianSize(m.overhead.with.map((r) => r.summaries)),
        },
        /** The engine's storage calls during a run (from the first append until the index caught up): medians over the runs. */
        ops: { with: medianOps(m.overhead.with), without: medianOps(m.overhead.without) },
      },
      bigStore: m.bigStore,
      machine: { cores: os.cpus().length, node: process.version },
      totalSeconds: (performance.now() - T0) / 1000,
    },
  )
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
