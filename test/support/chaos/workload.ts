// One device's seeded workload in the chaos run: it writes to sessions of its own and to shared
// ones (created on one device, reaching the others through the server), appending to a shared
// session only while it holds it open for writing here; it goes offline and comes back, and
// closes and reopens its replication. Shared sessions are few and held open for a while, so
// devices often write to one at once, each on the copy it has: the concurrent histories sync
// must keep apart (the second to reach the server moves its events to a fork, which is shared
// like any other session and may be written to, and forked, in turn). It deletes sessions too, its own and shared ones (which other devices may be
// writing to meanwhile): a delete must reach every side (DESIGN §15).
import { isSessionfoldError } from '../../../src/index-node'
import type { SessionId } from '../../../src/core/model'
import type { FaultProxy } from '../fault-proxy'
import { seeded, type Random } from '../seeded'
import type { Device } from './devices'
import { WriterHandle, type Ledger } from './ledger'

export const SHARED_PREFIX = 'u1-sh-'
const MAX_OWN = 4
const MAX_SHARED_MADE = 2

const ACTIONS = {
  'append-own': 20,
  'new-own': 3,
  'new-shared': 3,
  'open-shared': 22,
  'append-shared': 38,
  close: 8,
  offline: 2,
  reconnect: 2,
  'delete-own': 2,
  'delete-shared': 1,
} as const
type Action = keyof typeof ACTIONS

export interface WorkloadCounts {
  actions: Record<Action, number>
  appends: number
  events: number
  /** openSession or deleteSession refused SESSION_LOCKED (the replication was writing to it here). */
  locked: number
  /** Sessions this device deleted. */
  deleted: number
}

export interface WorkloadContext {
  seed: number
  device: Device
  ledger: Ledger
  proxy: FaultProxy
  /** Whether to go on. */
  running: () => boolean
  /** Where failures of the workload itself go. */
  problems: string[]
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export async function runWorkload(ctx: WorkloadContext): Promise<WorkloadCounts> {
  const { device, ledger } = ctx
  const me = device.name
  const r = seeded(ctx.seed, 'workload', me)
  const counts: WorkloadCounts = {
    actions: Object.fromEntries(Object.keys(ACTIONS).map((k) => [k, 0])) as Record<Action, number>,
    appends: 0,
    events: 0,
    locked: 0,
    deleted: 0,
  }
  const own: SessionId[] = []
  let ownMade = 0
  let sharedMade = 0
  let n = 0
  /** Open handles, with how many more actions each stays open. */
  const open = new Map<SessionId, { handle: WriterHandle; left: number }>()
  const offlineTimers = new Set<NodeJS.Timeout>()

  const append = async (h: WriterHandle, rr: Random) => {
    const ns = Array.from({ length: rr.int(1, 3) }, () => n++)
    // Now and then a bigger batch, so that bodies are cut in the middle of an event.
    await h.append(ns, rr.chance(0.1) ? rr.int(500, 4000) : 0)
    counts.appends++
    counts.events += ns.length
  }
  const hold = async (id: SessionId, make: () => Promise<import('../../../src/index-node').Session>, left: number) => {
    const handle = await WriterHandle.open(await make(), me, ledger)
    open.set(id, { handle, left })
    return handle
  }
  const release = async (id: SessionId) => {
    const h = open.get(id)
    if (!h) return
    open.delete(id)
    await h.handle.close()
  }

  async function act(action: Action): Promise<void> {
    switch (action) {
      case 'new-own': {
        if (own.length >= MAX_OWN) return act('append-own')
        const id = `u1-${me}-own-${ownMade++}`
        own.push(id)
        return append(await hold(id, () => device.store.createSession({ id }), r.int(5, 30)), r)
      }
      case 'append-own': {
        if (own.length === 0) return act('new-own')
        const id = r.pick(own)
        const h = open.get(id)?.handle ?? (await hold(id, () => device.store.openSession(id), r.int(5, 30)))
        return append(h, r)
      }
      case 'new-shared': {
        if (sharedMade >= MAX_SHARED_MADE) return act('open-shared')
        const id = `${SHARED_PREFIX}${me}-${sharedMade++}`
        return append(await hold(id, () => device.store.createSession({ id }), r.int(2, 10)), r)
      }
      case 'open-shared': {
        const here = (await device.store.listSessions({ limit: 1000 })).map((h) => h.id).filter((id) => id.startsWith(SHARED_PREFIX) && !open.has(id))
        if (here.length === 0) return act(sharedMade < MAX_SHARED_MADE ? 'new-shared' : 'append-own')
        const id = r.pick(here.sort())
        let h: WriterHandle
        try {
          h = await hold(id, () => device.store.openSession(id), r.int(2, 10))
        } catch (err) {
          if (isSessionfoldError(err) && err.code === 'SESSION_LOCKED') return void counts.locked++
          if (isSessionfoldError(err) && err.code === 'SESSION_NOT_FOUND') return // deleted (a tombstone pulled) since it was listed
          throw err
        }
        return append(h, r)
      }
      case 'delete-own':
      case 'delete-shared': {
        const pool =
          action === 'delete-own'
            ? [...own]
            : (await device.store.listSessions({ limit: 1000 })).map((h) => h.id).filter((id) => id.startsWith(SHARED_PREFIX) && !open.has(id))
        if (pool.length === 0) return
        const id = r.pick(pool.sort())
        await release(id)
        ledger.deleted.set(id, me) // before: a delete that fails half way may still have gone out
        try {
          await device.store.deleteSession(id)
        } catch (err) {
          if (isSessionfoldError(err) && err.code === 'SESSION_LOCKED') {
            ledger.deleted.delete(id)
            return void counts.locked++
          }
          throw err
        }
        if (action === 'delete-own') own.splice(own.indexOf(id), 1)
        counts.deleted++
        return
      }
      case 'append-shared': {
        const shared = [...open.keys()].filter((id) => id.startsWith(SHARED_PREFIX)).sort()
        if (shared.length === 0) return act('open-shared')
        return append(open.get(r.pick(shared))!.handle, r)
      }
      case 'close': {
        if (open.size === 0) return
        return release(r.pick([...open.keys()].sort()))
      }
      case 'offline': {
        ctx.proxy.setOffline(me, true)
        const t = setTimeout(
          () => {
            offlineTimers.delete(t)
            ctx.proxy.setOffline(me, false)
          },
          r.int(500, 4000),
        )
        offlineTimers.add(t)
        return
      }
      case 'reconnect': {
        await device.disconnect()
        await sleep(r.int(0, 1000))
        return device.connect()
      }
    }
  }

  try {
    while (ctx.running()) {
      const action = r.weighted(ACTIONS)
      counts.actions[action]++
      try {
        await act(action)
      } catch (err) {
        ctx.problems.push(`${me}: ${action} failed: ${(err as Error)?.stack ?? String(err)}`)
      }
      // A held session is let go after its number of actions.
      for (const [id, h] of [...open])
        if (--h.left <= 0) await release(id).catch((err: unknown) => ctx.problems.push(`${me}: closing ${id} failed: ${String(err)}`))
      await sleep(r.int(10, 120))
    }
  } finally {
    for (const t of offlineTimers) clearTimeout(t)
    ctx.proxy.setOffline(me, false)
    for (const id of [...open.keys()]) await release(id).catch((err: unknown) => ctx.problems.push(`${me}: closing ${id} failed: ${String(err)}`))
    if (!device.connected) device.connect()
  }
  return counts
}
