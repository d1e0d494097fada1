// Storage benchmark of the fs adapter under strict durability (npm run bench:storage).
// Appends of 10,000 events of ~300 bytes: (a) in batches of 100, (b) one at a time from 100
// concurrent callers, (c) one at a time, sequentially (fewer events, scaled to events/s); against
// the raw limit of the same record bytes (writeSync + fsyncSync per 100 into one file) and
// better-sqlite3 (WAL, synchronous FULL; NORMAL against 'relaxed'). And a range read of the last
// 100 events of a 100,000-event log, fresh and warm adapter, against a full read.
import * as fs from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { createFsAdapter } from '../src/backends/fs'
import { LOG_FILE, sessionDir } from '../src/backends/fs/layout'
import { encodeBatch } from '../src/backends/fs/record-format'
import type { StorageAdapter } from '../src/storage/types'
import type { SessionEvent, SessionHeader, SessionId } from '../src/core/model'
import { encodeEvent, type EncodedEvent } from '../src/core/validate'
import { openSqlitePeer, type SqlitePeer } from './sqlite-peer'
import { benchRoot, checkSettings, env, finishBench, fmt, median, ratio, summarize, type Figure, type Ratio } from './stats'
import { messageInput, rawWriteFsync } from './common'

const CONFIG = {
  durability: 'strict' as const,
  eventBytes: 300,
  /** Events per run of (a), (b) and raw. */
  events: env('BENCH_EVENTS', 10_000),
  batch: 100,
  concurrency: 100,
  /** Events per run of (c): sequential appends cost one fdatasync each. */
  sequentialEvents: env('BENCH_SEQ_EVENTS', 2_000),
  /** Rounds of (a), raw, raw async and (b), after one unrecorded warm-up round. */
  writeRounds: env('BENCH_WRITE_ROUNDS', 9),
  /** Rounds of (c), the slow one: the first ones; (b)/(c) pairs each with (b) of the same round. */
  sequentialRounds: env('BENCH_SEQ_ROUNDS', 5),
  logEvents: env('BENCH_LOG_EVENTS', 100_000),
  buildBatch: 1_000,
  tail: 100,
  /** Rounds of the read comparison; each has one full read and `rangeRepeats` of each range read. */
  readRounds: env('BENCH_READ_ROUNDS', 9),
  rangeRepeats: 5,
}

const TARGETS = {
  batchedVsRaw: 0.7,
  concurrentVsSequential: 10,
  /** At the same durability: strict vs synchronous=FULL. */
  batchedVsSqlite: 1,
  rangeVsFull: 50,
}

const log = (msg: string) => process.stderr.write(`${msg}\n`)

const TIME0 = 1_700_000_000_000

function header(id: SessionId): SessionHeader {
  return { version: 1, id, createdAt: TIME0, seedLength: 0, delegationDepth: 0, origin: 'root' }
}

function eventAt(seq: number, text: string): SessionEvent {
  return { seq, type: 'message/assistant', time: TIME0 + seq, data: { role: 'assistant', text } }
}

/** So an event with a 5-digit seq encodes to exactly `eventBytes` of JSON (bench/common.ts). */
const PAD = (messageInput(CONFIG.eventBytes).data as { text: string }).text

function makeEvents(id: SessionId, from: number, count: number): EncodedEvent[] {
  return Array.from({ length: count }, (_, i) => encodeEvent(eventAt(from + i, PAD), id))
}

interface WriteContext {
  adapter: StorageAdapter
  dir: string
  /** Seqs 0..events-1; EncodedEvent carries no session id, so every session reuses them. */
  events: EncodedEvent[]
  batches: EncodedEvent[][]
  /** The same bytes the adapter writes for each batch of 100, made ahead of time. */
  rawBatches: Buffer[]
  next: number
  /** The peer: better-sqlite3, WAL, synchronous FULL (strict) and NORMAL (relaxed), one events table each. */
  sqliteFull: SqlitePeer
  sqliteNormal: SqlitePeer
  /** The fs adapter with durability 'relaxed', for the comparison with sqlite NORMAL. */
  relaxed: StorageAdapter
}

function freshId(ctx: WriteContext, tag: string): SessionId {
  return `bench-${tag}-${ctx.next++}`
}

/**
 * One adapter run on a new session, created and its log state loaded first (an engine learns the
 * length before appending): `body` timed, the session's length checked after; events/s.
 */
async function adapterRun(ctx: WriteContext, tag: string, count: number, body: (id: SessionId) => Promise<unknown>): Promise<number> {
  const id = freshId(ctx, tag)
  await ctx.adapter.createSession(header(id))
  if ((await ctx.adapter.getSession(id))?.length !== 0) throw new Error(`session ${id} is not empty`)
  const t0 = performance.now()
  await body(id)
  const ms = performance.now() - t0
  const info = await ctx.adapter.getSession(id)
  if (info?.length !== count) throw new Error(`session ${id} holds ${info?.length} events, expected ${count}`)
  await ctx.adapter.deleteSession(id)
  return (count / ms) * 1000
}

/** (a) batches of `batch` events, awaited one after another. */
function runBatched(ctx: WriteContext, count: number): Promise<number> {
  const batches = ctx.batches.slice(0, count / CONFIG.batch)
  return adapterRun(ctx, 'a', count, async (id) => {
    for (const b of batches) await ctx.adapter.append(id, b)
  })
}

/** (b) one event per append from `concurrency` callers sharing a seq counter (taken at call time, so appends queue in seq order). */
function runConcurrent(ctx: WriteContext, count: number): Promise<number> {
  let counter = 0
  return adapterRun(ctx, 'b', count, (id) =>
    Promise.all(
      Array.from({ length: CONFIG.concurrency }, async () => {
        while (counter < count) await ctx.adapter.append(id, [ctx.events[counter++]!])
      }),
    ),
  )
}

/** (c) one event per append, each awaited. */
function runSequential(ctx: WriteContext, count: number): Promise<number> {
  const singles = ctx.events.slice(0, count).map((e) => [e])
  return adapterRun(ctx, 'c', count, async (id) => {
    for (const x of singles) await ctx.adapter.append(id, x)
  })
}

/** The raw limit: the same bytes, writeSync + fsyncSync per batch of 100, into one new file. */
async function runRaw(ctx: WriteContext, count: number): Promise<number> {
  const ms = rawWriteFsync(join(ctx.dir, `raw-${ctx.next++}.log`), ctx.rawBatches.slice(0, count / CONFIG.batch))
  return (count / ms) * 1000
}

/** The peer: one sqlite transaction per batch (INSERT x batch, COMMIT). Returns events/s. */
function runSqliteBatched(ctx: WriteContext, peer: SqlitePeer, count: number): number {
  const id = freshId(ctx, 'sq')
  const batches = ctx.batches.slice(0, count / CONFIG.batch)
  const t0 = performance.now()
  for (const b of batches) peer.append(id, b)
  const ms = performance.now() - t0
  sqliteFinish(peer, id, count)
  return (count / ms) * 1000
}

/** The peer, one event per transaction, one after another (better-sqlite3 is synchronous: 100 concurrent callers would queue the same way). */
function runSqliteSingles(ctx: WriteContext, peer: SqlitePeer, count: number): number {
  const id = freshId(ctx, 'sq1')
  const singles = ctx.events.slice(0, count).map((e) => [e])
  const t0 = performance.now()
  for (const s of singles) peer.append(id, s)
  const ms = performance.now() - t0
  sqliteFinish(peer, id, count)
  return (count / ms) * 1000
}

/** Checks the rows landed, then removes them (untimed), so the table does not grow from run to run. */
function sqliteFinish(peer: SqlitePeer, id: string, expected: number): void {
  const { n } = peer.db.prepare('SELECT count(*) AS n FROM events WHERE session = ?').get(id) as { n: number }
  if (n !== expected) throw new Error(`sqlite session ${id} holds ${n} events, expected ${expected}`)
  peer.db.prepare('DELETE FROM events WHERE session = ?').run(id)
}

/** For reference (no target): the same, through node:fs/promises FileHandle.write + datasync. */
async function runRawAsync(ctx: WriteContext, count: number): Promise<number> {
  const path = join(ctx.dir, `raw-async-${ctx.next++}.log`)
  const fh = await fsp.open(path, 'w')
  const bufs = ctx.rawBatches.slice(0, count / CONFIG.batch)
  let ms: number
  try {
    const t0 = performance.now()
    let pos = 0
    for (const buf of bufs) {
      let done = 0
      while (done < buf.length) done += (await fh.write(buf, done, buf.length - done, pos + done)).bytesWritten
      pos += buf.length
      await fh.datasync()
    }
    ms = performance.now() - t0
  } finally {
    await fh.close()
  }
  fs.unlinkSync(path)
  return (count / ms) * 1000
}

async function readTail(adapter: StorageAdapter, id: SessionId, length: number, tail: number): Promise<number> {
  let n = 0
  let expect = length - tail
  for await (const page of adapter.readEvents(id, { from: length - tail })) {
    for (const e of page) if (e.seq !== expect++) throw new Error(`range read returned seq ${e.seq}, expected ${expect - 1}`)
    n += page.length
  }
  if (n !== tail) throw new Error(`range read returned ${n} events, expected ${tail}`)
  return n
}

async function readFull(adapter: StorageAdapter, id: SessionId, length: number): Promise<number> {
  let n = 0
  for await (const page of adapter.readEvents(id)) {
    if (page[0]?.seq !== n) throw new Error(`full read: page starts at seq ${page[0]?.seq}, expected ${n}`)
    n += page.length
  }
  if (n !== length) throw new Error(`full read returned ${n} events, expected ${length}`)
  return n
}

async function main(): Promise<void> {
  const started = performance.now()
  const { root, cleanup } = await benchRoot('sessionfold-bench-')
  try {
    checkSettings(CONFIG)
    if (CONFIG.events % CONFIG.batch !== 0) throw new Error('BENCH_EVENTS must be a multiple of the batch size')

    // ---- writes ----
    const writeDir = join(root, 'writes')
    await fsp.mkdir(writeDir)
    const events = makeEvents('bench', 0, CONFIG.events)
    const batches: EncodedEvent[][] = []
    for (let i = 0; i < events.length; i += CONFIG.batch) batches.push(events.slice(i, i + CONFIG.batch))
    const ctx: WriteContext = {
      adapter: createFsAdapter({ dir: join(writeDir, 'store'), durability: CONFIG.durability }),
      dir: writeDir,
      events,
      batches,
      rawBatches: batches.map((b) => encodeBatch(b).buf),
      next: 0,
      sqliteFull: openSqlitePeer(join(writeDir, 'peer-full.sqlite'), 'FULL'),
      sqliteNormal: openSqlitePeer(join(writeDir, 'peer-normal.sqlite'), 'NORMAL'),
      relaxed: createFsAdapter({ dir: join(writeDir, 'store-relaxed'), durability: 'relaxed' }),
    }
    const jsonBytes = events.reduce((n, e) => n + Buffer.byteLength(e.json), 0) / events.length
    const recordBytes = ctx.rawBatches.reduce((n, b) => n + b.length, 0) / events.length
    log(`events: ${fmt(jsonBytes, 1)} bytes of JSON each on average, ${fmt(recordBytes, 1)} bytes per record; temp dir ${root}`)

    const samples = {
      raw: [] as number[],
      rawAsync: [] as number[],
      a: [] as number[],
      b: [] as number[],
      c: [] as number[],
      sqliteFull: [] as number[],
      sqliteSingle: [] as number[],
      aRelaxed: [] as number[],
      sqliteNormal: [] as number[],
    }
    // Round 0 is a warm-up (JIT, file system, page cache) and is not recorded.
    for (let r = 0; r <= CONFIG.writeRounds; r++) {
      const warmUp = r === 0
      const steps: [keyof typeof samples, () => Promise<number>][] = [
        ['raw', () => runRaw(ctx, CONFIG.events)],
        ['a', () => runBatched(ctx, CONFIG.events)],
        ['rawAsync', () => runRawAsync(ctx, CONFIG.events)],
        ['sqliteFull', async () => runSqliteBatched(ctx, ctx.sqliteFull, CONFIG.events)],
        ['b', () => runConcurrent(ctx, CONFIG.events)],
      ]
      if (warmUp) {
        steps.push(['c', () => runSequential(ctx, Math.min(200, CONFIG.sequentialEvents))])
        steps.push(['sqliteSingle', async () => runSqliteSingles(ctx, ctx.sqliteFull, Math.min(200, CONFIG.sequentialEvents))])
      } else if (r <= CONFIG.sequentialRounds) {
        steps.push(['c', () => runSequential(ctx, CONFIG.sequentialEvents)])
        steps.push(['sqliteSingle', async () => runSqliteSingles(ctx, ctx.sqliteFull, CONFIG.sequentialEvents)])
      }
      steps.push(['aRelaxed', () => runBatched({ ...ctx, adapter: ctx.relaxed }, CONFIG.events)])
      steps.push(['sqliteNormal', async () => runSqliteBatched(ctx, ctx.sqliteNormal, CONFIG.events)])
      // Raw and (a) run back to back, and so do (b) and (c); who goes first alternates, so drift favours no side.
      if (r % 2 === 0) steps.reverse()
      const line: string[] = []
      for (const [name, step] of steps) {
        const v = await step()
        if (!warmUp) samples[name].push(v)
        line.push(`${name} ${fmt(v, 0)}`)
      }
      log(`write ${warmUp ? 'warm-up' : `round ${r}/${CONFIG.writeRounds}`}: ${line.join(', ')} events/s`)
    }
    await ctx.adapter.close()
    await ctx.relaxed.close()
    ctx.sqliteFull.close()
    ctx.sqliteNormal.close()

    // ---- reads ----
    const readDir = join(root, 'reads')
    const id: SessionId = 'bench-log'
    let adapter = createFsAdapter({ dir: readDir, durability: CONFIG.durability })
    await adapter.createSession(header(id))
    const buildStart = performance.now()
    for (let from = 0; from < CONFIG.logEvents; from += CONFIG.buildBatch) {
      await adapter.append(id, makeEvents(id, from, Math.min(CONFIG.buildBatch, CONFIG.logEvents - from)))
    }
    const buildMs = performance.now() - buildStart
    const logBytes = fs.statSync(join(sessionDir(readDir, id), LOG_FILE)).size
    log(`built a ${fmt(CONFIG.logEvents, 0)}-event log (${fmt(logBytes / 2 ** 20, 1)} MiB) in ${fmt(buildMs, 0)} ms`)

    const L = CONFIG.logEvents
    // warm-up of the read paths
    await readFull(adapter, id, L)
    await readTail(adapter, id, L, CONFIG.tail)

    const full: number[] = []
    const cold: number[] = []
    const warm: number[] = []
    for (let r = 0; r < CONFIG.readRounds; r++) {
      const doFull = async () => {
        const t0 = performance.now()
        await readFull(adapter, id, L)
        full.push(performance.now() - t0)
      }
      const doRange = async () => {
        const c: number[] = []
        const w: number[] = []
        for (let k = 0; k < CONFIG.rangeRepeats; k++) {
          await adapter.close()
          const t0 = performance.now()
          adapter = createFsAdapter({ dir: readDir, durability: CONFIG.durability })
          await readTail(adapter, id, L, CONFIG.tail)
          c.push(performance.now() - t0)
          const t1 = performance.now()
          await readTail(adapter, id, L, CONFIG.tail)
          w.push(performance.now() - t1)
        }
        cold.push(median(c))
        warm.push(median(w))
      }
      if (r % 2 === 0) {
        await doFull()
        await doRange()
      } else {
        await doRange()
        await doFull()
      }
      log(`read round ${r + 1}/${CONFIG.readRounds}: full ${fmt(full.at(-1)!, 1)} ms, range cold ${fmt(cold.at(-1)!, 3)} ms, warm ${fmt(warm.at(-1)!, 3)} ms`)
    }
    await adapter.close()

    // ---- report ----
    const s = {
      raw: summarize(samples.raw),
      rawAsync: summarize(samples.rawAsync),
      a: summarize(samples.a),
      b: summarize(samples.b),
      c: summarize(samples.c),
      sqliteFull: summarize(samples.sqliteFull),
      sqliteSingle: summarize(samples.sqliteSingle),
      aRelaxed: summarize(samples.aRelaxed),
      sqliteNormal: summarize(samples.sqliteNormal),
      full: summarize(full),
      cold: summarize(cold),
      warm: summarize(warm),
    }
    const refRatio = ratio('(a) batched / (ref) raw async', s.a, s.rawAsync)
    // For reference (no target): the other pairs with the peer.
    const peerRatios = [
      ratio('relaxed batched / better-sqlite3 NORMAL batched', s.aRelaxed, s.sqliteNormal),
      ratio('(b) concurrent singles / better-sqlite3 FULL singles', s.b, s.sqliteSingle),
      ratio('(c) sequential singles / better-sqlite3 FULL singles', s.c, s.sqliteSingle),
    ]
    const ratios: Ratio[] = [
      ratio('(a) batched / raw', s.a, s.raw, { atLeast: TARGETS.batchedVsRaw }),
      ratio('(a) batched / better-sqlite3 FULL batched', s.a, s.sqliteFull, { atLeast: TARGETS.batchedVsSqlite }),
      ratio('(b) concurrent / (c) sequential', s.b, s.c, { atLeast: TARGETS.concurrentVsSequential }),
      // For reads, "faster" is full time over range time.
      ratio('full read / range read, fresh adapter', s.full, s.cold, { atLeast: TARGETS.rangeVsFull }),
      ratio('full read / range read, warm adapter', s.full, s.warm, { atLeast: TARGETS.rangeVsFull }),
    ]
    const appends = {
      batched: s.a,
      raw: s.raw,
      rawAsync: s.rawAsync,
      concurrent: s.b,
      sequential: { ...s.c, eventsPerRun: CONFIG.sequentialEvents },
      sqliteFullBatched: s.sqliteFull,
      sqliteFullSingles: { ...s.sqliteSingle, eventsPerRun: CONFIG.sequentialEvents },
      relaxedBatched: s.aRelaxed,
      sqliteNormalBatched: s.sqliteNormal,
    }
    const labels: Record<keyof typeof appends, string> = {
      batched: '(a) fs adapter, batches of 100',
      raw: 'raw: writeSync + fsyncSync per 100',
      rawAsync: '(ref) raw: FileHandle.write + datasync per 100',
      concurrent: '(b) 1 per append, 100 concurrent callers',
      sequential: '(c) 1 per append, sequential',
      sqliteFullBatched: 'better-sqlite3 WAL FULL, 1 tx per 100',
      sqliteFullSingles: 'better-sqlite3 WAL FULL, 1 tx per event',
      relaxedBatched: "fs adapter, batches of 100, 'relaxed'",
      sqliteNormalBatched: 'better-sqlite3 WAL NORMAL, 1 tx per 100',
    }
    finishBench(
      'storage',
      `sessionfold storage benchmark: fs adapter, durability '${CONFIG.durability}'`,
      [
        ...(Object.keys(labels) as (keyof typeof appends)[]).map((k): Figure => [labels[k], appends[k], 'events/s', 0]),
        ['full read (readEvents from 0)', s.full, 'ms', 1],
        [`last ${CONFIG.tail}, fresh adapter`, s.cold, 'ms', 3],
        [`last ${CONFIG.tail}, warm adapter`, s.warm, 'ms', 3],
      ],
      [...ratios, refRatio, ...peerRatios],
      {
        config: CONFIG,
        eventJsonBytes: jsonBytes,
        eventRecordBytes: recordBytes,
        appends: { unit: 'events/s', ...appends },
        reads: {
          unit: 'ms',
          logEvents: L,
          logBytes,
          buildMs,
          full: s.full,
          fullEventsPerSecond: summarize(full.map((ms) => (L / ms) * 1000)),
          rangeFresh: s.cold,
          rangeWarm: s.warm,
        },
        ratios,
        reference: refRatio,
        peerReference: peerRatios,
        sqlite: { version: openSqliteVersion(), journal: 'WAL', strict: 'synchronous=FULL', relaxed: 'synchronous=NORMAL' },
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
  } finally {
    cleanup()
  }
}

function openSqliteVersion(): string {
  const peer = openSqlitePeer(':memory:', 'FULL')
  try {
    return (peer.db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v
  } finally {
    peer.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
