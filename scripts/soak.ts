// Soak: many sessions, many concurrent writers, a fixed time, then a full check (npm run soak).
//
//   node --expose-gc --import tsx scripts/soak.ts [--seconds 60] [--sessions 1000] [--writers 100]
//        [--interval 5] [--worker] [--dir PATH] [--keep] [--json]
//
// An fs store under strict durability gets `sessions` root sessions. Then `writers` concurrent
// writers, for `seconds` seconds (the timed phase, bounded here whatever happens), each in a
// loop: take a root nobody holds, openSession it, append 1-5 event batches with expectedSeq a
// few times (turn/start and turn/end among them, so checkpoints are written), now and then
// spawn a child (with an initial event, then a few appends to it) or fork at a random seq
// (then a few appends to the fork), and close. Every event's content is a pure function of
// (session, seq), and the soak keeps, per session, only its acknowledged length and where
// its catalog facts are, so the bookkeeping stays small and the heap figure honest.
//
// Heap: every `interval` seconds, after a full gc (--expose-gc), heapUsed and rss are printed.
// The run fails unless the last in-run heapUsed is within 1.5x the first (taken after one
// interval of warm-up, with every writer busy): a leak that grows with events written or time
// shows as a heap that keeps climbing; a cache bounded by the session count does not.
// With --worker the engine runs in worker_threads: only the main thread's heap is measured.
//
// After the timed phase the store is closed and reopened, and:
//   - store.verify() must report no damage, and exactly the sessions and events acknowledged;
//   - every session holds exactly its acknowledged events, each equal to what was appended
//     (a fork's seed equal to its source's events, catalog facts naming the right child);
//   - every session's projections read cold (observe: its checkpoint plus the suffix) equal a
//     full refold of its log.
// Exit status 0 when all of that holds, 1 otherwise. `--json` prints the result as one JSON line.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { openSealed } from '../src/storage/codec'
import { createFsAdapter } from '../src/backends/fs'
import type { StorageAdapter } from '../src/storage/types'
import { openStore, type Session, type Store } from '../src/index-node'
import type { Json, SessionEvent } from '../src/core/model'
import type { ProjectionSnapshot } from '../src/core/projection'
import { BUILTIN_PROJECTIONS } from '../src/core/units'
import { foldEvent, initSlots, snapshotOf } from '../src/engine/units'

export interface SoakOptions {
  sessions?: number
  writers?: number
  seconds?: number
  /** Seconds between heap readings. */
  interval?: number
  worker?: boolean
  dir?: string
  keep?: boolean
  log?: (line: string) => void
}

export interface HeapReading {
  t: number
  events: number
  heapUsedMB: number
  rssMB: number
}

export interface SoakResult {
  ok: boolean
  problems: string[]
  seconds: number
  rootSessions: number
  writers: number
  sessions: { total: number; children: number; forks: number }
  appends: number
  eventsWritten: number
  eventsStored: number
  heap: HeapReading[]
  /** Heap after the timed phase: handles closed, gc run. */
  heapAfterMB: number
  heapRatio: number
  gc: boolean
  verify: { sessions: number; events: number; damaged: number }
  coldReadsChecked: number
  verifySeconds: number
}

/** What the soak knows of a session: all it needs to say what each stored event must be. */
interface Tracked {
  /** Acknowledged length. */
  len: number
  /** For a fork: events below seedLength are copies of forkedFrom's. */
  forkedFrom?: string
  seedLength: number
  /** Subagents: seq 0 is the descriptor. */
  child: boolean
  /** seq → child id of each catalog fact this session's writer caused. */
  catalog?: Map<number, string>
  children: number
  forks: number
}

const BASE_TIME = 1_700_000_000_000

/** The event appended at `seq` of `id` by its own writer. */
export function eventAt(id: string, seq: number): { type: string; time: number; data: Json } {
  const type = seq % 16 === 0 ? 'turn/start' : seq % 16 === 15 ? 'turn/end' : 'app/e'
  return { type, time: BASE_TIME + seq, data: { o: id, q: seq, pad: 'x'.repeat((seq * 37) % 300) } }
}

const rand = (n: number) => Math.floor(Math.random() * n)
const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10

function refold(adapter: StorageAdapter, id: string): Promise<ProjectionSnapshot> {
  return (async () => {
    const info = (await adapter.getSession(id))!
    const slots = initSlots(BUILTIN_PROJECTIONS, info.header)
    for await (const page of adapter.readEvents(id)) for (const e of page) foldEvent(slots, e)
    return snapshotOf(slots, info.length - 1)
  })()
}

export async function runSoak(options: SoakOptions = {}): Promise<SoakResult> {
  const roots = options.sessions ?? 1000
  const writerCount = options.writers ?? 100
  const seconds = options.seconds ?? 60
  const intervalMs = (options.interval ?? Math.min(5, Math.max(1, seconds / 10))) * 1000
  const log = options.log ?? ((line: string) => console.log(line))
  if (!(writerCount <= roots)) throw new Error(`soak: ${writerCount} writers need at least as many sessions, got ${roots}`)
  const gc = (globalThis as { gc?: () => void }).gc
  const problems: string[] = []
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'sessionfold-soak-')))
  const openOptions = { storage: 'fs' as const, dir, durability: 'strict' as const, worker: options.worker ?? false }

  const tracked = new Map<string, Tracked>()
  const rootIds = Array.from({ length: roots }, (_, i) => `r${String(i).padStart(5, '0')}`)
  let appends = 0
  let eventsWritten = 0

  log(
    `soak: ${roots} sessions, ${writerCount} writers, ${seconds} s, strict fs store in ${dir}, engine ${openOptions.worker ? 'in worker_threads' : 'in this thread'}${gc ? '' : ' (no --expose-gc: heap readings without gc)'}`,
  )
  let store: Store = await openStore(openOptions)

  // ---- setup: the root sessions ----------------------------------------------------------
  const setupStart = performance.now()
  for (let i = 0; i < roots; i += 50) {
    await Promise.all(
      rootIds.slice(i, i + 50).map(async (id) => {
        const s = await store.createSession({ id })
        await s.close()
        tracked.set(id, { len: 0, seedLength: 0, child: false, children: 0, forks: 0 })
      }),
    )
  }
  log(`setup: ${roots} sessions created in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`)

  // ---- the timed phase -------------------------------------------------------------------
  const free = [...rootIds]
  let stopping = false
  const writeUpTo = async (s: Session, t: Tracked, upTo: number) => {
    while (t.len < upTo && !stopping) {
      const n = Math.min(upTo - t.len, 1 + rand(5))
      const batch = Array.from({ length: n }, (_, k) => eventAt(s.id, t.len + k))
      const r = await s.append(batch, { expectedSeq: t.len })
      if (r.firstSeq !== t.len) problems.push(`append to ${s.id} got firstSeq ${r.firstSeq}, expected ${t.len}`)
      t.len += n
      appends++
      eventsWritten += n
    }
  }

  async function stint(): Promise<void> {
    const id = free.splice(rand(free.length), 1)[0]!
    const t = tracked.get(id)!
    let s: Session
    try {
      s = await store.openSession(id)
    } catch (err) {
      free.push(id)
      throw err
    }
    try {
      const steps = 1 + rand(8)
      for (let i = 0; i < steps && !stopping; i++) {
        const r = Math.random()
        if (r < 0.04) {
          const childId = `${id}c${t.children++}`
          const kid = await s.spawn({ mode: 'one-shot', id: childId, events: [eventAt(childId, 1)] })
          ;(t.catalog ??= new Map()).set(t.len, childId)
          t.len++
          eventsWritten += 3 // descriptor, initial event, catalog fact
          const k: Tracked = { len: 2, seedLength: 0, child: true, children: 0, forks: 0 }
          tracked.set(childId, k)
          await writeUpTo(kid, k, 2 + rand(6))
          await kid.close()
        } else if (r < 0.06) {
          const at = rand(t.len + 1)
          const fork = await s.fork({ at })
          const f: Tracked = { len: at, forkedFrom: id, seedLength: at, child: false, children: 0, forks: 0 }
          tracked.set(fork.id, f)
          t.forks++
          eventsWritten += at // copied
          await writeUpTo(fork, f, at + 1 + rand(4))
          await fork.close()
        } else {
          await writeUpTo(s, t, t.len + 1 + rand(5))
        }
      }
    } finally {
      await s.close()
      free.push(id)
    }
  }

  const heap: HeapReading[] = []
  const started = performance.now()
  const reading = (): HeapReading => {
    gc?.()
    const m = process.memoryUsage()
    return { t: Math.round((performance.now() - started) / 100) / 10, events: eventsWritten, heapUsedMB: mb(m.heapUsed), rssMB: mb(m.rss) }
  }
  const timer = setInterval(() => {
    const r = reading()
    heap.push(r)
    log(`t=${r.t}s events=${r.events} appends=${appends} sessions=${tracked.size} heapUsed=${r.heapUsedMB}MB rss=${r.rssMB}MB`)
  }, intervalMs)
  const stopAt = setTimeout(() => (stopping = true), seconds * 1000)
  await Promise.all(
    Array.from({ length: writerCount }, async () => {
      while (!stopping) {
        try {
          await stint()
        } catch (err) {
          problems.push(`writer failed: ${(err as Error).message}`)
          await new Promise((r) => setTimeout(r, 10))
        }
      }
    }),
  )
  clearTimeout(stopAt)
  clearInterval(timer)
  const elapsed = (performance.now() - started) / 1000
  const after = reading()
  log(
    `timed phase: ${elapsed.toFixed(1)} s, ${appends} appends, ${eventsWritten} events written (${Math.round(eventsWritten / elapsed)} events/s), ${tracked.size} sessions; heap after (handles closed, gc) ${after.heapUsedMB} MB`,
  )

  // Heap: the last reading under load against the first (after one interval of warm-up).
  const first = heap[0]
  const last = heap[heap.length - 1]
  const heapRatio = first && last ? Math.round((last.heapUsedMB / first.heapUsedMB) * 100) / 100 : NaN
  if (heap.length < 2) problems.push(`only ${heap.length} heap readings: run longer than two intervals`)
  else if (!(heapRatio <= 1.5)) problems.push(`heap grew: ${first!.heapUsedMB} MB after warm-up, ${last!.heapUsedMB} MB at the end (x${heapRatio})`)
  log(`heap: ${first?.heapUsedMB} MB after warm-up, ${last?.heapUsedMB} MB at the end of the run: x${heapRatio} (limit x1.5)`)

  // ---- the check -------------------------------------------------------------------------
  await store.close()
  const checkStart = performance.now()
  store = await openStore({ ...openOptions, worker: false })
  // Beside the store, as it reads its storage: under the record codec.
  const adapter = await openSealed(createFsAdapter({ dir }), { compressor: { deflate: (b) => deflateRawSync(b), inflate: (b) => inflateRawSync(b) } })
  const expectedEvents = [...tracked.values()].reduce((n, t) => n + t.len, 0)
  const report = await store.verify()
  if (report.damaged.length > 0) problems.push(`verify found damage: ${JSON.stringify(report.damaged.slice(0, 5))}`)
  if (report.sessions !== tracked.size) problems.push(`verify counted ${report.sessions} sessions, ${tracked.size} were created`)
  if (report.events !== expectedEvents) problems.push(`verify counted ${report.events} events, ${expectedEvents} were acknowledged`)

  const stored = new Map<string, SessionEvent[]>()
  const eventsOf = async (id: string): Promise<SessionEvent[]> => {
    let events = stored.get(id)
    if (!events) {
      events = []
      for await (const page of adapter.readEvents(id)) events.push(...page)
      stored.set(id, events)
    }
    return events
  }
  /** What event `seq` of `id` must be, as [type, data] (data undefined: checked by type and childId). */
  const expectedAt = async (id: string, seq: number): Promise<SessionEvent | { type: string; childId?: string }> => {
    const t = tracked.get(id)!
    if (t.forkedFrom !== undefined && seq < t.seedLength) return (await eventsOf(t.forkedFrom))[seq]!
    if (t.child && seq === 0) return { type: 'subagent/descriptor' }
    const childId = t.catalog?.get(seq)
    if (childId !== undefined) return { type: 'subagent/catalog', childId }
    return { seq, ...eventAt(id, seq) }
  }
  let cold = 0
  let eventsStored = 0
  // Sources before their forks: a fork's seed is compared with its source's events.
  for (const [id, t] of tracked) {
    const events = await eventsOf(id)
    eventsStored += events.length
    if (events.length !== t.len) {
      problems.push(`${id}: ${events.length} events stored, ${t.len} acknowledged`)
      continue
    }
    for (let seq = 0; seq < events.length; seq++) {
      const want = await expectedAt(id, seq)
      const got = events[seq]!
      const same =
        'seq' in want
          ? JSON.stringify(got) === JSON.stringify(want)
          : got.type === want.type && (want.childId === undefined || (got.data as { childId?: string }).childId === want.childId)
      if (!same) {
        problems.push(`${id} seq ${seq}: stored ${JSON.stringify(got).slice(0, 200)}, expected ${JSON.stringify(want).slice(0, 200)}`)
        break
      }
    }
    const view = await store.observe(id)
    const full = await refold(adapter, id)
    if (JSON.stringify(view.projections.snapshot()) !== JSON.stringify(full)) {
      problems.push(
        `${id}: cold projections ${JSON.stringify(view.projections.snapshot()).slice(0, 200)} differ from a refold ${JSON.stringify(full).slice(0, 200)}`,
      )
    }
    await view.close()
    cold++
    if (t.forkedFrom === undefined && !t.child && stored.size > 2000) stored.clear() // keep the check's memory bounded
  }
  await adapter.close()
  await store.close()
  const verifySeconds = Math.round((performance.now() - checkStart) / 100) / 10
  log(
    `check: verify() ${report.sessions} sessions, ${report.events} events, ${report.damaged.length} damaged; ${cold} sessions read event by event and cold against a refold, in ${verifySeconds} s`,
  )
  if (!options.keep && !options.dir) await rm(dir, { recursive: true, force: true })

  const values = [...tracked.values()]
  const result: SoakResult = {
    ok: problems.length === 0,
    problems,
    seconds: Math.round(elapsed * 10) / 10,
    rootSessions: roots,
    writers: writerCount,
    sessions: { total: tracked.size, children: values.filter((t) => t.child).length, forks: values.filter((t) => t.forkedFrom !== undefined).length },
    appends,
    eventsWritten,
    eventsStored,
    heap,
    heapAfterMB: after.heapUsedMB,
    heapRatio,
    gc: gc !== undefined,
    verify: { sessions: report.sessions, events: report.events, damaged: report.damaged.length },
    coldReadsChecked: cold,
    verifySeconds,
  }
  log(result.ok ? 'soak: OK' : `soak: FAILED\n  ${problems.slice(0, 20).join('\n  ')}`)
  return result
}

// ---- command line ----------------------------------------------------------------------

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2)
  const num = (name: string): number | undefined => {
    const i = args.indexOf(`--${name}`)
    if (i < 0) return undefined
    const v = Number(args[i + 1])
    if (!Number.isFinite(v) || v <= 0) {
      console.error(`--${name} needs a positive number`)
      process.exit(2)
    }
    return v
  }
  const dirAt = args.indexOf('--dir')
  const json = args.includes('--json')
  const result = await runSoak({
    seconds: num('seconds'),
    sessions: num('sessions'),
    writers: num('writers'),
    interval: num('interval'),
    worker: args.includes('--worker'),
    keep: args.includes('--keep'),
    dir: dirAt >= 0 ? args[dirAt + 1] : undefined,
    log: json ? (line) => console.error(line) : undefined,
  })
  if (json) console.log(JSON.stringify(result))
  process.exit(result.ok ? 0 : 1)
}
