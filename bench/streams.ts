// Durable Streams against the reference server (npm run bench:streams): sessionfold's
// createStreamsHandler over an fs store (openStore's defaults: worker, strict) against
// @durable-streams/server's DurableStreamTestServer with its file-backed store (dataDir in a
// temp folder; it fsyncs every append too), each in a child process of its own on 127.0.0.1
// (bench/support/streams-server.ts), the clients in this process:
//   (1) JSON appends: 50 idempotent producers at once (the official client's IdempotentProducer,
//       each message appended and flushed: one message per POST), all on one stream and each on
//       its own stream; events/s.
//   (2) catch-up read of a 100,000-message JSON stream (filled first with POSTs of 100 messages)
//       from offset -1, following Stream-Next-Offset until Stream-Up-To-Date; messages/s. With
//       Accept-Encoding: identity (the same bytes from both; the judged figure) and with fetch's
//       default `gzip, deflate` (the reference compresses then; sessionfold does not).
//   (3) append → SSE reader: a reader on ?offset=now&live=sse, then one message POSTed at a time;
//       ms from the POST until the reader has its `event: data`; p50 and p99.
//   (4) the official conformance suite (@durable-streams/server-conformance-tests) against the
//       reference server, sessionfold over fs and over PostgreSQL (a throwaway cluster, when its
//       binaries are installed): passed, failed, skipped (bench/streams-conformance.bench-suite.ts
//       through vitest, a process each).
// Ratios are sessionfold ÷ reference, per round (each round runs both, the order alternating),
// after an unrecorded warm-up round. Settings: BENCH_STREAMS_PRODUCERS, _PRODUCER_MESSAGES,
// _APPEND_ROUNDS, _WARM_UP_MESSAGES, _CATCHUP, _FILL_BATCH, _READ_ROUNDS, _SSE_BLOCKS, _SSE_SAMPLES, _SSE_GAP_MS,
// _CONFORMANCE (0: skip (4)), _PG (0: no PostgreSQL run in (4)), _PARTS (e.g. '1,3'), _PROF (a folder: the
// sessionfold fs server's process writes its CPU profiles there, one a thread, with node's --cpu-prof).
import { spawn } from 'node:child_process'
import * as fs from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DurableStream, IdempotentProducer } from '@durable-streams/client'
import { postgresBin } from '../test/support/postgres'
import { sourceState } from './common'
import {
  benchRoot,
  checkSettings,
  env,
  finishBench,
  fmt,
  headlineRatio,
  median,
  settlesWithin,
  summarize,
  type Figure,
  type HeadlineRatio,
  type Summary,
} from './stats'
import { startStreamsServer, type StreamsServer, type StreamsServerKind } from './support/streams-server'
import { startHeadProber } from './support/head-prober'

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

// ---- configuration ------------------------------------------------------------------------

const CONFIG = {
  /** (1) producers at once, messages each (one POST each), rounds after one unrecorded warm-up. */
  producers: env('BENCH_STREAMS_PRODUCERS', 50),
  producerMessages: env('BENCH_STREAMS_PRODUCER_MESSAGES', 50),
  appendRounds: env('BENCH_STREAMS_APPEND_ROUNDS', 4),
  /** (1) BENCH_STREAMS_SHAPES=each: only the producers each on its own stream (a quicker loop). */
  shapes: (process.env.BENCH_STREAMS_SHAPES || 'one,each').split(',') as ('one' | 'each')[],
  /** (1) messages each producer appends in the warm-up round (unrecorded: it warms the servers and connections). */
  warmUpMessages: env('BENCH_STREAMS_WARM_UP_MESSAGES', 10),
  /** (1) on one stream: ms between HEADs of it while the producers append (a reader's wait under writes). */
  headEveryMs: 50,
  /** (2) messages in the stream read, messages a POST while filling it (untimed), POSTs at once, rounds after a warm-up. */
  catchUp: env('BENCH_STREAMS_CATCHUP', 100_000),
  fillBatch: env('BENCH_STREAMS_FILL_BATCH', 100),
  fillWriters: 4,
  readRounds: env('BENCH_STREAMS_READ_ROUNDS', 5),
  /** (3) blocks (each a new reader, the servers alternating), recorded samples a block, unrecorded ones before them, ms between samples. */
  sseBlocks: env('BENCH_STREAMS_SSE_BLOCKS', 4),
  // 250 a block: the p99 of all samples then rests on their 10 slowest, not on 2 (with 50 a
  // block, one disk stall of this shared machine decided it: 0.89 to 1.39 between runs).
  sseSamples: env('BENCH_STREAMS_SSE_SAMPLES', 250),
  sseWarmUp: 10,
  sseGapMs: env('BENCH_STREAMS_SSE_GAP_MS', 20),
  /** (4) BENCH_STREAMS_CONFORMANCE=0: no conformance runs; BENCH_STREAMS_PG=0: none against PostgreSQL. */
  conformance: env('BENCH_STREAMS_CONFORMANCE', 1) !== 0,
  pg: env('BENCH_STREAMS_PG', 1) !== 0,
  parts: process.env.BENCH_STREAMS_PARTS || '1,2,3,4',
  /** How long a long-poll (and the reference's idle SSE) waits at the tail: longer than any block. */
  longPollMs: 30_000,
  /** A wait that makes no progress for this long is a hang: the benchmark stops. */
  stallMs: 120_000,
  /** A conformance run longer than this is stopped (its counts are then missing). */
  conformanceTimeoutMs: 600_000,
}

const TARGETS = {
  /** (1) sessionfold events/s ÷ reference events/s, at least. */
  appends: 1,
  /** (2) sessionfold messages/s ÷ reference messages/s, at least. */
  catchUp: 1,
  /** (3) sessionfold ms ÷ reference ms (p50, p99), at most. */
  sse: 1,
}

const SERVERS = ['sessionfold', 'reference'] as const
type Side = (typeof SERVERS)[number]
const LABEL: Record<StreamsServerKind, string> = {
  sessionfold: 'sessionfold (createStreamsHandler, fs store)',
  'sessionfold-postgres': 'sessionfold (createStreamsHandler, PostgreSQL store)',
  reference: 'reference (@durable-streams/server, file-backed)',
}
const LAYER = 'createStreamsHandler, fs (child process) vs @durable-streams/server, file-backed (child process)'

const REPO = fileURLToPath(new URL('..', import.meta.url))
const log = (s: string) => process.stderr.write(`${s}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const bounded = <T>(what: string, p: Promise<T>): Promise<T> => settlesWithin(p, what, CONFIG.stallMs)
const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)
/** Both servers, sessionfold first on even rounds, the reference first on odd ones. */
const order = (round: number): Side[] => (round % 2 === 0 ? [...SERVERS] : [...SERVERS].reverse())

/** A small JSON message (~90 B). */
const TEXT = 'the agent read the file and proposed a patch'
const message = (p: number, n: number, r = 0) => ({ kind: 'tick', r, p, n, text: TEXT })

// ---- HTTP helpers -------------------------------------------------------------------------

async function createStream(url: string): Promise<void> {
  const res = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' } })
  await res.arrayBuffer()
  if (res.status !== 201) throw new Error(`PUT ${url}: ${res.status}`)
}

interface CatchUp {
  /** The messages read (when kept), and how many. */
  messages: unknown[]
  count: number
  requests: number
  /** Bytes of the bodies (decoded), and whether the server compressed them. */
  bodyBytes: number
  compressed: boolean
  ms: number
}

/** Reads the stream from offset -1, following Stream-Next-Offset until Stream-Up-To-Date; every message parsed. */
async function catchUp(url: string, acceptEncoding: string, keep = true): Promise<CatchUp> {
  const messages: unknown[] = []
  let count = 0
  let offset = '-1'
  let requests = 0
  let bodyBytes = 0
  let compressed = false
  const t0 = performance.now()
  for (;;) {
    const res = await fetch(`${url}?offset=${encodeURIComponent(offset)}`, { headers: { 'accept-encoding': acceptEncoding } })
    requests++
    if (res.status !== 200) throw new Error(`GET ${url} at ${offset}: ${res.status} ${await res.text()}`)
    if (res.headers.get('content-encoding') !== null) compressed = true
    const text = await res.text()
    bodyBytes += Buffer.byteLength(text)
    const page = JSON.parse(text) as unknown[]
    count += page.length
    if (keep) for (const m of page) messages.push(m)
    const next = res.headers.get('stream-next-offset')
    if (next === null) throw new Error(`GET ${url}: no Stream-Next-Offset`)
    offset = next
    if (res.headers.get('stream-up-to-date') === 'true') break
    if (requests > 100_000) throw new Error(`GET ${url}: no Stream-Up-To-Date after ${requests} requests`)
  }
  return { messages, count, requests, bodyBytes, compressed, ms: performance.now() - t0 }
}

// ---- (1) appends by idempotent producers --------------------------------------------------

type Shape = 'one' | 'each'
const SHAPE: Record<Shape, string> = { one: 'all on one stream', each: 'each on its own stream' }

interface AppendRun {
  eventsPerSecond: number
  /** CPU µs of the server process (all its threads) per event. */
  serverCpuUsPerEvent: number
  /** On one stream: ms of each HEAD of it made while the producers appended. */
  heads: number[]
}

/** The streams of a shape: made by the first run, written by every round after it (new producers each round). */
const appendStreams = (shape: Shape) => (shape === 'one' ? ['append-one'] : Array.from({ length: CONFIG.producers }, (_, p) => `append-each-${p}`))

/**
 * One run (round `round`): `producers` new producers each appending and flushing `producerMessages`
 * messages, then every stream read back and checked. The streams stay from round to round: the
 * reference's file-backed store keeps 100 files open, and an append to a stream whose file it
 * closed meanwhile fails (404), so the run uses 52 streams in all.
 */
async function appendRun(server: StreamsServer, shape: Shape, round: number): Promise<AppendRun> {
  const P = CONFIG.producers
  const M = round === 0 ? CONFIG.warmUpMessages : CONFIG.producerMessages
  const ids = appendStreams(shape)
  if (round === 0) for (const id of ids) await createStream(server.stream(id))
  const handles = ids.map((id) => new DurableStream({ url: server.stream(id), contentType: 'application/json' }))
  const errors: Error[] = []
  const producers = Array.from(
    { length: P },
    (_, p) => new IdempotentProducer(handles[shape === 'one' ? 0 : p]!, `producer-r${round}-${p}`, { onError: (err) => void errors.push(err) }),
  )
  const cpu0 = await server.cpuUs()
  // Its HEADs come from a process of their own, so that they wait on the server, not behind this process's producers.
  const prober = shape === 'one' ? await startHeadProber(server.stream(ids[0]!), CONFIG.headEveryMs) : undefined
  const t0 = performance.now()
  await bounded(
    `${server.kind}: ${P} producers`,
    Promise.all(
      producers.map(async (producer, p) => {
        for (let n = 0; n < M; n++) {
          producer.append(JSON.stringify(message(p, n, round)))
          await producer.flush()
        }
      }),
    ),
  )
  const ms = performance.now() - t0
  const headMs = prober ? await bounded(`${server.kind}: the last HEAD`, prober.stop()) : []
  const cpu = (await server.cpuUs()) - cpu0
  await Promise.all(producers.map((p) => p.detach()))
  if (errors.length > 0) throw new Error(`${server.kind}: ${errors.length} producer errors, the first: ${errors[0]!.message}`)
  // Untimed: each producer's messages are there, once each and in its order.
  const next = new Map<number, number>()
  for (const id of ids) {
    for (const m of (await catchUp(server.stream(id), 'identity')).messages as { r: number; p: number; n: number }[]) {
      if (m.r !== round) continue
      const expected = next.get(m.p) ?? 0
      if (m.n !== expected) throw new Error(`${server.kind} ${id}: producer ${m.p} message ${m.n} where ${expected} was due`)
      next.set(m.p, expected + 1)
    }
  }
  for (let p = 0; p < P; p++) if (next.get(p) !== M) throw new Error(`${server.kind}: producer ${p} has ${next.get(p) ?? 0} messages, not ${M}`)
  return { eventsPerSecond: ((P * M) / ms) * 1000, serverCpuUsPerEvent: cpu / (P * M), heads: headMs }
}

interface AppendPart {
  shapes: {
    shape: Shape
    label: string
    rate: Record<Side, Summary>
    cpuUsPerEvent: Record<Side, Summary>
    /** On one stream: the p50 of each round's HEADs while the producers appended (ms). */
    headP50: Record<Side, Summary>
    /** All those HEADs: p50, p99, how many. */
    heads: Record<Side, { p50: number; p99: number; n: number }>
  }[]
}

async function partAppends(servers: Record<Side, StreamsServer>): Promise<AppendPart> {
  const out: AppendPart = { shapes: [] }
  const events = CONFIG.producers * CONFIG.producerMessages
  for (const shape of CONFIG.shapes) {
    const rate: Record<Side, number[]> = { sessionfold: [], reference: [] }
    const cpu: Record<Side, number[]> = { sessionfold: [], reference: [] }
    const headP50: Record<Side, number[]> = { sessionfold: [], reference: [] }
    const heads: Record<Side, number[]> = { sessionfold: [], reference: [] }
    for (let r = 0; r <= CONFIG.appendRounds; r++) {
      const line: string[] = []
      for (const side of order(r)) {
        const run = await appendRun(servers[side], shape, r)
        if (r > 0) {
          rate[side].push(run.eventsPerSecond)
          cpu[side].push(run.serverCpuUsPerEvent)
          if (run.heads.length > 0) headP50[side].push(median(run.heads))
          heads[side].push(...run.heads)
        }
        const head = run.heads.length > 0 ? `, a HEAD meanwhile p50 ${fmt(median(run.heads), 1)} ms` : ''
        line.push(`${side} ${fmt(run.eventsPerSecond, 0)} events/s (server ${fmt(run.serverCpuUsPerEvent, 0)} µs CPU an event${head})`)
      }
      const what = r === 0 ? `${CONFIG.producers * CONFIG.warmUpMessages} messages, warm-up` : `${events} messages, round ${r}/${CONFIG.appendRounds}`
      log(`(1) ${CONFIG.producers} producers ${SHAPE[shape]}, ${what}: ${line.join(', ')}`)
    }
    out.shapes.push({
      shape,
      label: SHAPE[shape],
      rate: { sessionfold: summarize(rate.sessionfold), reference: summarize(rate.reference) },
      cpuUsPerEvent: { sessionfold: summarize(cpu.sessionfold), reference: summarize(cpu.reference) },
      headP50: { sessionfold: summarize(headP50.sessionfold), reference: summarize(headP50.reference) },
      heads: {
        sessionfold: { p50: median(heads.sessionfold), p99: quantile(sorted(heads.sessionfold), 0.99), n: heads.sessionfold.length },
        reference: { p50: median(heads.reference), p99: quantile(sorted(heads.reference), 0.99), n: heads.reference.length },
      },
    })
  }
  return out
}

// ---- (2) catch-up read --------------------------------------------------------------------

const ENCODINGS = [
  { key: 'identity', header: 'identity', label: 'Accept-Encoding: identity' },
  { key: 'gzip', header: 'gzip, deflate', label: "Accept-Encoding: gzip, deflate (fetch's default)" },
] as const

interface ReadPart {
  fill: Record<Side, { eventsPerSecond: number; seconds: number }>
  byEncoding: {
    key: string
    label: string
    rate: Record<Side, Summary>
    requests: Record<Side, number>
    bodyBytes: Record<Side, number>
    compressed: Record<Side, boolean>
    cpuMsPerRead: Record<Side, Summary>
  }[]
}

/** Fills stream `id` with CONFIG.catchUp messages, POSTs of fillBatch at fillWriters at once; events/s. */
async function fill(server: StreamsServer, id: string): Promise<{ eventsPerSecond: number; seconds: number }> {
  await createStream(server.stream(id))
  const batches = Math.ceil(CONFIG.catchUp / CONFIG.fillBatch)
  const t0 = performance.now()
  await bounded(
    `${server.kind}: filling ${id}`,
    Promise.all(
      Array.from({ length: CONFIG.fillWriters }, async (_, w) => {
        for (let b = w; b < batches; b += CONFIG.fillWriters) {
          const first = b * CONFIG.fillBatch
          const body = JSON.stringify(Array.from({ length: Math.min(CONFIG.fillBatch, CONFIG.catchUp - first) }, (_, k) => message(w, first + k)))
          const res = await fetch(server.stream(id), { method: 'POST', headers: { 'content-type': 'application/json' }, body })
          await res.arrayBuffer()
          if (res.status !== 204 && res.status !== 200) throw new Error(`${server.kind}: POST while filling: ${res.status}`)
        }
      }),
    ),
  )
  const ms = performance.now() - t0
  return { eventsPerSecond: (CONFIG.catchUp / ms) * 1000, seconds: ms / 1000 }
}

async function partCatchUp(servers: Record<Side, StreamsServer>): Promise<ReadPart> {
  const id = 'catch-up'
  const filled = {} as ReadPart['fill']
  for (const side of SERVERS) {
    filled[side] = await fill(servers[side], id)
    log(
      `(2) ${side}: filled with ${fmt(CONFIG.catchUp, 0)} messages in ${fmt(filled[side].seconds, 1)} s (${fmt(filled[side].eventsPerSecond, 0)} messages/s, POSTs of ${CONFIG.fillBatch}, ${CONFIG.fillWriters} at once)`,
    )
  }
  // Untimed: every message there, each once.
  for (const side of SERVERS) {
    const all = (await catchUp(servers[side].stream(id), 'identity')).messages as { n: number }[]
    const seen = new Set(all.map((m) => m.n))
    if (all.length !== CONFIG.catchUp || seen.size !== CONFIG.catchUp)
      throw new Error(`${side}: read ${all.length} messages (${seen.size} distinct), not ${CONFIG.catchUp}`)
  }
  const out: ReadPart = { fill: filled, byEncoding: [] }
  const rate = new Map<string, Record<Side, number[]>>(ENCODINGS.map((e) => [e.key, { sessionfold: [], reference: [] }]))
  const cpu = new Map<string, Record<Side, number[]>>(ENCODINGS.map((e) => [e.key, { sessionfold: [], reference: [] }]))
  const shape = new Map<string, Record<Side, { requests: number; bodyBytes: number; compressed: boolean }>>()
  for (let r = 0; r <= CONFIG.readRounds; r++) {
    const line: string[] = []
    for (const enc of ENCODINGS) {
      for (const side of order(r)) {
        const cpu0 = await servers[side].cpuUs()
        const read = await bounded(`${side}: catch-up read`, catchUp(servers[side].stream(id), enc.header, false))
        const cpuMs = ((await servers[side].cpuUs()) - cpu0) / 1000
        if (read.count !== CONFIG.catchUp) throw new Error(`${side}: read ${read.count} messages, not ${CONFIG.catchUp}`)
        const perSecond = (CONFIG.catchUp / read.ms) * 1000
        if (r > 0) {
          rate.get(enc.key)![side].push(perSecond)
          cpu.get(enc.key)![side].push(cpuMs)
        }
        shape.set(enc.key, { ...shape.get(enc.key)!, [side]: { requests: read.requests, bodyBytes: read.bodyBytes, compressed: read.compressed } })
        line.push(
          `${enc.key} ${side} ${fmt(perSecond, 0)}/s (${plural(read.requests, 'request')}${read.compressed ? ', compressed' : ''}, server ${fmt(cpuMs, 0)} ms CPU)`,
        )
      }
    }
    log(`(2) catch-up read of ${fmt(CONFIG.catchUp, 0)} messages, ${r === 0 ? 'warm-up' : `round ${r}/${CONFIG.readRounds}`}: ${line.join(', ')}`)
  }
  for (const enc of ENCODINGS) {
    const s = shape.get(enc.key)!
    out.byEncoding.push({
      key: enc.key,
      label: enc.label,
      rate: { sessionfold: summarize(rate.get(enc.key)!.sessionfold), reference: summarize(rate.get(enc.key)!.reference) },
      requests: { sessionfold: s.sessionfold.requests, reference: s.reference.requests },
      bodyBytes: { sessionfold: s.sessionfold.bodyBytes, reference: s.reference.bodyBytes },
      compressed: { sessionfold: s.sessionfold.compressed, reference: s.reference.compressed },
      cpuMsPerRead: { sessionfold: summarize(cpu.get(enc.key)!.sessionfold), reference: summarize(cpu.get(enc.key)!.reference) },
    })
  }
  return out
}

// ---- (3) append → SSE reader --------------------------------------------------------------

interface SseBlock {
  /** ms from the POST until the reader had its data event. */
  seen: number[]
  /** ms from the POST until its answer. */
  ack: number[]
}

let nextMark = 0

/** A reader on ?offset=now&live=sse, then warm-up + samples single-message POSTs, each awaited until the reader saw it. */
async function sseBlock(server: StreamsServer, id: string): Promise<SseBlock> {
  const abort = new AbortController()
  const res = await fetch(`${server.stream(id)}?offset=now&live=sse`, { signal: abort.signal, headers: { accept: 'text/event-stream' } })
  if (res.status !== 200 || !res.body) throw new Error(`${server.kind}: SSE ${res.status}`)
  const waiting = new Map<number, (at: number) => void>()
  let controls = 0
  let firstControl: () => void = () => {}
  const controlSeen = new Promise<void>((r) => {
    firstControl = r
  })
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  const pump = (async () => {
    let buffer = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      const at = performance.now()
      buffer += decoder.decode(value, { stream: true })
      let end = buffer.indexOf('\n\n')
      while (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        end = buffer.indexOf('\n\n')
        let event = 'message'
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim()
          else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
        }
        if (event === 'control' && controls++ === 0) firstControl()
        if (event !== 'data') continue
        for (const m of JSON.parse(data.join('\n')) as { mark?: number }[]) if (typeof m.mark === 'number') waiting.get(m.mark)?.(at)
      }
    }
  })().catch((err) => {
    if (!abort.signal.aborted) throw err
  })
  await bounded(`${server.kind}: the SSE reader's first control event`, controlSeen)
  const out: SseBlock = { seen: [], ack: [] }
  for (let k = 0; k < CONFIG.sseWarmUp + CONFIG.sseSamples; k++) {
    const mark = nextMark++
    const seen = new Promise<number>((resolve) => waiting.set(mark, resolve))
    const t0 = performance.now()
    const post = await fetch(server.stream(id), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mark, ...message(0, k) }),
    })
    const acked = performance.now()
    await post.arrayBuffer()
    if (post.status !== 204 && post.status !== 200) throw new Error(`${server.kind}: POST ${post.status}`)
    const at = await bounded(`${server.kind}: SSE data event for message ${mark}`, seen)
    waiting.delete(mark)
    if (k >= CONFIG.sseWarmUp) {
      out.seen.push(at - t0)
      out.ack.push(acked - t0)
    }
    await sleep(CONFIG.sseGapMs)
  }
  abort.abort()
  await pump
  return out
}

interface SsePart {
  p50: Record<Side, Summary>
  /** Over all recorded samples of a server. */
  all: Record<Side, { p50: number; p90: number; p99: number; max: number; n: number; ackP50: number; ackP99: number }>
  /** Per block: sessionfold p50 ÷ reference p50. */
  blockP50Ratio: Summary
}

async function partSse(servers: Record<Side, StreamsServer>): Promise<SsePart> {
  const id = 'sse'
  for (const side of SERVERS) await createStream(servers[side].stream(id))
  const seen: Record<Side, number[]> = { sessionfold: [], reference: [] }
  const ack: Record<Side, number[]> = { sessionfold: [], reference: [] }
  const p50: Record<Side, number[]> = { sessionfold: [], reference: [] }
  for (let b = 0; b < CONFIG.sseBlocks; b++) {
    const line: string[] = []
    for (const side of order(b)) {
      const block = await sseBlock(servers[side], id)
      seen[side].push(...block.seen)
      ack[side].push(...block.ack)
      const s = sorted(block.seen)
      p50[side].push(median(s))
      line.push(`${side} p50 ${fmt(median(s), 2)} ms, max ${fmt(s[s.length - 1]!, 1)} ms (POST answered: p50 ${fmt(median(block.ack), 2)} ms)`)
    }
    log(
      `(3) append → SSE data event, block ${b + 1}/${CONFIG.sseBlocks} (${CONFIG.sseSamples} samples after ${CONFIG.sseWarmUp} unrecorded): ${line.join(', ')}`,
    )
  }
  const all = {} as SsePart['all']
  for (const side of SERVERS) {
    const s = sorted(seen[side])
    const a = sorted(ack[side])
    all[side] = {
      p50: quantile(s, 0.5),
      p90: quantile(s, 0.9),
      p99: quantile(s, 0.99),
      max: s[s.length - 1]!,
      n: s.length,
      ackP50: median(a),
      ackP99: quantile(a, 0.99),
    }
  }
  return {
    p50: { sessionfold: summarize(p50.sessionfold), reference: summarize(p50.reference) },
    all,
    blockP50Ratio: summarize(p50.sessionfold.map((x, i) => x / p50.reference[i]!)),
  }
}

// ---- (4) conformance ----------------------------------------------------------------------

interface Conformance {
  target: StreamsServerKind
  label: string
  passed: number
  failed: number
  skipped: number
  total: number
  seconds: number
  /** The full names of the failed tests. */
  failures: string[]
  /** Set when the run gave no report. */
  error?: string
}

/** The conformance suite against `target`, through vitest in a process of its own; its counts from the JSON report. */
async function conformance(target: StreamsServerKind, dir: string): Promise<Conformance> {
  const out = join(dir, `conformance-${target}.json`)
  const t0 = performance.now()
  const vitest = join(REPO, 'node_modules', 'vitest', 'vitest.mjs')
  const args = [vitest, 'run', '--config', 'bench/streams-conformance.vitest.config.ts', '--reporter=json', `--outputFile=${out}`]
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: REPO, env: { ...process.env, BENCH_STREAMS_TARGET: target }, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000)
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), CONFIG.conformanceTimeoutMs)
    child.once('exit', (c) => {
      clearTimeout(timer)
      if (!fs.existsSync(out)) log(`(4) ${target}: vitest exited ${c} without a report:\n${stderr}`)
      resolve(c)
    })
  })
  const seconds = (performance.now() - t0) / 1000
  const empty = { target, label: LABEL[target], passed: 0, failed: 0, skipped: 0, total: 0, seconds, failures: [] }
  if (!fs.existsSync(out)) return { ...empty, error: `vitest exited ${code} without a report` }
  // The JSON reporter's shape (jest's): a file's assertions with their status.
  const report = JSON.parse(fs.readFileSync(out, 'utf8')) as { testResults: { assertionResults: { status: string; fullName: string }[] }[] }
  const tests = report.testResults.flatMap((f) => f.assertionResults)
  const count = (...statuses: string[]) => tests.filter((t) => statuses.includes(t.status)).length
  return {
    ...empty,
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('pending', 'skipped', 'todo', 'disabled'),
    total: tests.length,
    failures: tests.filter((t) => t.status === 'failed').map((t) => t.fullName.replace(/^Durable Streams conformance: \S+ /, '')),
  }
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now()
  checkSettings(CONFIG)
  const parts = new Set(CONFIG.parts.split(',').map((p) => p.trim()))
  const source = sourceState()
  const { root, cleanup } = await benchRoot('sessionfold-streams-')
  const running: StreamsServer[] = []
  try {
    let appends: AppendPart | undefined
    let read: ReadPart | undefined
    let sse: SsePart | undefined
    if (parts.has('1') || parts.has('2') || parts.has('3')) {
      const dir = (name: string) => {
        const d = join(root, name)
        fs.mkdirSync(d)
        return d
      }
      const servers: Record<Side, StreamsServer> = {
        sessionfold: await startStreamsServer('sessionfold', dir('sessionfold'), { longPollMs: CONFIG.longPollMs }),
        reference: await startStreamsServer('reference', dir('reference'), { longPollMs: CONFIG.longPollMs }),
      }
      running.push(servers.sessionfold, servers.reference)
      log(`servers: sessionfold ${servers.sessionfold.url}, reference ${servers.reference.url}`)
      if (parts.has('1')) appends = await partAppends(servers)
      if (parts.has('2')) read = await partCatchUp(servers)
      if (parts.has('3')) sse = await partSse(servers)
      for (const s of running.splice(0)) await s.close()
    }
    const conformanceRuns: Conformance[] = []
    const withPg = CONFIG.pg && postgresBin() !== undefined
    if (parts.has('4') && CONFIG.conformance) {
      const targets: StreamsServerKind[] = ['reference', 'sessionfold', ...(withPg ? (['sessionfold-postgres'] as const) : [])]
      for (const target of targets) {
        const c = await conformance(target, root)
        conformanceRuns.push(c)
        log(
          `(4) conformance, ${c.label}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped of ${c.total} (${fmt(c.seconds, 0)} s)${c.error ? `: ${c.error}` : ''}` +
            (c.failures.length > 0 ? `\n    failed: ${c.failures.join('\n    failed: ')}` : ''),
        )
      }
    }

    const headline: HeadlineRatio[] = []
    const figures: Figure[] = []
    const events = CONFIG.producers * CONFIG.producerMessages
    for (const s of appends?.shapes ?? []) {
      headline.push(
        headlineRatio(
          `streams-append-${s.shape}`,
          `JSON appends: ${CONFIG.producers} IdempotentProducers at once, ${s.label}, one message (~90 B) a POST, ${fmt(events, 0)} messages a run`,
          LAYER,
          'sessionfold events/s ÷ reference events/s',
          s.rate.sessionfold,
          s.rate.reference,
          { atLeast: TARGETS.appends },
        ),
      )
      if (s.shape === 'one' && s.headP50.sessionfold.n > 0 && s.headP50.reference.n > 0)
        headline.push(
          headlineRatio(
            'streams-append-one-head',
            `(information) a HEAD of that one stream while its ${CONFIG.producers} producers append, one every ${CONFIG.headEveryMs} ms from a process of its own: p50 of each round`,
            LAYER,
            'sessionfold ms ÷ reference ms',
            s.headP50.sessionfold,
            s.headP50.reference,
          ),
        )
      for (const side of SERVERS) {
        figures.push([`(1) ${s.label}: ${side}`, s.rate[side], 'events/s', 0])
        figures.push([`(1) ${s.label}: ${side} server CPU`, s.cpuUsPerEvent[side], 'µs an event', 0])
        if (s.shape === 'one') figures.push([`(1) ${s.label}: ${side}, a HEAD meanwhile (p50 of each round)`, s.headP50[side], 'ms', 1])
      }
    }
    for (const e of read?.byEncoding ?? []) {
      headline.push(
        headlineRatio(
          `streams-catch-up-${e.key}`,
          `catch-up read of a ${fmt(CONFIG.catchUp, 0)}-message JSON stream from offset -1 to Stream-Up-To-Date, ${e.label}`,
          LAYER,
          'sessionfold messages/s ÷ reference messages/s',
          e.rate.sessionfold,
          e.rate.reference,
          e.key === 'identity' ? { atLeast: TARGETS.catchUp } : undefined,
        ),
      )
      for (const side of SERVERS) {
        const how = `${plural(e.requests[side], 'request')}, ${fmt(e.bodyBytes[side] / 2 ** 20, 1)} MiB of JSON${e.compressed[side] ? ', gzipped' : ''}`
        figures.push([`(2) catch-up, ${e.key}: ${side} (${how})`, e.rate[side], 'messages/s', 0])
        figures.push([`(2) catch-up, ${e.key}: ${side} server CPU`, e.cpuMsPerRead[side], 'ms a read', 0])
      }
    }
    if (sse) {
      const n = CONFIG.sseBlocks * CONFIG.sseSamples
      headline.push(
        headlineRatio(
          'streams-sse-p50',
          `append (POST of one message) → an SSE reader (offset=now&live=sse) has its event: data, p50 (${CONFIG.sseBlocks} blocks of ${CONFIG.sseSamples}, ${CONFIG.sseGapMs} ms apart: each block's p50)`,
          LAYER,
          'sessionfold ms ÷ reference ms',
          sse.p50.sessionfold,
          sse.p50.reference,
          { atMost: TARGETS.sse },
        ),
        headlineRatio(
          'streams-sse-p99',
          `the same, p99 of all ${n} samples`,
          LAYER,
          'sessionfold ms ÷ reference ms',
          summarize([sse.all.sessionfold.p99]),
          summarize([sse.all.reference.p99]),
          { atMost: TARGETS.sse },
        ),
      )
      for (const side of SERVERS) {
        figures.push([`(3) append → SSE data event: ${side}, p50 of each block`, sse.p50[side], 'ms', 2])
        figures.push([`(3) ${side}: p99 of all ${n}`, summarize([sse.all[side].p99]), 'ms', 2])
      }
    }
    const versions = {
      server: readVersion('@durable-streams/server'),
      client: readVersion('@durable-streams/client'),
      conformance: readVersion('@durable-streams/server-conformance-tests'),
    }
    const meaning = explain(appends, read, sse, conformanceRuns, versions.conformance, source)
    for (const m of meaning) log(`- ${m}`)
    finishBench(
      'streams',
      'Durable Streams: sessionfold (createStreamsHandler, fs) against @durable-streams/server (file-backed) on 127.0.0.1',
      figures,
      headline,
      {
        source,
        versions,
        postgres: withPg ? postgresBin() : undefined,
        config: CONFIG,
        targets: TARGETS,
        headline,
        appends,
        catchUp: read,
        sse,
        conformance: conformanceRuns,
        meaning,
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
    if (conformanceRuns.length > 0) {
      console.log('')
      for (const c of conformanceRuns) console.log(`conformance, ${c.label}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped of ${c.total}`)
    }
  } finally {
    for (const s of running.splice(0)) await s.close().catch((err) => log(`closing a server: ${err}`))
    cleanup()
  }
}

/** What the figures say, a sentence each (BENCHMARKS.md lists them under the table). */
function explain(
  appends: AppendPart | undefined,
  read: ReadPart | undefined,
  sse: SsePart | undefined,
  runs: Conformance[],
  suite: string,
  source: { commit?: string; dirty?: string[] },
): string[] {
  const out: string[] = []
  if (source.commit)
    out.push(
      `Measured at commit ${source.commit}${source.dirty?.length ? `, with uncommitted changes (other work in progress) in ${source.dirty.join(', ')}` : ''}; the engine ran from src/ (its worker through tsx).`,
    )
  for (const c of runs) {
    const failed = c.failures.length > 0 ? ` (failed: ${c.failures.join('; ')})` : ''
    out.push(
      c.error
        ? `Conformance, ${c.label}: no counts (${c.error}).`
        : `Conformance (@durable-streams/server-conformance-tests ${suite}, ${c.total} tests), ${c.label}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped${failed}.`,
    )
  }
  if (runs.length > 0 && runs.every((c) => c.skipped > 0))
    out.push(
      "The skipped tests are the suite's reserved subscription APIs, which it runs only when asked (`subscriptions: true`); they were not asked of any server.",
    )
  const one = appends?.shapes.find((x) => x.shape === 'one')
  const each = appends?.shapes.find((x) => x.shape === 'each')
  if (one && each) {
    out.push(
      `Appends: sessionfold's server process spends ${fmt(one.cpuUsPerEvent.sessionfold.median, 0)} µs of CPU an event on one stream and ${fmt(each.cpuUsPerEvent.sessionfold.median, 0)} µs on ${CONFIG.producers} streams, ` +
        `the reference's ${fmt(one.cpuUsPerEvent.reference.median, 0)} µs and ${fmt(each.cpuUsPerEvent.reference.median, 0)} µs (medians; fsync's system time included). ` +
        `On one stream a HEAD made while the producers append (from a process of its own) waits p50 ${fmt(one.heads.sessionfold.p50, 1)} ms (p99 ${fmt(one.heads.sessionfold.p99, 0)} ms) on sessionfold, ` +
        `${fmt(one.heads.reference.p50, 1)} ms (p99 ${fmt(one.heads.reference.p99, 0)} ms) on the reference, which takes fewer appends meanwhile: sessionfold's HEAD crosses to the engine's thread, busy with those appends.`,
    )
  }
  const identity = read?.byEncoding.find((e) => e.key === 'identity')
  const gzip = read?.byEncoding.find((e) => e.key === 'gzip')
  if (read && identity) {
    out.push(
      `Catch-up: sessionfold answers in ${plural(identity.requests.sessionfold, 'request')} (read in pages of 1 MiB, each while the one before goes out), the reference in ${identity.requests.reference}; ` +
        `the server's CPU a read is ${fmt(identity.cpuMsPerRead.sessionfold.median, 0)} ms against ${fmt(identity.cpuMsPerRead.reference.median, 0)} ms` +
        `${gzip ? ` (offered gzip, the reference compresses: ${fmt(gzip.cpuMsPerRead.reference.median, 0)} ms)` : ''}. ` +
        `Filling the stream (POSTs of ${CONFIG.fillBatch} messages, ${CONFIG.fillWriters} at once, untimed for the ratio) took ${fmt(read.fill.sessionfold.seconds, 1)} s on sessionfold ` +
        `(${fmt(read.fill.sessionfold.eventsPerSecond, 0)} messages/s) and ${fmt(read.fill.reference.seconds, 1)} s on the reference (${fmt(read.fill.reference.eventsPerSecond, 0)} messages/s).`,
    )
  }
  if (sse) {
    const gap = (side: Side) => sse.all[side].p50 - sse.all[side].ackP50
    out.push(
      `SSE: of all ${sse.all.sessionfold.n} samples, sessionfold p50 ${fmt(sse.all.sessionfold.p50, 1)} ms, p99 ${fmt(sse.all.sessionfold.p99, 1)} ms; the reference p50 ${fmt(sse.all.reference.p50, 1)} ms, p99 ${fmt(sse.all.reference.p99, 1)} ms. ` +
        `The POST itself is answered p50 ${fmt(sse.all.sessionfold.ackP50, 1)} ms (p99 ${fmt(sse.all.sessionfold.ackP99, 1)} ms) on sessionfold and ` +
        `${fmt(sse.all.reference.ackP50, 1)} ms (p99 ${fmt(sse.all.reference.ackP99, 1)} ms) on the reference (a durable append each): ` +
        `the reader has the message about ${fmt(gap('sessionfold'), 1)} ms and ${fmt(gap('reference'), 1)} ms after that (p50 against p50).`,
    )
  }
  if (appends)
    out.push(
      "The reference's file-backed store keeps at most 100 segment files open; an append to a stream whose file it closed meanwhile answers 404 (its FileHandlePool evicts the handle between the write and the fsync), so each round writes the same 52 streams again, with new producers.",
    )
  return out
}

function readVersion(pkg: string): string {
  try {
    return (JSON.parse(fs.readFileSync(join(REPO, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return 'not installed'
  }
}

main().then(
  // Every server, store and cluster is closed by now: exit even if a kept-alive socket lingers.
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
