// Storage benchmark of the fs adapter under strict durability (npm run bench:storage).
//
// Appends of 10,000 events of about 300 bytes:
//   (a) in batches of 100
//   (b) one at a time from 100 concurrent callers (seqs taken from a shared counter at call time)
//   (c) one at a time, sequentially, awaiting each (fewer events per run, scaled to events/s)
// beside the raw limit of the same bytes (the adapter's own records: the JSON lines plus a
// 9-byte header each) written with fs.writeSync + fs.fsyncSync per batch of 100 into one file.
// And a range read of the last 100 events of a 100,000-event log, on a freshly opened adapter
// (open cost included) and on a warm one, against a full read of the log through readEvents.
//
// The machine is shared and noisy: every figure is the median of several runs, with min and
// max, and every comparison is a ratio of runs interleaved in this process (each round runs the
// system and its baseline back to back, in alternating order). Results also go to
// bench/results-storage.json.
import * as fs from 'node:fs'
import * as fsp from 'node:fs/promises'
import os from 'node:os'
import { join } from 'node:path'
import { createFsAdapter, type FsPromises } from '../src/backends/fs'
import { INDEX_FILE, LOG_FILE, sessionDir } from '../src/backends/fs/layout'
import { RECORD_HEADER, encodeBatch } from '../src/backends/fs/record-format'
import type { StorageAdapter } from '../src/storage/types'
import type { SessionEvent, SessionHeader, SessionId } from '../src/core/model'
import { encodeEvent, type EncodedEvent } from '../src/core/validate'
import { openSqlitePeer, type SqlitePeer } from './sqlite-peer'
import { benchRoot, checkSettings, env, fmt, fmtSummary, median, pairRatios, printTable, resultsPath, summarize, type Summary } from './stats'
import { rawWriteFsync } from './common'

// ---- configuration ------------------------------------------------------------------------

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

// ---- events -------------------------------------------------------------------------------

const TIME0 = 1_700_000_000_000
const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '

function header(id: SessionId): SessionHeader {
  return { version: 1, id, createdAt: TIME0, seedLength: 0, delegationDepth: 0, origin: 'root' }
}

function eventAt(seq: number, text: string): SessionEvent {
  return { seq, type: 'message/assistant', time: TIME0 + seq, data: { role: 'assistant', text } }
}

/** Pads so an event with a 5-digit seq encodes to exactly `eventBytes` of JSON. */
const PAD = (() => {
  const base = JSON.stringify(eventAt(10_000, '')).length
  const n = CONFIG.eventBytes - base
  return WORDS.repeat(Math.ceil(n / WORDS.length)).slice(0, n)
})()

function makeEvents(id: SessionId, from: number, count: number): EncodedEvent[] {
  return Array.from({ length: count }, (_, i) => encodeEvent(eventAt(from + i, PAD), id))
}

/** Called right before and after the timed part of a run (the diagnostics count calls in between). */
type Mark = (phase: 'start' | 'end') => void

// ---- the write scenarios ------------------------------------------------------------------

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

/** Creates the session and loads its log state, as an engine does (it needs the length) before appending. */
async function open(ctx: WriteContext, id: SessionId): Promise<void> {
  await ctx.adapter.createSession(header(id))
  if ((await ctx.adapter.getSession(id))?.length !== 0) throw new Error(`session ${id} is not empty`)
}

async function finish(ctx: WriteContext, id: SessionId, expected: number): Promise<void> {
  const info = await ctx.adapter.getSession(id)
  if (info?.length !== expected) throw new Error(`session ${id} holds ${info?.length} events, expected ${expected}`)
  await ctx.adapter.deleteSession(id)
}

/** (a) batches of `batch` events, awaited one after another. Returns events/s. */
async function runBatched(ctx: WriteContext, count: number, mark?: Mark): Promise<number> {
  const id = freshId(ctx, 'a')
  await open(ctx, id)
  const batches = ctx.batches.slice(0, count / CONFIG.batch)
  mark?.('start')
  const t0 = performance.now()
  for (const b of batches) await ctx.adapter.append(id, b)
  const ms = performance.now() - t0
  mark?.('end')
  await finish(ctx, id, count)
  return (count / ms) * 1000
}

/** (b) one event per append from `concurrency` callers sharing a seq counter. Returns events/s. */
async function runConcurrent(ctx: WriteContext, count: number, mark?: Mark): Promise<number> {
  const id = freshId(ctx, 'b')
  await open(ctx, id)
  const { adapter, events } = ctx
  let counter = 0
  const caller = async () => {
    while (counter < count) {
      // The seq is taken synchronously at call time, so appends queue in seq order.
      const e = events[counter++]!
      await adapter.append(id, [e])
    }
  }
  mark?.('start')
  const t0 = performance.now()
  await Promise.all(Array.from({ length: CONFIG.concurrency }, caller))
  const ms = performance.now() - t0
  mark?.('end')
  await finish(ctx, id, count)
  return (count / ms) * 1000
}

/** (c) one event per append, each awaited. Returns events/s. */
async function runSequential(ctx: WriteContext, count: number, mark?: Mark): Promise<number> {
  const id = freshId(ctx, 'c')
  await open(ctx, id)
  const singles = ctx.events.slice(0, count).map((e) => [e])
  mark?.('start')
  const t0 = performance.now()
  for (const s of singles) await ctx.adapter.append(id, s)
  const ms = performance.now() - t0
  mark?.('end')
  await finish(ctx, id, count)
  return (count / ms) * 1000
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

// ---- diagnostics (not timed) --------------------------------------------------------------

interface Counts {
  /** fdatasync calls on events.log. */
  logSyncs: number
  /** Writes to events.log. */
  logWrites: number
  /** Events in each write to events.log (its records counted), in order: the group-commit groups. */
  groups: number[]
  stats: number
  opens: number
  /** Opens of events.idx. */
  indexOpens: number
}

const zeroCounts = (): Counts => ({ logSyncs: 0, logWrites: 0, groups: [], stats: 0, opens: 0, indexOpens: 0 })

/** Records in buf[from, from + length) of the fs log format (9-byte header, u32 LE length at +4). */
function recordsIn(buf: Buffer, from: number, length: number): number {
  let n = 0
  for (let at = from; at + RECORD_HEADER <= from + length; at += RECORD_HEADER + buf.readUInt32LE(at + 4)) n++
  return n
}

/** node:fs/promises with counters on what the adapter asks of it, for one untimed pass. */
function countingFs(counts: Counts): FsPromises {
  const open = (async (path: fs.PathLike, flags?: string | number, mode?: fs.Mode) => {
    counts.opens++
    if (String(path).endsWith(INDEX_FILE)) counts.indexOpens++
    const fh = await fsp.open(path, flags, mode)
    if (String(path).endsWith(LOG_FILE)) {
      const datasync = fh.datasync.bind(fh)
      fh.datasync = () => {
        counts.logSyncs++
        return datasync()
      }
    }
    return fh
  }) as typeof fsp.open
  const stat = ((...args: Parameters<typeof fsp.stat>) => {
    counts.stats++
    return fsp.stat(...args)
  }) as typeof fsp.stat
  // Log appends go through writeSync (see FsPromises in src/backends/fs/options.ts): count them there.
  const writeSync = ((fd: number, buf: Buffer, offset: number, length: number, position: number) => {
    counts.logWrites++
    counts.groups.push(recordsIn(buf, offset, length))
    return fs.writeSync(fd, buf, offset, length, position)
  }) as typeof fs.writeSync
  return { open, stat, writeSync, mkdir: fsp.mkdir, readdir: fsp.readdir, readFile: fsp.readFile, rename: fsp.rename, rm: fsp.rm, unlink: fsp.unlink }
}

interface Diagnostic {
  events: number
  appends: number
  logWrites: number
  logSyncs: number
  eventsPerSync: number
  stats: number
  opens: number
  indexOpens: number
  groupSize: Summary
  firstGroups: number[]
}

/** One untimed pass per append scenario with counters on the adapter's fs calls. */
async function diagnose(ctx: WriteContext, dir: string): Promise<Record<'a' | 'b' | 'c', Diagnostic>> {
  const cases: ['a' | 'b' | 'c', (c: WriteContext, n: number, mark: Mark) => Promise<number>, number][] = [
    ['a', runBatched, 2_000],
    ['b', runConcurrent, 2_000],
    ['c', runSequential, 200],
  ]
  const out: Partial<Record<'a' | 'b' | 'c', Diagnostic>> = {}
  for (const [name, run, n] of cases) {
    const live = zeroCounts()
    let atStart = zeroCounts()
    let counted = zeroCounts()
    const adapter = createFsAdapter({ dir: join(dir, `diag-${name}`), durability: CONFIG.durability, fs: countingFs(live) })
    await run({ ...ctx, adapter }, n, (phase) => {
      const now = { ...live, groups: [...live.groups] }
      if (phase === 'start') atStart = now
      else {
        counted = {
          logSyncs: now.logSyncs - atStart.logSyncs,
          logWrites: now.logWrites - atStart.logWrites,
          groups: now.groups.slice(atStart.groups.length),
          stats: now.stats - atStart.stats,
          opens: now.opens - atStart.opens,
          indexOpens: now.indexOpens - atStart.indexOpens,
        }
      }
    })
    await adapter.close()
    const { groups, ...rest } = counted
    out[name] = {
      ...rest,
      events: n,
      appends: name === 'a' ? n / CONFIG.batch : n,
      eventsPerSync: n / counted.logSyncs,
      groupSize: { ...summarize(groups), samples: [] },
      firstGroups: groups.slice(0, 8),
    }
  }
  return out as Record<'a' | 'b' | 'c', Diagnostic>
}

// ---- where a batch's time goes (untimed for the targets) -----------------------------------

/**
 * One file, grown batch after batch as the adapter grows a log, timing the parts of a strict
 * append of 100 events: encoding the records, the write into the page cache, and the sync,
 * taken in turn three ways on successive batches: through the thread pool as the adapter does
 * (FileHandle.datasync), fdatasyncSync and fsyncSync on the calling thread (the raw baseline).
 */
async function breakdown(ctx: WriteContext, rounds: number): Promise<Record<'encode' | 'write' | 'poolDatasync' | 'fdatasyncSync' | 'fsyncSync', Summary>> {
  const us: Record<'encode' | 'write' | 'poolDatasync' | 'fdatasyncSync' | 'fsyncSync', number[]> = { encode: [], write: [], poolDatasync: [], fdatasyncSync: [], fsyncSync: [] }
  for (let r = 0; r < rounds; r++) {
    const path = join(ctx.dir, `breakdown-${r}.log`)
    const fh = await fsp.open(path, 'w')
    try {
      let pos = 0
      for (let i = 0; i < ctx.batches.length; i++) {
        const t0 = performance.now()
        const { buf } = encodeBatch(ctx.batches[i]!)
        const t1 = performance.now()
        let done = 0
        while (done < buf.length) done += fs.writeSync(fh.fd, buf, done, buf.length - done, pos + done)
        pos += buf.length
        const t2 = performance.now()
        const how = (i + r) % 3
        if (how === 0) await fh.datasync()
        else if (how === 1) fs.fdatasyncSync(fh.fd)
        else fs.fsyncSync(fh.fd)
        const t3 = performance.now()
        us.encode.push((t1 - t0) * 1000)
        us.write.push((t2 - t1) * 1000)
        us[how === 0 ? 'poolDatasync' : how === 1 ? 'fdatasyncSync' : 'fsyncSync'].push((t3 - t2) * 1000)
      }
    } finally {
      await fh.close()
    }
    fs.unlinkSync(path)
  }
  const s = (x: number[]) => ({ ...summarize(x), samples: [] })
  return { encode: s(us.encode), write: s(us.write), poolDatasync: s(us.poolDatasync), fdatasyncSync: s(us.fdatasyncSync), fsyncSync: s(us.fsyncSync) }
}

// ---- the read scenario --------------------------------------------------------------------

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

// ---- main ---------------------------------------------------------------------------------

interface Ratio {
  name: string
  /** Per-round ratios: each pairs two runs made back to back. */
  perRound: Summary
  /** Ratio of the two medians, for comparison. */
  ofMedians: number
  target: number
  pass: boolean
}

/** a/b per round; when b ran in fewer rounds (only the first ones), the pairs are those rounds. */
function ratio(name: string, a: Summary, b: Summary, target: number): Ratio {
  const rounds = Math.min(a.n, b.n)
  const perRound = summarize(pairRatios(a.samples.slice(0, rounds), b.samples.slice(0, rounds)))
  return { name, perRound, ofMedians: a.median / b.median, target, pass: perRound.median >= target }
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
      raw: [] as number[], rawAsync: [] as number[], a: [] as number[], b: [] as number[], c: [] as number[],
      sqliteFull: [] as number[], sqliteSingle: [] as number[], aRelaxed: [] as number[], sqliteNormal: [] as number[],
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

    log('diagnostics (untimed): counting fdatasync, writes and stats per scenario')
    const diagnostics = await diagnose(ctx, writeDir)
    log('diagnostics (untimed): where the time of a batch goes')
    const perBatch = await breakdown(ctx, 3)

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
    const fullRate = summarize(full.map((ms) => (L / ms) * 1000))
    const refRatio = ratio('(a) batched / (ref) raw async', s.a, s.rawAsync, TARGETS.batchedVsRaw)
    // For reference (no target): the other pairs with the peer.
    const peerRatios = [
      ratio('relaxed batched / better-sqlite3 NORMAL batched', s.aRelaxed, s.sqliteNormal, 1),
      ratio('(b) concurrent singles / better-sqlite3 FULL singles', s.b, s.sqliteSingle, 1),
      ratio('(c) sequential singles / better-sqlite3 FULL singles', s.c, s.sqliteSingle, 1),
    ]
    const ratios: Ratio[] = [
      ratio('(a) batched / raw', s.a, s.raw, TARGETS.batchedVsRaw),
      ratio('(a) batched / better-sqlite3 FULL batched', s.a, s.sqliteFull, TARGETS.batchedVsSqlite),
      ratio('(b) concurrent / (c) sequential', s.b, s.c, TARGETS.concurrentVsSequential),
      // For reads, "faster" is full time over range time.
      ratio('full read / range read, fresh adapter', s.full, s.cold, TARGETS.rangeVsFull),
      ratio('full read / range read, warm adapter', s.full, s.warm, TARGETS.rangeVsFull),
    ]

    const n = (x: number) => fmt(x, 0)
    console.log('')
    console.log(`sessionfold storage benchmark: fs adapter, durability '${CONFIG.durability}'`)
    console.log(`node ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} cpus, temp dir under ${os.tmpdir()}`)
    console.log(`events: ${fmt(jsonBytes, 1)} bytes of JSON on average (${fmt(recordBytes, 1)} bytes with the 9-byte record header)`)
    console.log('figures: median (min–max) of the runs; ratios are per round (system and baseline run back to back), median (min–max)')
    console.log('')
    console.log('Appends')
    printTable(
      ['scenario', 'events/run', 'runs', 'events/s median', 'min', 'max'],
      [
        [`(a) batches of ${CONFIG.batch}`, n(CONFIG.events), String(s.a.n), n(s.a.median), n(s.a.min), n(s.a.max)],
        [`raw: writeSync+fsyncSync per ${CONFIG.batch}`, n(CONFIG.events), String(s.raw.n), n(s.raw.median), n(s.raw.min), n(s.raw.max)],
        [`(ref) raw async: FileHandle.write+datasync per ${CONFIG.batch}`, n(CONFIG.events), String(s.rawAsync.n), n(s.rawAsync.median), n(s.rawAsync.min), n(s.rawAsync.max)],
        [`(b) 1 per append, ${CONFIG.concurrency} concurrent callers`, n(CONFIG.events), String(s.b.n), n(s.b.median), n(s.b.min), n(s.b.max)],
        [`(c) 1 per append, sequential*`, n(CONFIG.sequentialEvents), String(s.c.n), n(s.c.median), n(s.c.min), n(s.c.max)],
        [`peer: better-sqlite3 WAL FULL, 1 tx per ${CONFIG.batch}`, n(CONFIG.events), String(s.sqliteFull.n), n(s.sqliteFull.median), n(s.sqliteFull.min), n(s.sqliteFull.max)],
        [`peer: better-sqlite3 WAL FULL, 1 tx per event*`, n(CONFIG.sequentialEvents), String(s.sqliteSingle.n), n(s.sqliteSingle.median), n(s.sqliteSingle.min), n(s.sqliteSingle.max)],
        [`relaxed: batches of ${CONFIG.batch}, durability 'relaxed'`, n(CONFIG.events), String(s.aRelaxed.n), n(s.aRelaxed.median), n(s.aRelaxed.min), n(s.aRelaxed.max)],
        [`peer: better-sqlite3 WAL NORMAL, 1 tx per ${CONFIG.batch}`, n(CONFIG.events), String(s.sqliteNormal.n), n(s.sqliteNormal.median), n(s.sqliteNormal.min), n(s.sqliteNormal.max)],
      ],
    )
    console.log(`* (c) appends ${n(CONFIG.sequentialEvents)} events per run (one fdatasync each), scaled to events/s.`)
    console.log('  raw writes the same record bytes, prepared before timing, into a new file opened before timing;')
    console.log('  (ref) is the same through node:fs/promises, the API the adapter uses (no target, for reading the ratio).')
    console.log('  Each adapter run creates a session and calls getSession before timing (an engine learns the length first).')
    console.log('')
    console.log(`Reads: ${n(L)}-event log, ${fmt(logBytes / 2 ** 20, 1)} MiB, built in ${n(buildMs)} ms with appends of ${n(CONFIG.buildBatch)}`)
    printTable(
      ['scenario', 'runs', 'ms median', 'min', 'max', 'events/s'],
      [
        ['full read (readEvents from 0)', String(s.full.n), fmt(s.full.median, 1), fmt(s.full.min, 1), fmt(s.full.max, 1), n(fullRate.median)],
        [`last ${CONFIG.tail}, fresh adapter (open included)*`, String(s.cold.n), fmt(s.cold.median, 3), fmt(s.cold.min, 3), fmt(s.cold.max, 3), ''],
        [`last ${CONFIG.tail}, warm adapter*`, String(s.warm.n), fmt(s.warm.median, 3), fmt(s.warm.min, 3), fmt(s.warm.max, 3), ''],
      ],
    )
    console.log(`* each run is the median of ${CONFIG.rangeRepeats} range reads; "fresh" = createFsAdapter + open of the log + read, after close()`)
    console.log('  (the OS page cache is warm: this measures the adapter, not the disk)')
    console.log('')
    console.log('Diagnostics: one untimed pass per scenario with counters on the adapter\'s fs calls')
    printTable(
      ['scenario', 'events', 'appends', 'log writes', 'fdatasyncs', 'events/fdatasync', 'first groups', 'fs.stat', 'fs.open', 'of events.idx'],
      (['a', 'b', 'c'] as const).map((k) => {
        const d = diagnostics[k]
        return [
          k === 'a' ? `(a) batches of ${CONFIG.batch}` : k === 'b' ? `(b) ${CONFIG.concurrency} concurrent` : '(c) sequential',
          n(d.events), n(d.appends), n(d.logWrites), n(d.logSyncs), fmt(d.eventsPerSync, 1), `${d.firstGroups.join(',')}…`, n(d.stats), n(d.opens), n(d.indexOpens),
        ]
      }),
    )
    console.log('  "first groups": events per write of the log, i.e. the group-commit groups, in order.')
    console.log('')
    console.log(`Where a batch of ${CONFIG.batch} goes (untimed pass, one growing file, the sync taken three ways in turn), µs per batch`)
    printTable(['part', 'batches', 'µs median', 'min', 'max'], ([
      ['encode', 'encodeBatch: records with length, flags, CRC32'],
      ['write', 'writeSync into the page cache'],
      ['poolDatasync', 'sync: FileHandle.datasync (thread pool; the adapter)'],
      ['fdatasyncSync', 'sync: fdatasyncSync on this thread'],
      ['fsyncSync', 'sync: fsyncSync on this thread (the raw baseline)'],
    ] as const).map(([k, label]) => [label, String(perBatch[k].n), fmt(perBatch[k].median, 0), fmt(perBatch[k].min, 0), fmt(perBatch[k].max, 0)]))
    console.log('')
    console.log('Targets')
    printTable(
      ['ratio', 'per round median (min–max)', 'of medians', 'target', 'result'],
      ratios.map((x) => [x.name, fmtSummary(x.perRound, 2), fmt(x.ofMedians, 2), `>= ${x.target}`, x.pass ? 'PASS' : 'MISS']),
    )
    console.log(`  for reference, not a target: ${refRatio.name} = ${fmtSummary(refRatio.perRound, 2)}`)
    for (const p of peerRatios) console.log(`  for reference, not a target: ${p.name} = ${fmtSummary(p.perRound, 2)}`)
    const totalS = (performance.now() - started) / 1000
    console.log('')
    console.log(`total ${fmt(totalS, 1)} s`)

    const results = {
      benchmark: 'storage',
      date: new Date().toISOString(),
      environment: { node: process.version, platform: os.platform(), arch: os.arch(), cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, tmpdir: os.tmpdir() },
      config: CONFIG,
      eventJsonBytes: jsonBytes,
      eventRecordBytes: recordBytes,
      appends: {
        unit: 'events/s',
        batched: s.a,
        raw: s.raw,
        rawAsync: s.rawAsync,
        concurrent: s.b,
        sequential: { ...s.c, eventsPerRun: CONFIG.sequentialEvents },
        sqliteFullBatched: s.sqliteFull,
        sqliteFullSingles: { ...s.sqliteSingle, eventsPerRun: CONFIG.sequentialEvents },
        relaxedBatched: s.aRelaxed,
        sqliteNormalBatched: s.sqliteNormal,
      },
      reads: {
        unit: 'ms',
        logEvents: L,
        logBytes,
        buildMs,
        full: s.full,
        fullEventsPerSecond: fullRate,
        rangeFresh: s.cold,
        rangeWarm: s.warm,
      },
      diagnostics,
      perBatchUs: perBatch,
      ratios: ratios.map((x) => ({ name: x.name, perRound: x.perRound, ofMedians: x.ofMedians, target: x.target, result: x.pass ? 'PASS' : 'MISS' })),
      reference: { name: refRatio.name, perRound: refRatio.perRound, ofMedians: refRatio.ofMedians },
      peerReference: peerRatios.map((x) => ({ name: x.name, perRound: x.perRound, ofMedians: x.ofMedians })),
      sqlite: { version: (openSqliteVersion()), journal: 'WAL', strict: 'synchronous=FULL', relaxed: 'synchronous=NORMAL' },
      totalSeconds: totalS,
    }
    const out = resultsPath('storage')
    fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
    console.log(`results written to ${out}`)
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
