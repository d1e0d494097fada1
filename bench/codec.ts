// The record codec through the public API (npm run bench:codec): what compression and encryption
// (openStore({ encryption: { key }, compression })) cost through openStore() with its Node defaults
// (worker, fs, strict), and what compression saves on disk. Variants, each a store of its own:
// plain (compression 'none', no key), deflate (the default), sealed (a key, deflate), sealedRaw
// (diagnostic: a key, compression 'none').
//   (1) size: real text (node_modules source and docs, 200 B to 200 KB, BENCH_CODEC_FILES files at
//       even steps) appended as tool/output events in batches of 100: stored bytes ÷ JSON bytes.
//   (2) durable batched appends of ~300 B messages, events/s against plain.
//   (3) a full read (view.events() on store.observe(id)), events/s against plain.
//   (4) cold open: a fresh openStore(), then store.observe(id) of the (3) session with its checkpoint
//       row, sealed against plain, with a plain-again control (the noise); for information, more
//       observes in the same store after the first.
// Ratios pair runs of the same round (A B … B A, rotating), after a warm-up round. Settings:
// BENCH_CODEC_FILES, _ROUNDS, _APPEND_ROUNDS, _BATCHES, _READ_EVENTS, _READ_REPEATS, _OPENS, _REOBSERVES.
import * as fs from 'node:fs'
import { join } from 'node:path'
import { diskBytes, loadCorpus, type CorpusFile } from './support/corpus'
import { fileURLToPath } from 'node:url'
import { BLOCK_BYTES, BLOCK_EVENTS } from '../src/storage/codec/sealed-storage'
import { COMPRESS_FROM } from '../src/storage/codec/seal'
import { nodeCompressor } from '../src/storage/codec/node'
import { CHECKPOINT_FILE, LOG_FILE, sessionDir } from '../src/backends/fs/layout'
import { openStore, type AppendResult, type EventInput, type OpenStoreOptions, type SessionEvent, type Store } from '../src/index-node'
import { messageInput, rotate, runBatched, runRounds, sourceState } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  nearOne,
  type Figure,
  type HeadlineRatio,
  median,
  pairRatios,
  summarize,
  type Summary,
  settlesWithin,
} from './stats'

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  /** (1) files of the corpus, and their bounds in bytes. */
  files: env('BENCH_CODEC_FILES', 3_000),
  minFileBytes: 200,
  maxFileBytes: 200 * 1024,
  extensions: ['.js', '.ts', '.md', '.json', '.mjs', '.cjs'],
  /** Events per append, everywhere. */
  batch: 100,
  eventBytes: 300,
  /** (2) batches per run. */
  batches: env('BENCH_CODEC_BATCHES', 100),
  /** (3) events of the session read, and opened cold in (4). */
  readEvents: env('BENCH_CODEC_READ_EVENTS', 20_000),
  /** Rounds of (3) and (4), and of (2) (its runs are short and the disk's sync time swings: more), each after one unrecorded warm-up round. */
  rounds: env('BENCH_CODEC_ROUNDS', 5),
  appendRounds: env('BENCH_CODEC_APPEND_ROUNDS', 6),
  /** (3) palindromes (A B C … C B A) of full reads per round. */
  readRepeats: env('BENCH_CODEC_READ_REPEATS', 2),
  /** (4) palindromes of cold opens per round, and observes after the first in each fresh store (information). */
  opens: env('BENCH_CODEC_OPENS', 1),
  reobserves: env('BENCH_CODEC_REOBSERVES', 5),
  /** A wait that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 60_000,
}

const TARGETS = {
  /** (1) stored bytes ÷ JSON bytes with the default (deflate, no key), at most. */
  size: 0.35,
  /** (2) sealed ÷ plain events/s, at least. */
  append: 0.7,
  /** (3) sealed ÷ plain events/s, at least. */
  read: 0.7,
  /** (4) sealed ÷ plain observe time: unchanged within noise, taken as within this of 1 (or as far as the control is, when further). */
  openTolerance: 0.1,
}

const LAYER = 'openStore() in a worker'
const KEY = globalThis.crypto.getRandomValues(new Uint8Array(32))

const VARIANTS = [
  { key: 'plain', label: "compression: 'none', no key", options: { compression: 'none' } },
  { key: 'deflate', label: "compression: 'deflate' (the default), no key", options: {} },
  { key: 'sealed', label: "encryption: { key }, compression: 'deflate'", options: { encryption: { key: KEY }, compression: 'deflate' } },
  { key: 'sealedRaw', label: "(diagnostic) encryption: { key }, compression: 'none'", options: { encryption: { key: KEY }, compression: 'none' } },
] as const satisfies readonly { key: string; label: string; options: OpenStoreOptions }[]
type VariantKey = (typeof VARIANTS)[number]['key']

const READ_ID = 'codec-read'
const CORPUS_ID = 'codec-corpus'

const T0 = performance.now()
const log = (msg: string) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0)} s] ${msg}\n`)

/** Rejects when `promise` has not settled within CONFIG.stallMs: a hang stops the benchmark instead of the machine. */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => settlesWithin(promise, what, CONFIG.stallMs)

const utf8 = (s: string) => Buffer.byteLength(s)

interface SizeRun {
  /** Sum of UTF-8 bytes of JSON.stringify of each event as read back. */
  jsonBytes: number
  stored: { total: number; byKind: Record<string, number>; files: number }
  ratio: number
  appendSeconds: number
  readSeconds: number
}

/** Writes the corpus to a new store of the variant, reads it back (checked), closes, measures the folder. */
async function sizeRun(dir: string, options: OpenStoreOptions, corpus: readonly CorpusFile[]): Promise<{ run: SizeRun; events: SessionEvent[] }> {
  const store = await within(openStore({ ...options, dir }), 'openStore')
  let events: SessionEvent[] = []
  let appendSeconds: number
  let readSeconds: number
  try {
    const session = await store.createSession({ id: CORPUS_ID })
    const t0 = performance.now()
    let last: AppendResult | undefined
    for (let i = 0; i < corpus.length; i += CONFIG.batch) {
      const batch: EventInput[] = corpus.slice(i, i + CONFIG.batch).map((f) => ({ type: 'tool/output', data: { path: f.path, text: f.text } }))
      last = await within(session.append(batch), 'a corpus append')
    }
    appendSeconds = (performance.now() - t0) / 1000
    if (last?.lastSeq !== corpus.length - 1) throw new Error(`corpus: last seq ${last?.lastSeq}, expected ${corpus.length - 1}`)
    await within(session.close(), 'closing the corpus session')
    const view = await within(store.observe(CORPUS_ID), 'observe')
    const t1 = performance.now()
    for await (const e of view.events()) events.push(e)
    readSeconds = (performance.now() - t1) / 1000
    await view.close()
  } finally {
    await store.close()
  }
  if (events.length !== corpus.length) throw new Error(`corpus read back: ${events.length} events, expected ${corpus.length}`)
  events.forEach((e, i) => {
    const d = e.data as { path?: unknown; text?: unknown } | null
    if (e.seq !== i || e.type !== 'tool/output' || d?.path !== corpus[i]!.path || d?.text !== corpus[i]!.text)
      throw new Error(`corpus read back: event ${i} differs from the file it was made of`)
  })
  const jsonBytes = events.reduce((n, e) => n + utf8(JSON.stringify(e)), 0)
  const stored = diskBytes(dir)
  events = options.compression === 'none' && !options.encryption ? events : []
  return { run: { jsonBytes, stored, ratio: stored.total / jsonBytes, appendSeconds, readSeconds }, events }
}

/**
 * The floor of what the codec stores for `events`: the frames it cuts (per append of CONFIG.batch)
 * deflated with node:zlib in this thread, without the 2-byte unit head, base64, or the records
 * that carry the frames and point at them.
 */
function deflateFloor(events: readonly SessionEvent[]): { frames: number; deflated: number; base64: number } {
  let frames = 0
  let deflated = 0
  let base64 = 0
  for (let b = 0; b < events.length; b += CONFIG.batch) {
    const jsons = events.slice(b, b + CONFIG.batch).map((e) => JSON.stringify(e))
    for (let i = 0; i < jsons.length; ) {
      let j = i
      let bytes = 0
      while (j < jsons.length && j - i < BLOCK_EVENTS && (j === i || bytes + jsons[j]!.length <= BLOCK_BYTES)) bytes += jsons[j++]!.length + 1
      const z = nodeCompressor.deflate(Buffer.from(jsons.slice(i, j).join('\n'))).length
      frames++
      deflated += z
      base64 += 4 * Math.ceil((2 + z) / 3)
      i = j
    }
  }
  return { frames, deflated, base64 }
}

// ---- (2) batched appends, (3) reads, (4) cold opens ------------------------------------------

/** The (3) session: CONFIG.readEvents events in batches, then closed (its checkpoint row written). */
async function writeReadSession(store: Store, input: EventInput): Promise<void> {
  const session = await store.createSession({ id: READ_ID })
  for (let pos = 0; pos < CONFIG.readEvents; pos += CONFIG.batch) {
    await within(session.append(Array.from({ length: Math.min(CONFIG.batch, CONFIG.readEvents - pos) }, () => input)), 'an append')
  }
  await within(session.close(), 'closing a session')
}

/** A full read of the (3) session through store.observe(id): events/s of the iteration. */
async function runRead(store: Store): Promise<number> {
  const view = await within(store.observe(READ_ID), 'observe')
  let n = 0
  let lastSeq = -1
  const t0 = performance.now()
  for await (const e of view.events()) {
    n++
    lastSeq = e.seq
  }
  const ms = performance.now() - t0
  await view.close()
  if (n !== CONFIG.readEvents || lastSeq !== CONFIG.readEvents - 1) throw new Error(`read: ${n} events to seq ${lastSeq}, expected ${CONFIG.readEvents}`)
  return (n / ms) * 1000
}

/** store.observe(id) of the (3) session, then the view closed (untimed): ms. */
async function observeOnce(store: Store, what: string): Promise<number> {
  const t0 = performance.now()
  const view = await within(store.observe(READ_ID), what)
  const ms = performance.now() - t0
  if (view.projections.asOfSeq !== CONFIG.readEvents - 1) throw new Error(`${what}: asOfSeq ${view.projections.asOfSeq}, expected ${CONFIG.readEvents - 1}`)
  await view.close()
  return ms
}

/** A fresh store on `dir`: ms of openStore, of the first observe, and the median of the observes after it. */
async function coldOpen(dir: string, options: OpenStoreOptions): Promise<{ open: number; observe: number; again: number }> {
  const t0 = performance.now()
  const store = await within(openStore({ ...options, dir }), 'openStore')
  const open = performance.now() - t0
  try {
    const observe = await observeOnce(store, 'a cold observe')
    const again: number[] = []
    for (let i = 0; i < CONFIG.reobserves; i++) again.push(await observeOnce(store, 'an observe after the first'))
    return { open, observe, again: median(again) }
  } finally {
    await store.close()
  }
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  checkSettings(CONFIG)
  const started = performance.now()
  const source = sourceState()
  const repo = fileURLToPath(new URL('..', import.meta.url))
  const { root, cleanup } = await benchRoot('sessionfold-bench-codec-')
  const stores: Store[] = []
  const dirOf = (part: string, key: string) => join(root, `${part}-${key}`)
  try {
    // ---- (1) size ----
    const t0 = performance.now()
    const corpus = loadCorpus(repo, CONFIG.files, CONFIG)
    const corpusBytes = corpus.files.reduce((n, f) => n + utf8(f.text), 0)
    log(
      `corpus: ${fmt(corpus.files.length, 0)} of ${fmt(corpus.candidates, 0)} files under node_modules, ${fmt(corpusBytes / 2 ** 20, 1)} MiB of text, loaded in ${fmt((performance.now() - t0) / 1000, 1)} s (digest ${corpus.digest})`,
    )
    const sizes = new Map<VariantKey, SizeRun>()
    let plainEvents: SessionEvent[] = []
    for (const v of VARIANTS) {
      const { run, events } = await sizeRun(dirOf('size', v.key), v.options, corpus.files)
      if (events.length > 0) plainEvents = events
      sizes.set(v.key, run)
      log(
        `size ${v.key}: ${fmt(run.stored.total / 2 ** 20, 2)} MiB stored of ${fmt(run.jsonBytes / 2 ** 20, 2)} MiB of JSON (${fmt(run.ratio * 100, 1)} %), appended in ${fmt(run.appendSeconds, 2)} s, read in ${fmt(run.readSeconds, 2)} s`,
      )
      fs.rmSync(dirOf('size', v.key), { recursive: true, force: true })
    }
    const plainSize = sizes.get('plain')!
    const logRecords = plainEvents.reduce((n, e) => n + 9 + utf8(JSON.stringify(e)), 0)
    const floor = deflateFloor(plainEvents)
    plainEvents = []

    // ---- (2) batched appends ----
    for (const v of VARIANTS) stores.push(await within(openStore({ ...v.options, dir: dirOf('store', v.key) }), 'openStore'))
    const storeOf = (key: VariantKey) => stores[VARIANTS.findIndex((v) => v.key === key)]!
    const input = messageInput(CONFIG.eventBytes)
    const batches = Array.from({ length: CONFIG.batches }, () => Array.from({ length: CONFIG.batch }, () => input))
    const appendEvents = CONFIG.batches * CONFIG.batch
    const appendRuns = await runRounds(
      VARIANTS.map((v) => ({ key: v.key, run: () => runBatched(storeOf(v.key), batches, CONFIG.stallMs) })),
      CONFIG.appendRounds,
      appendEvents,
      log,
      fmt,
    )
    const aS = new Map(VARIANTS.map((v) => [v.key, summarize(appendRuns.get(v.key)!)]))

    // ---- (3) full reads ----
    const writeStart = performance.now()
    for (const v of VARIANTS) await writeReadSession(storeOf(v.key), input)
    log(`wrote a ${fmt(CONFIG.readEvents, 0)}-event session in each of ${VARIANTS.length} stores in ${fmt((performance.now() - writeStart) / 1000, 1)} s`)
    const readRuns = new Map<VariantKey, number[]>(VARIANTS.map((v) => [v.key, []]))
    for (let r = 0; r <= CONFIG.rounds; r++) {
      const order = rotate(VARIANTS, r)
      const ms = new Map<VariantKey, number>(VARIANTS.map((v) => [v.key, 0]))
      for (let k = 0; k < CONFIG.readRepeats; k++) {
        for (const v of [...order, ...[...order].reverse()]) ms.set(v.key, ms.get(v.key)! + (CONFIG.readEvents / (await runRead(storeOf(v.key)))) * 1000)
      }
      const line: string[] = []
      for (const v of VARIANTS) {
        const rate = ((2 * CONFIG.readRepeats * CONFIG.readEvents) / ms.get(v.key)!) * 1000
        if (r > 0) readRuns.get(v.key)!.push(rate)
        line.push(`${v.key} ${fmt(rate, 0)}`)
      }
      log(`read ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (events/s): ${line.join(', ')}`)
    }
    const rS = new Map(VARIANTS.map((v) => [v.key, summarize(readRuns.get(v.key)!)]))
    for (const s of stores.splice(0)) await s.close()
    const readDisk = new Map(
      VARIANTS.map((v) => {
        const folder = sessionDir(dirOf('store', v.key), READ_ID)
        if (!fs.existsSync(join(folder, CHECKPOINT_FILE))) throw new Error(`${v.key}: the closed session has no ${CHECKPOINT_FILE}`)
        return [v.key, { logBytes: fs.statSync(join(folder, LOG_FILE)).size, checkpointBytes: fs.statSync(join(folder, CHECKPOINT_FILE)).size }]
      }),
    )

    // ---- (4) cold opens ----
    // deflate and sealedRaw are left out: each cold open starts a worker (about two seconds), and sealedRaw's rows open as sealed's do.
    const OPENS = [
      ...VARIANTS.filter((v) => v.key === 'plain' || v.key === 'sealed').map((v) => ({
        key: v.key as string,
        label: v.label as string,
        dir: dirOf('store', v.key),
        options: v.options as OpenStoreOptions,
      })),
      { key: 'control', label: '(control) the plain store again', dir: dirOf('store', 'plain'), options: VARIANTS[0].options as OpenStoreOptions },
    ]
    const observeRuns = new Map<string, number[]>(OPENS.map((x) => [x.key, []]))
    const openRuns = new Map<string, number[]>(OPENS.map((x) => [x.key, []]))
    const againRuns = new Map<string, number[]>(OPENS.map((x) => [x.key, []]))
    for (let r = 0; r <= CONFIG.rounds; r++) {
      const order = rotate(OPENS, r)
      const obs = new Map<string, number[]>(OPENS.map((x) => [x.key, []]))
      const opn = new Map<string, number[]>(OPENS.map((x) => [x.key, []]))
      const agn = new Map<string, number[]>(OPENS.map((x) => [x.key, []]))
      for (let k = 0; k < CONFIG.opens; k++) {
        for (const x of [...order, ...[...order].reverse()]) {
          const got = await coldOpen(x.dir, x.options)
          obs.get(x.key)!.push(got.observe)
          opn.get(x.key)!.push(got.open)
          agn.get(x.key)!.push(got.again)
        }
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
      const line: string[] = []
      for (const x of OPENS) {
        if (r > 0) {
          observeRuns.get(x.key)!.push(mean(obs.get(x.key)!))
          openRuns.get(x.key)!.push(mean(opn.get(x.key)!))
          againRuns.get(x.key)!.push(mean(agn.get(x.key)!))
        }
        line.push(`${x.key} ${fmt(mean(obs.get(x.key)!), 2)}`)
      }
      log(`cold observe ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.rounds}`} (ms): ${line.join(', ')}`)
    }
    const oS = new Map(OPENS.map((x) => [x.key, summarize(observeRuns.get(x.key)!)]))
    const openS = new Map(OPENS.map((x) => [x.key, summarize(openRuns.get(x.key)!)]))
    const againS = new Map(OPENS.map((x) => [x.key, summarize(againRuns.get(x.key)!)]))

    // ---- report ----
    const once = (id: string, figure: string, what: string, value: number, target?: number): HeadlineRatio => {
      const pass = target === undefined ? undefined : value <= target
      return {
        id,
        figure,
        layer: LAYER,
        ratio: what,
        perRound: summarize([value]),
        ofMedians: value,
        target: target === undefined ? '' : `≤ ${target}`,
        pass,
        result: pass === undefined ? '' : pass ? 'PASS' : 'MISS',
      }
    }
    const near = (id: string, figure: string, what: string, a: Summary, b: Summary, judge?: { tolerance: number; noise: Summary }): HeadlineRatio =>
      nearOne(headlineRatio(id, figure, LAYER, what, a, b), judge)
    const control = summarize(pairRatios(oS.get('control')!.samples, oS.get('plain')!.samples))
    const corpusFigure = `${fmt(CONFIG.files, 0)} node_modules text files as tool/output events (batches of ${CONFIG.batch})`
    const appendFigure = `durable batched appends (${CONFIG.batches} × ${CONFIG.batch} events of ~${CONFIG.eventBytes} B), events/s`
    const readFigure = `full read of a ${fmt(CONFIG.readEvents, 0)}-event session (view.events() on store.observe(id)), events/s`
    const openFigure = `cold store.observe(id) of a ${fmt(CONFIG.readEvents, 0)}-event session with its checkpoint row, in a freshly opened store`
    const headline: HeadlineRatio[] = [
      once(
        'size-deflate',
        `stored size, ${corpusFigure}: compression 'deflate' (the default), no key`,
        'stored bytes ÷ JSON bytes',
        sizes.get('deflate')!.ratio,
        TARGETS.size,
      ),
      once('size-sealed', `stored size, the same: encryption + deflate`, 'stored bytes ÷ JSON bytes', sizes.get('sealed')!.ratio),
      once('size-none', `stored size, the same: compression 'none', no key (reference)`, 'stored bytes ÷ JSON bytes', plainSize.ratio),
      once('size-sealed-raw', `stored size, the same: encryption, compression 'none' (diagnostic)`, 'stored bytes ÷ JSON bytes', sizes.get('sealedRaw')!.ratio),
      headlineRatio(
        'append-sealed',
        `${appendFigure}: encryption + deflate vs neither`,
        LAYER,
        'sealed events/s ÷ plain events/s',
        aS.get('sealed')!,
        aS.get('plain')!,
        { atLeast: TARGETS.append },
      ),
      headlineRatio(
        'append-deflate',
        `${appendFigure}: deflate only vs neither`,
        LAYER,
        'deflate events/s ÷ plain events/s',
        aS.get('deflate')!,
        aS.get('plain')!,
      ),
      headlineRatio(
        'append-sealed-raw',
        `${appendFigure}: encryption only (diagnostic) vs neither`,
        LAYER,
        'sealedRaw events/s ÷ plain events/s',
        aS.get('sealedRaw')!,
        aS.get('plain')!,
      ),
      headlineRatio(
        'read-sealed',
        `${readFigure}: encryption + deflate vs neither`,
        LAYER,
        'sealed events/s ÷ plain events/s',
        rS.get('sealed')!,
        rS.get('plain')!,
        { atLeast: TARGETS.read },
      ),
      headlineRatio('read-deflate', `${readFigure}: deflate only vs neither`, LAYER, 'deflate events/s ÷ plain events/s', rS.get('deflate')!, rS.get('plain')!),
      headlineRatio(
        'read-sealed-raw',
        `${readFigure}: encryption only (diagnostic) vs neither`,
        LAYER,
        'sealedRaw events/s ÷ plain events/s',
        rS.get('sealedRaw')!,
        rS.get('plain')!,
      ),
      near('open-sealed', `${openFigure}: encryption + deflate vs neither`, 'time sealed ÷ time plain', oS.get('sealed')!, oS.get('plain')!, {
        tolerance: TARGETS.openTolerance,
        noise: control,
      }),
      near(
        'open-control',
        `${openFigure}: the plain store again vs itself (control: the noise)`,
        'time plain ÷ time plain',
        oS.get('control')!,
        oS.get('plain')!,
      ),
      near(
        'open-again-sealed',
        `(information) store.observe(id) again in the same fresh store, ${CONFIG.reobserves} times after the first (median): encryption + deflate vs neither`,
        'time sealed ÷ time plain',
        againS.get('sealed')!,
        againS.get('plain')!,
      ),
    ]

    finishBench(
      'codec',
      'sessionfold record codec through openStore() (worker, fs, strict): compression and encryption',
      [
        ...VARIANTS.map((v): Figure => [`stored ÷ JSON bytes, ${v.label}`, summarize([sizes.get(v.key)!.ratio]), '', 3]),
        ...VARIANTS.map((v): Figure => [`batched appends, ${v.label}`, aS.get(v.key)!, 'events/s', 0]),
        ...VARIANTS.map((v): Figure => [`full read, ${v.label}`, rS.get(v.key)!, 'events/s', 0]),
        ...OPENS.map((x): Figure => [`cold observe in a fresh store, ${x.label}`, oS.get(x.key)!, 'ms', 2]),
      ],
      headline,
      {
        source,
        config: CONFIG,
        targets: TARGETS,
        layer: LAYER,
        variants: VARIANTS.map((v) => ({ key: v.key, label: v.label })),
        codec: { frameEvents: BLOCK_EVENTS, frameBytes: BLOCK_BYTES, compressFrom: COMPRESS_FROM },
        headline,
        size: {
          corpus: { files: corpus.files.length, candidates: corpus.candidates, textBytes: corpusBytes, digest: corpus.digest },
          variants: Object.fromEntries(sizes),
          plainLogRecordBytes: logRecords,
          deflateFloor: floor,
        },
        append: { unit: 'events/s', events: appendEvents, ...Object.fromEntries(aS) },
        read: { unit: 'events/s', events: CONFIG.readEvents, disk: Object.fromEntries(readDisk), ...Object.fromEntries(rS) },
        coldOpen: { unit: 'ms', observe: Object.fromEntries(oS), again: Object.fromEntries(againS), openStore: Object.fromEntries(openS), control },
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
  } finally {
    for (const s of stores.splice(0)) await s.close().catch((err) => log(`closing a store: ${err}`))
    cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
