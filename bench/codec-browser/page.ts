// The in-page part of bench/codec-browser.ts (npm run bench:codec-browser), served by Vite from
// this source tree: the page's own openStore() (IndexedDB on disk, the engine in its default
// module Web Worker, durability 'strict') with the record codec's options, one database per
// variant. It takes raw samples, one call at a time from the driver (window.codecBench), which
// orders the runs, summarises and reports. For diagnosis it also times the codec's steps on one
// frame in this thread (the same code the engine's worker runs on each append and read).
import { openStore, type EventInput, type OpenStoreOptions, type Store } from 'sessionfold'
import { openSealed } from '../../src/storage/codec'
import { fromBase64, toBase64 } from '../../src/storage/codec/base64'
import { EnvelopeCodec, type DataKeys } from '../../src/storage/codec/seal'
import { createIndexedDbAdapter } from '../../src/backends/indexeddb'
import { streamCompressor } from '../../src/storage/codec/browser'
import { keepWarnings } from '../support/page-helpers'

/** The variants, as bench/codec.ts names them. */
export type VariantKey = 'plain' | 'deflate' | 'sealed' | 'sealedRaw'

export interface PageConfig {
  /** Unique part of the database names. */
  stamp: string
  /** The event appended everywhere (bench/common.ts messageInput), as JSON. */
  inputJson: string
  /** Events per append. */
  batch: number
  /** Batches per append run. */
  batches: number
  /** Idle ms before each append run (IndexedDB compacts what the last run wrote in the background). */
  settleMs: number
}

export interface Usage {
  /** navigator.storage.estimate().usage, bytes. */
  usage: number
  /** Its usageDetails.indexedDB (Chromium), bytes; -1 when absent. */
  indexedDB: number
}

export interface WriteResult {
  ms: number
  /** Storage use before the write and after it (the session closed, then settleMs idle). */
  before: Usage
  after: Usage
}

export interface ColdOpen {
  /** ms of openStore() (a new worker, the key record read and checked). */
  open: number
  /** ms of the first store.observe(id) in it. */
  observe: number
  /** Median ms of the observes after the first (each closed before the next). */
  again: number
}

/** The two reads of a cold observe (the session's header, its checkpoint row) at the adapter level, in the page's thread. */
export interface AdapterProbe {
  /** JSON length of the header and of the checkpoint row as the IndexedDB adapter holds them (the codec's stored form). */
  headerChars: number
  checkpointChars: number
  /** Whether they are stored sealed. */
  headerSealed: boolean
  checkpointSealed: boolean
  /** Median ms of one call: the IndexedDB adapter alone, and through the codec (openSealed over it). */
  inner: { getSession: number; getCheckpoint: number }
  codec: { getSession: number; getCheckpoint: number }
}

export interface PrimitiveResult {
  frame: {
    events: number
    /** UTF-8 bytes of the frame's text (the events' JSON joined by newlines). */
    jsonBytes: number
    deflatedBytes: number
    /** Length of the stored unit's base64 per variant (0: stored as plain records). */
    unitBase64: Record<VariantKey, number>
  }
  /** Median ms of one call per step. */
  steps: { step: string; ms: number }[]
}

export interface CodecPage {
  info(): { userAgent: string; hardwareConcurrency: number; crossOriginIsolated: boolean }
  setup(cfg: PageConfig): void
  /** Opens the four stores; ms of each openStore(). */
  openAll(): Promise<Record<VariantKey, number>>
  /** The read session (id READ_ID) of `events` events in `key`'s store, appended in batches, then closed. */
  writeRead(key: VariantKey, events: number): Promise<WriteResult>
  /** One run of batched appends to a new session in `key`'s store: events/s. */
  appendRun(key: VariantKey): Promise<number>
  /** A full read of the read session through store.observe(id): events/s. */
  readRun(key: VariantKey, events: number): Promise<number>
  closeAll(): Promise<void>
  /** A fresh openStore() of `db`'s database with `options`'s options, then store.observe(id) of the read session. */
  coldOpen(db: VariantKey, options: VariantKey, reobserves: number, events: number): Promise<ColdOpen>
  usage(): Promise<Usage>
  /** With no store open on it: `db`'s header and checkpoint row read through the IndexedDB adapter alone and through the codec. */
  adapterProbe(db: VariantKey, samples: number): Promise<AdapterProbe>
  /** The codec's steps on one frame of `events` events, timed in this thread. */
  primitives(events: number, samples: number): Promise<PrimitiveResult>
  warnings(): string[]
}

export const READ_ID = 'codec-read'

const warnings = keepWarnings()

const now = () => performance.now()
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

const KEY = globalThis.crypto.getRandomValues(new Uint8Array(32))
const OPTIONS: Record<VariantKey, OpenStoreOptions> = {
  plain: { compression: 'none' },
  deflate: {},
  sealed: { encryption: { key: KEY }, compression: 'deflate' },
  sealedRaw: { encryption: { key: KEY }, compression: 'none' },
}
const KEYS = Object.keys(OPTIONS) as VariantKey[]

let cfg: PageConfig | undefined
let input: EventInput | undefined
let batches: EventInput[][] = []
const stores = new Map<VariantKey, Store>()

const config = (): PageConfig => {
  if (!cfg) throw new Error('codecBench.setup() first')
  return cfg
}
const dbName = (key: VariantKey) => `codec-${config().stamp}-${key}`
const open = (db: VariantKey, options: VariantKey) => openStore({ ...OPTIONS[options], name: dbName(db), durability: 'strict' })
const storeOf = (key: VariantKey): Store => {
  const s = stores.get(key)
  if (!s) throw new Error(`no open store for ${key}`)
  return s
}

async function usage(): Promise<Usage> {
  const e = (await navigator.storage.estimate()) as StorageEstimate & { usageDetails?: { indexedDB?: number } }
  return { usage: e.usage ?? -1, indexedDB: e.usageDetails?.indexedDB ?? -1 }
}

/** Median ms of one call of `fn` over `samples` samples (after two unrecorded), each repeating it for at least 5 ms (the clock is coarse). */
async function perCall(samples: number, fn: () => unknown): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < samples + 2; i++) {
    let reps = 0
    const t0 = now()
    let t = t0
    do {
      await fn()
      reps++
      t = now()
    } while (t - t0 < 5)
    if (i >= 2) times.push((t - t0) / reps)
  }
  return median(times)
}

/** Like perCall for several calls at once, their samples interleaved (the order reversed every other sample): median ms of one call of each. */
async function interleaved(samples: number, fns: readonly (() => unknown)[]): Promise<number[]> {
  const times = fns.map(() => [] as number[])
  for (let i = 0; i < samples + 2; i++) {
    const order = fns.map((_, k) => (i % 2 === 0 ? k : fns.length - 1 - k))
    for (const k of order) {
      let reps = 0
      const t0 = now()
      let t = t0
      do {
        await fns[k]!()
        reps++
        t = now()
      } while (t - t0 < 5)
      if (i >= 2) times[k]!.push((t - t0) / reps)
    }
  }
  return times.map(median)
}

const api: CodecPage = {
  info: () => ({
    userAgent: navigator.userAgent,
    hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: globalThis.crossOriginIsolated === true,
  }),

  setup(c) {
    cfg = c
    input = JSON.parse(c.inputJson) as EventInput
    batches = Array.from({ length: c.batches }, () => Array.from({ length: c.batch }, () => input!))
  },

  async openAll() {
    const out = {} as Record<VariantKey, number>
    for (const key of KEYS) {
      const t0 = now()
      stores.set(key, await open(key, key))
      out[key] = now() - t0
    }
    return out
  },

  async writeRead(key, events) {
    const c = config()
    const store = storeOf(key)
    const before = await usage()
    const t0 = now()
    const session = await store.createSession({ id: READ_ID })
    for (let pos = 0; pos < events; pos += c.batch) {
      await session.append(Array.from({ length: Math.min(c.batch, events - pos) }, () => input!))
    }
    if (session.projections.asOfSeq !== events - 1)
      throw new Error(`${key}: the read session holds ${session.projections.asOfSeq + 1} events, expected ${events}`)
    await session.close()
    const ms = now() - t0
    await sleep(c.settleMs)
    return { ms, before, after: await usage() }
  },

  async appendRun(key) {
    const c = config()
    const store = storeOf(key)
    await sleep(c.settleMs)
    const session = await store.createSession()
    const events = c.batch * c.batches
    let lastSeq = -1
    const t0 = now()
    for (const b of batches) lastSeq = (await session.append(b)).lastSeq
    const ms = now() - t0
    if (lastSeq !== events - 1) throw new Error(`${key}: batched run ended at seq ${lastSeq}, expected ${events - 1}`)
    await session.close()
    // Kept, not deleted: deletions in the origin's LevelDB slow the runs after them (see bench/browser/bench.ts). The profile goes at the end.
    return (events / ms) * 1000
  },

  async readRun(key, events) {
    const view = await storeOf(key).observe(READ_ID)
    let n = 0
    let lastSeq = -1
    const t0 = now()
    for await (const e of view.events()) {
      n++
      lastSeq = e.seq
    }
    const ms = now() - t0
    await view.close()
    if (n !== events || lastSeq !== events - 1) throw new Error(`${key}: read ${n} events to seq ${lastSeq}, expected ${events}`)
    return (n / ms) * 1000
  },

  async closeAll() {
    for (const key of KEYS) {
      await stores.get(key)?.close()
      stores.delete(key)
    }
  },

  async coldOpen(db, options, reobserves, events) {
    const t0 = now()
    const store = await open(db, options)
    const openMs = now() - t0
    try {
      const observeOnce = async () => {
        const t = now()
        const view = await store.observe(READ_ID)
        const ms = now() - t
        const asOf = view.projections.asOfSeq
        await view.close()
        if (asOf !== events - 1) throw new Error(`${db} opened as ${options}: observe asOfSeq ${asOf}, expected ${events - 1}`)
        return ms
      }
      const observe = await observeOnce()
      const again: number[] = []
      for (let i = 0; i < reobserves; i++) again.push(await observeOnce())
      return { open: openMs, observe, again: median(again) }
    } finally {
      await store.close()
    }
  },

  usage,

  async adapterProbe(db, samples) {
    const inner = createIndexedDbAdapter({ name: dbName(db), durability: 'strict' })
    const o = OPTIONS[db]
    const sealed = await openSealed(inner, { key: o.encryption?.key, compression: o.compression, compressor: streamCompressor() })
    try {
      const info = await inner.getSession(READ_ID)
      const row = await inner.getCheckpoint(READ_ID)
      if (!info || row === undefined || row === null) throw new Error(`${db}: no session ${READ_ID} or no checkpoint row`)
      const isSealed = (x: unknown) => typeof (x as { sealed?: unknown } | null)?.sealed === 'string'
      return {
        headerChars: JSON.stringify(info.header).length,
        checkpointChars: JSON.stringify(row).length,
        headerSealed: isSealed(info.header),
        checkpointSealed: isSealed(row),
        ...(await (async () => {
          const [ig, sg, ic, sc] = await interleaved(samples, [
            () => inner.getSession(READ_ID),
            () => sealed.getSession(READ_ID),
            () => inner.getCheckpoint(READ_ID),
            () => sealed.getCheckpoint(READ_ID),
          ])
          return { inner: { getSession: ig!, getCheckpoint: ic! }, codec: { getSession: sg!, getCheckpoint: sc! } }
        })()),
      }
    } finally {
      await sealed.close()
    }
  },

  async primitives(events, samples) {
    // One frame as the codec cuts it from an append: the events' JSON ({ seq, type, time, data }) joined by newlines.
    const inp = input ?? (JSON.parse(config().inputJson) as EventInput)
    const t = Date.now()
    const jsons = Array.from({ length: events }, (_, i) => JSON.stringify({ seq: 10_000 + i, type: inp.type, time: t, data: inp.data ?? null }))
    const text = jsons.join('\n')
    const encoder = new TextEncoder()
    const decoder = new TextDecoder()
    const bytes = encoder.encode(text)
    const compressor = streamCompressor()
    const key = await globalThis.crypto.subtle.importKey('raw', KEY, 'AES-GCM', false, ['encrypt', 'decrypt'])
    const keys: DataKeys = { current: { gen: 1, key }, get: (gen) => (gen === 1 ? key : undefined) }
    const storeId = 'ab'.repeat(16)
    const codecs: Record<VariantKey, EnvelopeCodec | undefined> = {
      plain: undefined,
      deflate: new EnvelopeCodec(storeId, undefined, compressor, compressor),
      sealed: new EnvelopeCodec(storeId, keys, compressor, compressor),
      sealedRaw: new EnvelopeCodec(storeId, keys, undefined, compressor),
    }
    const aad = `events codec-read 1700000000000 10000 ${events}`
    const z = await compressor.deflate(bytes)
    const iv = globalThis.crypto.getRandomValues(new Uint8Array(12))
    const zCipher = new Uint8Array(await globalThis.crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, z as Uint8Array<ArrayBuffer>))
    const rawCipher = new Uint8Array(await globalThis.crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, bytes))
    const units = {} as Record<VariantKey, string>
    for (const k of KEYS) units[k] = codecs[k] ? toBase64(await codecs[k]!.seal(aad, bytes)) : ''
    for (const k of KEYS) {
      const c = codecs[k]
      if (!c) continue
      const back = decoder.decode(await c.open(aad, fromBase64(units[k])!))
      if (back !== text) throw new Error(`primitives: ${k}'s unit does not open to its frame`)
    }
    const steps: { step: string; ms: number }[] = []
    const time = async (step: string, fn: () => unknown) => void steps.push({ step, ms: await perCall(samples, fn) })
    await time('TextEncoder.encode of the frame', () => encoder.encode(text))
    await time("deflate (CompressionStream 'deflate-raw')", () => compressor.deflate(bytes))
    await time('inflate (DecompressionStream)', () => compressor.inflate(z))
    await time('AES-GCM encrypt, the deflated frame', () => globalThis.crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, z as Uint8Array<ArrayBuffer>))
    await time('AES-GCM decrypt, the deflated frame', () => globalThis.crypto.subtle.decrypt({ name: 'AES-GCM', iv }, key, zCipher))
    await time('AES-GCM encrypt, the raw frame', () => globalThis.crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, bytes))
    await time('AES-GCM decrypt, the raw frame', () => globalThis.crypto.subtle.decrypt({ name: 'AES-GCM', iv }, key, rawCipher))
    const sealedBytes = fromBase64(units.sealed)!
    const rawBytes = fromBase64(units.sealedRaw)!
    await time(`toBase64, sealed+deflated unit (${sealedBytes.length} B)`, () => toBase64(sealedBytes))
    await time(`fromBase64, sealed+deflated unit (${units.sealed.length} chars)`, () => fromBase64(units.sealed))
    await time(`toBase64, sealed raw unit (${rawBytes.length} B)`, () => toBase64(rawBytes))
    await time(`fromBase64, sealed raw unit (${units.sealedRaw.length} chars)`, () => fromBase64(units.sealedRaw))
    await time('TextDecoder + split + JSON.parse of the frame (open side)', () =>
      decoder
        .decode(bytes)
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    )
    for (const k of ['deflate', 'sealed', 'sealedRaw'] as const) {
      const c = codecs[k]!
      await time(`${k}: whole seal (EnvelopeCodec.seal + toBase64)`, async () => toBase64(await c.seal(aad, bytes)))
      await time(`${k}: whole open (fromBase64 + EnvelopeCodec.open)`, () => c.open(aad, fromBase64(units[k])!))
    }
    return {
      frame: {
        events,
        jsonBytes: bytes.length,
        deflatedBytes: z.length,
        unitBase64: Object.fromEntries(KEYS.map((k) => [k, units[k].length])) as Record<VariantKey, number>,
      },
      steps,
    }
  },

  warnings: () => [...warnings],
}

;(window as unknown as { codecBench?: CodecPage }).codecBench = api
