// A chaos run of HTTP sync, seeded and repeatable (test/reliability/sync-chaos.test.ts runs it
// short, `npm run chaos` long): three devices and a server in a process of its own, a fault
// proxy between them, a seeded workload on every device and the server killed and started again
// on a schedule; then the faults stop, everything settles, and every side is read and checked
// (./checks.ts). The seed decides the workload, the proxy's decisions (per device and request
// number) and the restarts; it is printed in every failure.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Store } from '../../../src/index-node'
import { FAULT_KINDS, startFaultProxy, type FaultKind, type FaultProxy, type ProxyStats } from '../fault-proxy'
import { seeded } from '../seeded'
import { checkSides, logOf, type CheckResult, type Reported, type Side } from './checks'
import { Device, type DeviceKind } from './devices'
import { Ledger } from './ledger'
import { startChaosServer, type ChaosServer, type ServerKind } from './server'
import { runWorkload, type WorkloadCounts } from './workload'

export interface ChaosOptions {
  seed: number
  /** How long the devices write under faults. */
  seconds: number
  server: ServerKind
  /** Mean time between server restarts (default 6 s); each is 0.5x to 1.5x of it. */
  restartEveryMs?: number
  /** How long everything may take to settle once the faults stop (default 90 s). */
  settleMs?: number
  weights?: Readonly<Record<FaultKind, number>>
  /** Writes every side's logs (as tags), the conflicts and the writers' records to this JSON file, for a post-mortem. */
  dump?: string
  /** Progress lines (default: none). */
  log?: (line: string) => void
}

export interface ChaosSummary {
  seed: number
  server: ServerKind
  seconds: number
  requests: number
  byDevice: Record<string, number>
  faults: Record<FaultKind, number>
  refused: number
  badGateway: number
  restarts: number
  written: { appends: number; events: number; acked: number }
  /** Sessions deleted (by any device): none of them may be left anywhere. */
  deleted: number
  workload: Record<string, WorkloadCounts>
  sessions: number
  /** Conflicts reported, resolved by a fork (forked: the forks made), in which sessions. */
  conflicts: { reported: number; forked: number; sessions: string[] }
  spliced: number
  replicationErrors: Record<string, Record<string, number>>
  settledMs: number | undefined
}

export interface ChaosResult {
  problems: string[]
  summary: ChaosSummary
}

const DEVICES: readonly [string, DeviceKind][] = [
  ['fs1', 'fs'],
  ['fs2', 'fs'],
  ['idb', 'indexeddb'],
]
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => {})
  const { seed } = options
  const temp = await mkdtemp(join(tmpdir(), 'sessionfold-chaos-'))
  const problems: string[] = []
  const ledger = new Ledger()
  let proxy: FaultProxy | undefined
  let server: ChaosServer | undefined
  const devices: Device[] = []
  let restarts = 0
  let settledMs: number | undefined
  let check: CheckResult | undefined
  const workload: Record<string, WorkloadCounts> = {}
  try {
    proxy = await startFaultProxy({ seed, devices: DEVICES.map(([name]) => name), ...(options.weights ? { weights: options.weights } : {}) })
    server = await startChaosServer(options.server, temp)
    proxy.setUpstream(await server.start())
    for (const [name, kind] of DEVICES) devices.push(await Device.open(name, kind, temp, proxy.url(name)))
    for (const d of devices) d.connect()
    log(`chaos: seed ${seed}, ${options.server} server, ${options.seconds} s of faults; devices ${DEVICES.map(([n, k]) => `${n} (${k})`).join(', ')}`)

    const ends = Date.now() + options.seconds * 1000
    const running = () => Date.now() < ends
    const restarting = (async () => {
      const r = seeded(seed, 'restarts')
      const every = options.restartEveryMs ?? 6000
      for (;;) {
        const at = Date.now() + r.int(Math.round(every / 2), Math.round(every * 1.5))
        while (Date.now() < at && running()) await sleep(Math.min(200, at - Date.now()))
        if (!running()) return
        proxy!.setUpstream(undefined)
        await server!.kill()
        await sleep(r.int(0, 1000))
        proxy!.setUpstream(await server!.start())
        restarts++
        log(`chaos: server restarted (${restarts}), ${proxy!.stats.requests} requests so far, ${ledger.acked().length} events acknowledged`)
      }
    })()
    const counts = await Promise.all(devices.map((device) => runWorkload({ seed, device, ledger, proxy: proxy!, running, problems })))
    for (const [i, d] of devices.entries()) workload[d.name] = counts[i]!
    await restarting.catch((err: unknown) => problems.push(`restarting the server failed: ${String(err)}; its stderr: ${server?.stderr()}`))

    // The faults stop; everything must settle.
    proxy.calm()
    for (const d of devices) d.connect()
    log(`chaos: faults stopped after ${proxy.stats.requests} requests; settling`)
    settledMs = await settle(devices, proxy, options.settleMs ?? 90_000)
    if (settledMs === undefined) {
      problems.push(
        `did not settle within ${(options.settleMs ?? 90_000) / 1000} s of the faults stopping: ${devices.map((d) => `${d.name} ${JSON.stringify({ ...d.state, conflicts: d.state?.conflicts.length })}`).join('; ')}`,
      )
    }
    log(`chaos: ${settledMs === undefined ? 'not settled' : `settled in ${(settledMs / 1000).toFixed(1)} s`}; reading every side`)
    for (const d of devices) await d.disconnect()
    await proxy.close()
    await server.kill()

    // The server first: the others are told against it.
    const sides: Side[] = []
    const serverStore = await server.open()
    try {
      sides.push(await readSide('server', serverStore))
    } finally {
      await serverStore.close()
    }
    for (const d of devices) sides.push(await readSide(d.name, d.store))
    const reported: Reported[] = devices.flatMap((d) => [...d.conflicts.values()].map((conflict) => ({ device: d.name, conflict })))
    check = checkSides(sides, ledger, reported)
    if (options.dump) {
      const logs = Object.fromEntries(sides.map((side) => [side.name, Object.fromEntries([...side.logs].map(([id, l]) => [id, l.tags]))]))
      await writeFile(options.dump, JSON.stringify({ seed, logs, reported, written: [...ledger.byTag.values()] }, null, 1))
    }
    problems.push(...ledger.problems, ...check.problems)
  } catch (err) {
    problems.push(`the run failed: ${(err as Error)?.stack ?? String(err)}${server ? `; the server's stderr: ${server.stderr()}` : ''}`)
  } finally {
    for (const d of devices) await d.close().catch((err: unknown) => problems.push(`closing ${d.name} failed: ${String(err)}`))
    await proxy?.close().catch(() => {})
    await server?.stop().catch(() => {})
    await rm(temp, { recursive: true, force: true }).catch(() => {})
  }
  if (proxy) problems.push(...proxy.stats.errors.map((e) => `the fault proxy failed: ${e}`))
  const stats: ProxyStats = proxy?.stats ?? {
    requests: 0,
    byDevice: {},
    faults: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>,
    refused: 0,
    badGateway: 0,
    errors: [],
  }
  const appends = Object.values(workload).reduce((n, c) => n + c.appends, 0)
  const events = Object.values(workload).reduce((n, c) => n + c.events, 0)
  return {
    problems,
    summary: {
      seed,
      server: options.server,
      seconds: options.seconds,
      requests: stats.requests,
      byDevice: stats.byDevice,
      faults: stats.faults,
      refused: stats.refused,
      badGateway: stats.badGateway,
      restarts,
      written: { appends, events, acked: ledger.acked().length },
      deleted: ledger.deleted.size,
      workload,
      sessions: check?.sessions ?? 0,
      conflicts: {
        reported: devices.reduce((n, d) => n + d.conflicts.size, 0),
        forked: new Set(devices.flatMap((d) => [...d.conflicts.values()].map((c) => c.forkedAs).filter((f) => f !== undefined))).size,
        sessions: check?.conflicted ?? [],
      },
      spliced: check?.spliced ?? 0,
      replicationErrors: Object.fromEntries(devices.map((d) => [d.name, Object.fromEntries(d.errors)])),
      settledMs,
    },
  }
}

/**
 * Waits until every replication is online with nothing pending and nothing has moved (no
 * request through the proxy, no count of any replication) for a while; resolves with how long
 * it took, or undefined at the deadline.
 */
async function settle(devices: readonly Device[], proxy: FaultProxy, timeoutMs: number): Promise<number | undefined> {
  const started = Date.now()
  const QUIET_MS = 2500
  let last = ''
  let since = Date.now()
  let synced = false
  while (Date.now() - started < timeoutMs) {
    const states = devices.map((d) => d.state)
    const ready = proxy.busy() === 0 && states.every((s) => s?.status === 'online' && s.pending === 0)
    const now = JSON.stringify([proxy.stats.requests, states.map((s) => s && [s.status, s.pending, s.pushed, s.pulled, s.conflicts.length])])
    if (now !== last) {
      last = now
      since = Date.now()
    } else if (ready && Date.now() - since >= QUIET_MS) {
      if (synced) return Date.now() - started
      // A round begun now pushes whatever is left and waits for the live stream to catch up.
      const left = Math.max(1000, timeoutMs - (Date.now() - started))
      synced = await Promise.race([Promise.all(devices.map((d) => d.replication!.whenSynced())).then(() => true), sleep(left).then(() => false)]).catch(
        () => false,
      )
      since = Date.now()
      last = ''
    }
    await sleep(100)
  }
  return undefined
}

/** Every session of a store with its events, read through the public API. */
async function readSide(name: string, store: Store): Promise<Side> {
  const logs: Side['logs'] = new Map()
  for (let after: string | undefined; ; ) {
    const page = await store.listSessions({ ...(after ? { after } : {}), limit: 1000 })
    for (const header of page) {
      const view = await store.observe(header.id)
      try {
        const events = []
        for await (const e of view.events()) events.push(e)
        logs.set(header.id, logOf(header, events))
      } finally {
        await view.close()
      }
    }
    if (page.length < 1000) break
    after = page.at(-1)!.id
  }
  return { name, logs }
}

/** The run's figures and problems, for people; the seed first, so a failure can be run again. */
export function formatChaos(result: ChaosResult): string {
  const s = result.summary
  const faults = Object.entries(s.faults)
    .filter(([k]) => k !== 'pass')
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')
  const lines = [
    `chaos run: seed ${s.seed}, ${s.server} server, ${s.seconds} s of faults (again: npm run chaos -- --seconds ${s.seconds} --seed ${s.seed} --server ${s.server})`,
    `  requests ${s.requests} (${Object.entries(s.byDevice)
      .map(([d, n]) => `${d} ${n}`)
      .join(', ')}); passed ${s.faults.pass}; faults: ${faults}; connections refused while offline ${s.refused}; answered 502 ${s.badGateway}`,
    `  server restarts ${s.restarts}; appends ${s.written.appends} (${s.written.events} events, ${s.written.acked} acknowledged); sessions ${s.sessions}, ${s.deleted} deleted`,
    `  conflicts reported ${s.conflicts.reported} (forks made ${s.conflicts.forked}) in ${s.conflicts.sessions.length} sessions${s.conflicts.sessions.length ? ` (${s.conflicts.sessions.join(', ')})` : ''}; logs holding two histories ${s.spliced}`,
    `  replication errors seen: ${Object.entries(s.replicationErrors)
      .map(([d, e]) => `${d} ${JSON.stringify(e)}`)
      .join(', ')}`,
    `  ${s.settledMs === undefined ? 'did not settle' : `settled ${(s.settledMs / 1000).toFixed(1)} s after the faults stopped`}`,
  ]
  if (result.problems.length === 0) lines.push('  no problems')
  else lines.push(`  ${result.problems.length} problems (seed ${s.seed}):`, ...result.problems.map((p) => `  - [seed ${s.seed}] ${p}`))
  return lines.join('\n')
}
