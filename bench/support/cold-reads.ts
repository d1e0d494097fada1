// (b), (c) of bench/projections.ts: a cold read (Engine.coldRead) of a 100,000-event fs log whose
// checkpoint is 200 events behind its end, against the same read with the checkpoint deleted (a
// full refold), as three readers; and the refold's events/s against a raw read + JSON.parse of
// the same events.log.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { createFsAdapter } from '../../src/backends/fs'
import { LOG_FILE, sessionDir } from '../../src/backends/fs/layout'
import { recordAt } from '../../src/backends/fs/record-format'
import type { CheckpointRow, StorageAdapter } from '../../src/storage/types'
import type { SessionEvent, SessionId } from '../../src/core/model'
import type { ProjectionSnapshot } from '../../src/core/projection'
import { BUILTIN_PROJECTIONS } from '../../src/core/units'
import { encodeEvent, type EncodedEvent } from '../../src/core/validate'
import { Engine } from '../../src/engine'
import { checkpointRowOf, foldEvent, initSlots, restoreSlots } from '../../src/engine/units'
import { logModel, rootHeader as header } from '../log-model'
import { alternate } from '../common'
import { fmt, ratio, summarize, type Ratio, type Summary } from '../stats'

export const READ_CONFIG = {
  logEvents: Number(process.env.BENCH_LOG_EVENTS || 100_000),
  /** Events after the checkpoint's watermark. */
  behind: 200,
  buildBatch: 5_000,
  readRounds: Number(process.env.BENCH_READ_ROUNDS || 9),
  /** Cold reads with checkpoint per round (their median is the round's figure). */
  checkpointRepeats: 5,
  eventBytes: 300,
  turnLength: 200,
  catalogEvery: 331,
}
const CONFIG = READ_CONFIG
const TARGETS = { refoldVsCheckpoint: 50, refoldVsRaw: 0.5 }
const logEventAt = logModel(CONFIG)
const log = (msg: string) => process.stderr.write(`${msg}\n`)
const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 2)} MiB`
const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`

/**
 * How cold the reader is. `new`: a new adapter and engine, as at process start (the adapter's
 * one-time setup is timed). `ready`: an adapter already in use (set up before timing) that has
 * not loaded this session's log, and a new engine. `warm`: one engine and adapter that read this
 * session before (the adapter keeps the log's offsets; the session is still not open).
 */
export type Reader = 'new' | 'ready' | 'warm'
export const READERS: readonly Reader[] = ['new', 'ready', 'warm']
export const READER_LABELS: Record<Reader, string> = {
  new: 'new adapter + engine',
  ready: 'adapter in use, log not loaded',
  warm: 'warm engine (log loaded)',
}

export interface ReadResults {
  logBytes: number
  buildMs: number
  checkpointBytes: number
  catalogEntries: number
  ms: { checkpoint: Record<Reader, Summary>; refold: Record<Reader, Summary>; raw: Summary; rawNoCrc: Summary }
  eventsPerSecond: { refold: Record<Reader, Summary>; raw: Summary; rawNoCrc: Summary }
  ratios: { cold: Record<Reader, Ratio>; throughput: Ratio; throughputNoCrc: Ratio }
}

/** Writes the log straight through the adapter, then the checkpoint row as of seq length-behind-1. */
async function buildLog(dir: string, id: SessionId): Promise<{ row: CheckpointRow; buildMs: number }> {
  const L = CONFIG.logEvents
  const cut = L - CONFIG.behind
  const adapter = createFsAdapter({ dir })
  const t0 = performance.now()
  await adapter.createSession(header(id))
  const slots = initSlots(BUILTIN_PROJECTIONS, header(id))
  for (let from = 0; from < L; from += CONFIG.buildBatch) {
    const batch: EncodedEvent[] = []
    for (let seq = from; seq < Math.min(L, from + CONFIG.buildBatch); seq++) {
      const e = encodeEvent(logEventAt(seq), id)
      batch.push(e)
      // What a cold read folds: the stored JSON, parsed.
      if (seq < cut) foldEvent(slots, JSON.parse(e.json) as SessionEvent)
    }
    await adapter.append(id, batch)
  }
  const { row, skipped } = checkpointRowOf(header(id), slots)
  if (skipped.length > 0 || Object.values(row.rows).some((u) => u.seq !== cut - 1)) throw new Error('checkpoint row is not as of the cut')
  await adapter.putCheckpoint(id, row)
  await adapter.close()
  return { row, buildMs: performance.now() - t0 }
}

/** One cold read as `reader`. Returns its time and snapshot. */
async function coldRead(reader: Reader, dir: string, id: SessionId, warm: Engine): Promise<{ ms: number; snapshot: ProjectionSnapshot }> {
  let storage: StorageAdapter | undefined
  if (reader === 'ready') {
    storage = createFsAdapter({ dir })
    if ((await storage.getSession('not-there')) !== undefined) throw new Error('unexpected session') // sets the adapter up
  }
  const t0 = performance.now()
  const engine = reader === 'warm' ? warm : new Engine({ storage: storage ?? createFsAdapter({ dir }) })
  const { snapshot, length } = await engine.coldRead(id)
  const ms = performance.now() - t0
  if (engine !== warm) await engine.close()
  if (length !== CONFIG.logEvents) throw new Error(`cold read saw ${length} events`)
  return { ms, snapshot }
}

/** The raw limit: the whole events.log at once, recordAt (checksum included) and JSON.parse per record. */
function rawRead(path: string, checkCrc: boolean): number {
  const t0 = performance.now()
  const buf = fs.readFileSync(path)
  let seq = 0
  for (let at = 0; at < buf.length; seq++) {
    let start: number
    let end: number
    if (checkCrc) {
      const f = recordAt(buf, at)
      if (f.kind !== 'ok') throw new Error(`raw read: bad record at ${at}`)
      start = f.start
      end = f.end
    } else {
      start = at + 9
      end = start + buf.readUInt32LE(at + 4)
    }
    const e = JSON.parse(buf.toString('utf8', start, end)) as SessionEvent
    if (e.seq !== seq) throw new Error(`raw read: seq ${e.seq} at ${at}, expected ${seq}`)
    at = end
  }
  const ms = performance.now() - t0
  if (seq !== CONFIG.logEvents) throw new Error(`raw read found ${seq} events`)
  return ms
}

const median3 = (xs: number[]) => summarize(xs).median

export async function benchReads(root: string): Promise<ReadResults> {
  const L = CONFIG.logEvents
  const dir = join(root, 'reads')
  const id: SessionId = 'bench-log'
  const { row, buildMs } = await buildLog(dir, id)
  const logPath = join(sessionDir(dir, id), LOG_FILE)
  const logBytes = fs.statSync(logPath).size
  const checkpointBytes = JSON.stringify(row).length
  log(`built a ${fmt(L, 0)}-event log (${mib(logBytes)}) and a ${kib(checkpointBytes)} checkpoint row in ${fmt(buildMs, 0)} ms`)

  // The row as stored must be usable: every unit kept, folding resumes `behind` events before the end.
  const admin: StorageAdapter = createFsAdapter({ dir })
  const restored = restoreSlots(BUILTIN_PROJECTIONS, header(id), await admin.getCheckpoint(id), L)
  if (restored.kept !== BUILTIN_PROJECTIONS.length || restored.from !== L - CONFIG.behind) {
    throw new Error(`stored checkpoint: kept ${restored.kept} units, from ${restored.from}`)
  }

  const warm = new Engine({ storage: createFsAdapter({ dir }) })
  const byReader = () => ({ new: [] as number[], ready: [] as number[], warm: [] as number[] })
  const ms = { checkpoint: byReader(), refold: byReader(), raw: [] as number[], rawNoCrc: [] as number[] }
  let reference: string | undefined
  let catalogEntries = 0
  const check = (snapshot: ProjectionSnapshot, what: string) => {
    const json = JSON.stringify(snapshot)
    reference ??= json
    if (json !== reference) throw new Error(`${what} differs from the first cold read`)
    if (Object.keys(snapshot.faults).length > 0) throw new Error(`${what} has faults: ${JSON.stringify(snapshot.faults)}`)
    catalogEntries = (snapshot.values.subagentCatalog as unknown[] | null)?.length ?? -1
  }

  for (let r = 0; r <= CONFIG.readRounds; r++) {
    const warmUp = r === 0
    const withCheckpoint = async () => {
      await admin.putCheckpoint(id, row)
      const runs = byReader()
      for (let k = 0; k < CONFIG.checkpointRepeats; k++) {
        for (const reader of READERS) {
          const x = await coldRead(reader, dir, id, warm)
          check(x.snapshot, `cold read with checkpoint (${reader})`)
          runs[reader].push(x.ms)
        }
      }
      if (!warmUp) for (const reader of READERS) ms.checkpoint[reader].push(median3(runs[reader]))
    }
    const refold = async () => {
      await admin.deleteCheckpoint(id)
      for (const reader of READERS) {
        const x = await coldRead(reader, dir, id, warm)
        check(x.snapshot, `full refold (${reader})`)
        if (!warmUp) ms.refold[reader].push(x.ms)
      }
    }
    const raw = async () => {
      const a = rawRead(logPath, true)
      const b = rawRead(logPath, false)
      if (!warmUp) {
        ms.raw.push(a)
        ms.rawNoCrc.push(b)
      }
    }
    // Three steps: rotate who goes first, and reverse on odd rounds.
    const steps = [withCheckpoint, refold, raw]
    await alternate(r, [...steps.slice(r % 3), ...steps.slice(0, r % 3)])
    if (warmUp) {
      log('read warm-up done')
    } else {
      const last = (xs: Record<Reader, number[]>, d: number) => READERS.map((k) => fmt(xs[k].at(-1)!, d)).join(' / ')
      log(
        `read round ${r}/${CONFIG.readRounds}: with checkpoint ${last(ms.checkpoint, 2)} ms, refold ${last(ms.refold, 0)} ms (new / ready / warm); ` +
          `raw ${fmt(ms.raw.at(-1)!, 0)} ms (${fmt(ms.rawNoCrc.at(-1)!, 0)} without crc)`,
      )
    }
  }
  await admin.putCheckpoint(id, row)
  await warm.close()
  await admin.close()

  const summaries = (xs: Record<Reader, number[]>) => ({ new: summarize(xs.new), ready: summarize(xs.ready), warm: summarize(xs.warm) })
  const rate = (xs: number[]) => summarize(xs.map((x) => (L / x) * 1000))
  const s = { checkpoint: summaries(ms.checkpoint), refold: summaries(ms.refold), raw: summarize(ms.raw), rawNoCrc: summarize(ms.rawNoCrc) }
  const eps = { refold: { new: rate(ms.refold.new), ready: rate(ms.refold.ready), warm: rate(ms.refold.warm) }, raw: rate(ms.raw), rawNoCrc: rate(ms.rawNoCrc) }
  const cold = (reader: Reader) =>
    ratio(`(b) full refold / cold read with checkpoint, ${READER_LABELS[reader]}`, s.refold[reader], s.checkpoint[reader], {
      atLeast: TARGETS.refoldVsCheckpoint,
    })
  return {
    logBytes,
    buildMs,
    checkpointBytes,
    catalogEntries,
    ms: s,
    eventsPerSecond: eps,
    ratios: {
      cold: { new: cold('new'), ready: cold('ready'), warm: cold('warm') },
      throughput: ratio('(c) full refold events/s (new adapter) / raw read+parse events/s', eps.refold.new, eps.raw, { atLeast: TARGETS.refoldVsRaw }),
      throughputNoCrc: ratio('full refold events/s / raw without crc', eps.refold.new, eps.rawNoCrc),
    },
  }
}
