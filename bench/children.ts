// listChildren benchmark of the engine on the fs adapter (npm run bench:children).
//   (1) listChildren of 1,000 COLD children (each released with its close checkpoint), from
//       engines that never opened them, against an identical copy of the store without the
//       checkpoints (every child refolded); on a fresh engine + adapter per run and on a warm one.
//   (2) listChildren of 1,000 LIVE children (open for writing in the spawning engine) against (1).
// One untimed pass with counters on the adapter checks what a listing reads (and that it writes
// nothing). Ratios pair runs of the same round (rotating), after a warm-up round.
import * as fs from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createFsAdapter, type FsPromises } from '../src/backends/fs'
import { CHECKPOINT_FILE, folderOf, sessionsDir } from '../src/backends/fs/layout'
import type { StorageAdapter } from '../src/storage/types'
import type { SubagentListEntry } from '../src/core/children'
import type { SessionId } from '../src/core/model'
import { TURN_END, TURN_START } from '../src/core/units/payloads'
import { Engine } from '../src/engine'
import { benchRoot, checkSettings, env, finishBench, fmt, ratio, summarize, type Figure, type Summary } from './stats'

const CONFIG = {
  children: env('BENCH_CHILDREN', 1_000),
  appEvents: 20, // per child, between its descriptor and its turn/start + turn/end
  buildConcurrency: env('BENCH_BUILD_CONCURRENCY', 8),
  rounds: env('BENCH_ROUNDS', 15),
  /** BENCH_REFOLD=0: no refold copy (no checkpoints) and no refold scenarios; the full suite sets it at 10,000 children. */
  refold: process.env.BENCH_REFOLD !== '0',
  /** BENCH_CLOSE_LIVE=0: the live engine is left open at the end (closing it checkpoints every child); the process exits. */
  closeLive: process.env.BENCH_CLOSE_LIVE !== '0',
}

const log = (msg: string) => process.stderr.write(`${msg}\n`)

const TIME0 = 1_700_000_000_000
const COLD_PARENT: SessionId = 'parent-cold'
const LIVE_PARENT: SessionId = 'parent-live'
const childId = (tag: string, i: number): SessionId => `${tag}-child-${String(i).padStart(5, '0')}`
const TEXT = 'the agent read the file and proposed a patch to the parser so that the tests pass again'

/** The child's initial events (its descriptor is added by spawn): 20 app events, then one turn. */
function childEvents(i: number): { type: string; time: number; data?: unknown }[] {
  const t = TIME0 + i * 1_000
  return [
    { type: TURN_START, time: t },
    ...Array.from({ length: CONFIG.appEvents }, (_, k) => ({ type: 'app/note', time: t + 1 + k, data: { k, text: TEXT } })),
    { type: TURN_END, time: t + 1 + CONFIG.appEvents },
  ]
}

interface IdCounts {
  getSession: number
  getCheckpoint: number
  readEvents: number
  events: number
}

interface Counts {
  perId: Map<SessionId, IdCounts>
  /** createSession, append, putCheckpoint, deleteCheckpoint, deleteSession: listing must make none. */
  writes: number
  listSessions: number
  /** File-system calls the adapter made (fs counters only where the adapter was given countingFs). */
  fsOpen: number
  fsReadFile: number
  fsStat: number
}

const newCounts = (): Counts => ({ perId: new Map(), writes: 0, listSessions: 0, fsOpen: 0, fsReadFile: 0, fsStat: 0 })

function idCounts(c: Counts, id: SessionId): IdCounts {
  let x = c.perId.get(id)
  if (!x) c.perId.set(id, (x = { getSession: 0, getCheckpoint: 0, readEvents: 0, events: 0 }))
  return x
}

/** A thin wrapper over an adapter counting reads per session and every write. */
function countingAdapter(inner: StorageAdapter, c: Counts): StorageAdapter {
  return {
    kind: inner.kind,
    createSession: (header, seed) => (c.writes++, inner.createSession(header, seed)),
    append: (id, batch) => (c.writes++, inner.append(id, batch)),
    readEvents(id, range) {
      const x = idCounts(c, id)
      x.readEvents++
      const pages = inner.readEvents(id, range)
      return (async function* () {
        for await (const page of pages) {
          x.events += page.length
          yield page
        }
      })()
    },
    getSession: (id) => (idCounts(c, id).getSession++, inner.getSession(id)),
    listIds: (o) => inner.listIds(o),
    listSessions: (options) => (c.listSessions++, inner.listSessions(options)),
    deleteSession: (id) => (c.writes++, inner.deleteSession(id)),
    getCheckpoint: (id) => (idCounts(c, id).getCheckpoint++, inner.getCheckpoint(id)),
    putCheckpoint: (id, row) => (c.writes++, inner.putCheckpoint(id, row)),
    deleteCheckpoint: (id) => (c.writes++, inner.deleteCheckpoint(id)),
    close: () => inner.close(),
  }
}

/** node:fs/promises with counters on the calls a cold read makes. */
function countingFs(c: Counts): FsPromises {
  const open = ((...args: Parameters<typeof fsp.open>) => (c.fsOpen++, fsp.open(...args))) as typeof fsp.open
  const readFile = ((...args: Parameters<typeof fsp.readFile>) => (c.fsReadFile++, fsp.readFile(...args))) as typeof fsp.readFile
  const stat = ((...args: Parameters<typeof fsp.stat>) => (c.fsStat++, fsp.stat(...args))) as typeof fsp.stat
  return { open, readFile, stat, writeSync: fs.writeSync, mkdir: fsp.mkdir, readdir: fsp.readdir, rename: fsp.rename, rm: fsp.rm, unlink: fsp.unlink }
}

/** Runs `fn(i)` for i in [0, n) with at most `k` in flight. */
async function pool(n: number, k: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < n) await fn(next++)
  }
  await Promise.all(Array.from({ length: Math.min(k, n) }, worker))
}

/** Spawns the children of `parentId` in `engine`; `release`: each child is released right after its spawn. */
async function spawnTree(engine: Engine, parentId: SessionId, tag: string, release: boolean): Promise<SessionId[]> {
  await engine.createSession({ id: parentId, cwd: '/repo' })
  const ids: SessionId[] = []
  await pool(CONFIG.children, CONFIG.buildConcurrency, async (i) => {
    const id = childId(tag, i)
    await engine.spawn(parentId, { mode: i % 3 === 0 ? 'continuable' : 'one-shot', label: `worker ${i}`, id, events: childEvents(i) })
    ids.push(id)
    if (release) await engine.release(id, 'writer')
  })
  return ids
}

/** Checks a listing (outside timing): every child once, in catalog order, with the expected activity. */
function check(rows: SubagentListEntry[], ids: ReadonlySet<SessionId>, activity: 'running' | 'inactive', what: string): void {
  if (rows.length !== ids.size) throw new Error(`${what}: ${rows.length} rows, expected ${ids.size}`)
  const seen = new Set<SessionId>()
  for (const r of rows) {
    if (r.kind !== 'child') throw new Error(`${what}: a ${r.reason} row for ${r.id}`)
    if (!ids.has(r.id) || seen.has(r.id)) throw new Error(`${what}: unexpected row ${r.id}`)
    if (r.activity !== activity) throw new Error(`${what}: ${r.id} is ${r.activity}, expected ${activity}`)
    if (r.hasChildren || r.depth !== 0) throw new Error(`${what}: ${r.id} has hasChildren ${r.hasChildren}, depth ${r.depth}`)
    seen.add(r.id)
  }
}

/** A listing on a fresh engine + adapter: their creation is inside the timed part, their close is not. */
async function listFresh(dir: string, parentId: SessionId): Promise<{ ms: number; rows: SubagentListEntry[] }> {
  const t0 = performance.now()
  const engine = new Engine({ storage: createFsAdapter({ dir }) })
  const rows = await engine.listChildren(parentId)
  const ms = performance.now() - t0
  await engine.close()
  return { ms, rows }
}

async function listWarm(engine: Engine, parentId: SessionId): Promise<{ ms: number; rows: SubagentListEntry[] }> {
  const t0 = performance.now()
  const rows = await engine.listChildren(parentId)
  return { ms: performance.now() - t0, rows }
}

interface Diagnostic {
  children: number
  /** Per child: min and max over the children, and the mean. */
  perChild: Record<keyof IdCounts, { min: number; max: number; mean: number }>
  parent: IdCounts
  /** Sessions read that are neither the parent nor one of its children (must be none). */
  others: number
  writes: number
  listSessions: number
  /** fs calls per child (parent's included in the total), when counted. */
  fs?: { open: number; readFile: number; stat: number }
}

function diagnosticOf(c: Counts, parentId: SessionId, ids: readonly SessionId[], withFs: boolean): Diagnostic {
  const zero: IdCounts = { getSession: 0, getCheckpoint: 0, readEvents: 0, events: 0 }
  const keys = Object.keys(zero) as (keyof IdCounts)[]
  const per = ids.map((id) => c.perId.get(id) ?? zero)
  const perChild = Object.fromEntries(
    keys.map((k) => {
      const v = per.map((x) => x[k])
      return [k, { min: Math.min(...v), max: Math.max(...v), mean: v.reduce((a, b) => a + b, 0) / v.length }]
    }),
  ) as Diagnostic['perChild']
  const known = new Set([parentId, ...ids])
  const d: Diagnostic = {
    children: ids.length,
    perChild,
    parent: c.perId.get(parentId) ?? zero,
    others: [...c.perId.keys()].filter((id) => !known.has(id)).length,
    writes: c.writes,
    listSessions: c.listSessions,
  }
  if (withFs) d.fs = { open: c.fsOpen / ids.length, readFile: c.fsReadFile / ids.length, stat: c.fsStat / ids.length }
  return d
}

/** One untimed listing on a fresh engine over a counting adapter (and counting fs). */
async function diagnoseCold(dir: string, parentId: SessionId, ids: readonly SessionId[]): Promise<Diagnostic> {
  const c = newCounts()
  const engine = new Engine({ storage: countingAdapter(createFsAdapter({ dir, fs: countingFs(c) }), c) })
  try {
    check(await engine.listChildren(parentId), new Set(ids), 'inactive', `diagnostic of ${dir}`)
    return diagnosticOf(c, parentId, ids, true)
  } finally {
    await engine.close()
  }
}

type Scenario = 'coldFresh' | 'refoldFresh' | 'coldWarm' | 'refoldWarm' | 'live'

async function main(): Promise<void> {
  const started = performance.now()
  const { root, cleanup } = await benchRoot('sessionfold-bench-children-')
  let liveEngine: Engine | undefined
  const warm: Engine[] = []
  try {
    checkSettings(CONFIG)
    const N = CONFIG.children
    // The cold tree is kept under bench/.tmp/children between runs (listing never writes: the
    // checks below prove it), keyed by what shapes it.
    const cacheKey = JSON.stringify({ format: 1, children: N, appEvents: CONFIG.appEvents })
    const coldDir = fileURLToPath(new URL(`./.tmp/children/cold-${N}`, import.meta.url))
    const marker = join(coldDir, 'ready.json')
    const refoldDir = join(root, 'refold')
    const liveDir = join(root, 'live')
    log(`temp dir ${root}`)

    // ---- build: cold tree ----
    const t0 = performance.now()
    let coldIds: SessionId[]
    let buildColdMs: number
    const cached = fs.existsSync(marker) ? (JSON.parse(fs.readFileSync(marker, 'utf8')) as { key: string; ids: SessionId[]; ms: number }) : undefined
    if (cached?.key === cacheKey) {
      coldIds = cached.ids
      buildColdMs = cached.ms
      log(`reusing the ${fmt(N, 0)} cold children cached in ${coldDir} (built in ${fmt(buildColdMs, 0)} ms)`)
    } else {
      fs.rmSync(coldDir, { recursive: true, force: true })
      const builder = new Engine({ storage: createFsAdapter({ dir: coldDir, durability: 'relaxed' }) })
      coldIds = await spawnTree(builder, COLD_PARENT, 'c', true)
      await builder.release(COLD_PARENT, 'writer')
      await builder.close()
      buildColdMs = performance.now() - t0
      fs.writeFileSync(marker, JSON.stringify({ key: cacheKey, ids: coldIds, ms: buildColdMs }))
      log(`built ${fmt(N, 0)} cold children (durability 'relaxed') in ${fmt(buildColdMs, 0)} ms`)
    }

    // ---- build: refold copy (same bytes, every child's checkpoint deleted) ----
    const withRefold = CONFIG.refold
    const t1 = performance.now()
    if (withRefold) {
      fs.cpSync(coldDir, refoldDir, { recursive: true })
      const deleter = createFsAdapter({ dir: refoldDir })
      await pool(N, 16, async (i) => deleter.deleteCheckpoint(coldIds[i]!))
      await deleter.close()
      for (const id of [coldIds[0]!, coldIds[N - 1]!]) {
        const folder = fs.readdirSync(sessionsDir(refoldDir)).find((f) => f === folderOf(id))
        if (!folder || fs.existsSync(join(sessionsDir(refoldDir), folder, CHECKPOINT_FILE))) throw new Error(`checkpoint of ${id} was not deleted`)
        if (!fs.existsSync(join(sessionsDir(coldDir), folder, CHECKPOINT_FILE))) throw new Error(`cold child ${id} has no checkpoint`)
      }
    }
    const copyMs = performance.now() - t1
    if (withRefold) log(`copied the store and deleted ${fmt(N, 0)} checkpoints in ${fmt(copyMs, 0)} ms`)

    // ---- build: live tree (default durability: this engine stays open and is measured) ----
    const liveCounts = newCounts()
    const t2 = performance.now()
    liveEngine = new Engine({ storage: countingAdapter(createFsAdapter({ dir: liveDir }), liveCounts) })
    const liveIds = await spawnTree(liveEngine, LIVE_PARENT, 'l', false)
    const buildLiveMs = performance.now() - t2
    log(`built ${fmt(N, 0)} live children (durability 'strict') in ${fmt(buildLiveMs, 0)} ms`)
    // The parent's last catalog facts are checkpointed by the engine's quiet-period timer (2 s by
    // default): let it fire now, so that no write of the engine's own lands during the rounds.
    await new Promise((resolve) => setTimeout(resolve, 2_500))

    const coldSet = new Set(coldIds)
    const liveSet = new Set(liveIds)
    const engineL = liveEngine
    const coldWarmEngine = new Engine({ storage: createFsAdapter({ dir: coldDir }) })
    const refoldWarmEngine = new Engine({ storage: createFsAdapter({ dir: withRefold ? refoldDir : coldDir }) })
    warm.push(coldWarmEngine, refoldWarmEngine)

    // ---- rounds ----
    const allSteps: [Scenario, () => Promise<number>][] = [
      [
        'coldFresh',
        async () => {
          const { ms, rows } = await listFresh(coldDir, COLD_PARENT)
          check(rows, coldSet, 'inactive', 'cold, fresh engine')
          return ms
        },
      ],
      [
        'refoldFresh',
        async () => {
          const { ms, rows } = await listFresh(refoldDir, COLD_PARENT)
          check(rows, coldSet, 'inactive', 'refold, fresh engine')
          return ms
        },
      ],
      [
        'coldWarm',
        async () => {
          const { ms, rows } = await listWarm(coldWarmEngine, COLD_PARENT)
          check(rows, coldSet, 'inactive', 'cold, warm engine')
          return ms
        },
      ],
      [
        'refoldWarm',
        async () => {
          const { ms, rows } = await listWarm(refoldWarmEngine, COLD_PARENT)
          check(rows, coldSet, 'inactive', 'refold, warm engine')
          return ms
        },
      ],
      [
        'live',
        async () => {
          const { ms, rows } = await listWarm(engineL, LIVE_PARENT)
          check(rows, liveSet, 'running', 'live')
          return ms
        },
      ],
    ]
    const steps = allSteps.filter(([name]) => withRefold || (name !== 'refoldFresh' && name !== 'refoldWarm'))
    const samples: Record<Scenario, number[]> = { coldFresh: [], refoldFresh: [], coldWarm: [], refoldWarm: [], live: [] }
    const liveWritesBefore = liveCounts.writes
    liveCounts.perId.clear()
    // Round 0 is a warm-up (JIT, page cache, the warm engines' adapters opening every log) and is not recorded.
    for (let r = 0; r <= CONFIG.rounds; r++) {
      const warmUp = r === 0
      // Rotate the order, and reverse it every other round, so drift favours no scenario.
      const k = r % steps.length
      const order = [...steps.slice(k), ...steps.slice(0, k)]
      if (r % 2 === 1) order.reverse()
      const line: string[] = []
      for (const [name, step] of order) {
        const ms = await step()
        if (!warmUp) samples[name].push(ms)
        line.push(`${name} ${fmt(ms)}`)
      }
      log(`${warmUp ? 'warm-up' : `round ${r}/${CONFIG.rounds}`}: ${line.join(', ')} ms`)
    }
    const liveDiag = diagnosticOf(liveCounts, LIVE_PARENT, liveIds, false)
    liveDiag.writes = liveCounts.writes - liveWritesBefore
    for (const e of warm.splice(0)) await e.close()

    log('diagnostics (untimed): one listing per cold store on a fresh engine with counters on the adapter')
    const coldDiag = await diagnoseCold(coldDir, COLD_PARENT, coldIds)
    const refoldDiag = withRefold ? await diagnoseCold(refoldDir, COLD_PARENT, coldIds) : undefined

    if (CONFIG.closeLive) {
      const releaseT = performance.now()
      await liveEngine.close()
      liveEngine = undefined
      log(`closed the live engine (${fmt(N + 1, 0)} close checkpoints) in ${fmt(performance.now() - releaseT, 0)} ms`)
    }

    // ---- report ----
    const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)])) as Record<Scenario, Summary>
    const ratios = {
      refoldVsCheckpointFresh: ratio('refold / checkpointed, fresh engine', s.refoldFresh, s.coldFresh),
      refoldVsCheckpointWarm: ratio('refold / checkpointed, warm engine', s.refoldWarm, s.coldWarm),
      coldFreshVsLive: ratio('cold (checkpointed, fresh engine) / live', s.coldFresh, s.live),
      coldWarmVsLive: ratio('cold (checkpointed, warm engine) / live', s.coldWarm, s.live),
    }
    const eventsPerChild = 1 + CONFIG.appEvents + 2

    const checks = [
      {
        name: 'checkpointed cold child: 1 checkpoint read, 0 event reads',
        pass:
          coldDiag.perChild.getCheckpoint.min === 1 &&
          coldDiag.perChild.getCheckpoint.max === 1 &&
          coldDiag.perChild.readEvents.max === 0 &&
          coldDiag.perChild.events.max === 0,
      },
      ...(refoldDiag
        ? [
            {
              name: `refold cold child: reads its ${eventsPerChild} events once`,
              pass:
                refoldDiag.perChild.readEvents.min === 1 &&
                refoldDiag.perChild.readEvents.max === 1 &&
                refoldDiag.perChild.events.min === eventsPerChild &&
                refoldDiag.perChild.events.max === eventsPerChild,
            },
          ]
        : []),
      {
        name: 'live child: 0 reads',
        pass:
          liveDiag.perChild.getSession.max === 0 &&
          liveDiag.perChild.getCheckpoint.max === 0 &&
          liveDiag.perChild.readEvents.max === 0 &&
          liveDiag.parent.getSession === 0,
      },
      {
        name: 'listing writes nothing, never enumerates the store',
        pass: [coldDiag, refoldDiag, liveDiag].filter((d) => d !== undefined).every((d) => d.writes === 0 && d.listSessions === 0 && d.others === 0),
      },
    ]
    const labels: Record<Scenario, string> = {
      coldFresh: 'cold, fresh checkpoints, fresh engine',
      refoldFresh: 'cold, no checkpoints (refold), fresh engine',
      coldWarm: 'cold, fresh checkpoints, warm engine',
      refoldWarm: 'cold, no checkpoints (refold), warm engine',
      live: 'live (open for writing in the spawning engine)',
    }
    finishBench(
      'children',
      `sessionfold listChildren benchmark: fs adapter, ${fmt(N, 0)} children of one parent, ${eventsPerChild} events each`,
      (Object.keys(labels) as Scenario[]).map((k): Figure => [labels[k], s[k], 'ms', 2]),
      Object.values(ratios),
      {
        config: { ...CONFIG, eventsPerChild },
        build: { coldMs: buildColdMs, coldDurability: 'relaxed', copyAndDeleteCheckpointsMs: copyMs, liveMs: buildLiveMs, liveDurability: 'strict' },
        listings: { unit: 'ms', ...s },
        ratios: Object.values(ratios),
        diagnostics: { cold: coldDiag, refold: refoldDiag, live: liveDiag },
        checks: checks.map((c) => ({ name: c.name, result: c.pass ? 'PASS' : 'FAIL' })),
        totalSeconds: (performance.now() - started) / 1000,
      },
    )
    for (const c of checks) console.log(`check: ${c.name}: ${c.pass ? 'PASS' : 'FAIL'}`)
    if (checks.some((c) => !c.pass)) process.exitCode = 1
  } finally {
    for (const e of warm) await e.close().catch(() => {})
    if (CONFIG.closeLive) await liveEngine?.close().catch(() => {})
    cleanup()
  }
}

main().then(
  () => {
    // An engine left open keeps timers: end the process (results are written).
    if (!CONFIG.closeLive) process.exit(process.exitCode ?? 0)
  },
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
