// listChildren: the tree under a session, read from parent-owned catalogs (never by
// enumerating the store): live catalogs cost no reads, cold ones a checkpoint and a suffix.
import type { ListChildrenOptions, SubagentListEntry } from '../core/children'
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { CatalogEntry, CatalogState } from '../core/units/catalog'
import type { UnitSlot } from './units'
import type { WriterLocks } from '../storage/locks'
import { assertSessionId, describe, isPlainObject } from '../core/validate'

/** What listing needs: each session's catalog (live or cold) and who holds a session open for writing. */
export interface CatalogReader {
  /** A session's header and catalog entries (null when its catalog was rejected). */
  catalogOf(id: SessionId, signal?: AbortSignal): Promise<{ header: SessionHeader; entries: CatalogEntry[] | null }>
  /** Who holds a session open for writing. */
  readonly locks: Pick<WriterLocks, 'isHeld'>
}

/** The catalog entries folded into `slots`, or null when the catalog unit faulted (its catalog is rejected). */
export function catalogEntries(slots: readonly UnitSlot[]): CatalogEntry[] | null {
  const slot = slots.find((s) => s.def.key === 'subagentCatalog')
  return slot && !slot.fault ? (slot.state as CatalogState).entries.toArray() : null
}

/** Cold reads in flight at once, across the whole walk. */
export const MAX_CHILD_READS = 4

type Probe = { ok: true; header: SessionHeader; entries: CatalogEntry[] | null; running: boolean } | { ok: false }

export async function listChildren(catalogs: CatalogReader, parentId: SessionId, options: unknown = {}): Promise<SubagentListEntry[]> {
  assertSessionId(parentId)
  if (!isPlainObject(options))
    throw new SessionfoldError('INVALID_ARGUMENT', `listChildren options must be an object, got ${describe(options)}`, { sessionId: parentId })
  const { recursive = false, signal } = options as ListChildrenOptions
  if (typeof recursive !== 'boolean')
    throw new SessionfoldError('INVALID_ARGUMENT', `listChildren of ${where(parentId)}: recursive must be a boolean, got ${describe(recursive)}`, {
      sessionId: parentId,
    })
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new SessionfoldError('INVALID_ARGUMENT', `listChildren of ${where(parentId)}: signal must be an AbortSignal`, { sessionId: parentId })

  const check = () => {
    if (signal?.aborted) throw new SessionfoldError('CANCELLED', `listChildren of ${where(parentId)} was cancelled`, { sessionId: parentId })
  }
  const limit = limiter(MAX_CHILD_READS)
  const running = new Set<Promise<unknown>>()
  /** A read through the limiter, with the signal checked before and after it. */
  const read = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = limit(async () => {
      check()
      const result = await fn()
      check()
      return result
    })
    running.add(p)
    const done = () => running.delete(p)
    p.then(done, done)
    return p
  }

  const probe = (entry: CatalogEntry): Promise<Probe> =>
    read(async () => {
      try {
        const c = await catalogs.catalogOf(entry.id, signal)
        return { ok: true as const, header: c.header, entries: c.entries, running: await catalogs.locks.isHeld(entry.id) }
      } catch (err) {
        if (isSessionfoldError(err, 'CANCELLED')) throw err
        return { ok: false as const }
      }
    })

  const rows: SubagentListEntry[] = []
  const visited = new Set<SessionId>([parentId])

  async function walk(parent: SessionHeader, entries: readonly CatalogEntry[], depth: number): Promise<void> {
    // Each session once, even when a catalog points back at an ancestor or repeats a child.
    const mine = entries.filter((e) => !visited.has(e.id) && (visited.add(e.id), true))
    // Start every sibling's read now (the limiter keeps 4 in flight); rows still come in order.
    const probes = mine.map((e) => (e.mode === 'external' ? undefined : probe(e)))
    for (let i = 0; i < mine.length; i++) {
      const entry = mine[i]!
      const base = { id: entry.id, parentId: parent.id, depth }
      if (entry.mode === 'external') {
        rows.push({
          kind: 'child',
          ...base,
          createdAt: entry.createdAt,
          activity: 'inactive',
          hasChildren: false,
          mode: 'external',
          ...(entry.label === undefined ? {} : { label: entry.label }),
        })
        continue
      }
      const p = await probes[i]!
      const sameLife =
        p.ok &&
        p.header.origin === 'subagent' &&
        p.header.parentSession === parent.id &&
        p.header.createdAt === entry.createdAt &&
        p.header.delegationDepth === parent.delegationDepth + 1
      const walkable = p.ok && sameLife && p.entries !== null
      if (entry.mode === 'unknown') rows.push({ kind: 'diagnostic', ...base, reason: 'unsupported' })
      else if (!p.ok) rows.push({ kind: 'diagnostic', ...base, reason: 'unavailable' })
      else if (!walkable) rows.push({ kind: 'diagnostic', ...base, reason: 'corrupt' })
      else {
        rows.push({
          kind: 'child',
          ...base,
          createdAt: entry.createdAt,
          activity: p.running ? 'running' : 'inactive',
          hasChildren: p.entries!.length > 0,
          mode: entry.mode,
          ...(entry.label === undefined ? {} : { label: entry.label }),
        })
      }
      if (recursive && walkable) await walk(p.header, p.entries!, depth + 1)
    }
  }

  try {
    check()
    const top = await read(() => catalogs.catalogOf(parentId, signal))
    if (top.entries === null) {
      throw new SessionfoldError('CORRUPT_LOG', `the catalog of ${where(parentId)} is rejected (an invalid subagent/catalog fact)`, { sessionId: parentId })
    }
    await walk(top.header, top.entries, 0)
    return rows
  } catch (err) {
    // No work left running once we answer.
    while (running.size > 0) await Promise.allSettled([...running])
    throw err
  }
}

/** Runs at most `n` tasks at once, in the order they were asked for. */
function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0
  const waiting: (() => void)[] = []
  return async (task) => {
    // A finished task hands its slot straight to the next waiter, so none can slip in between.
    if (active >= n) await new Promise<void>((resolve) => waiting.push(resolve))
    else active++
    try {
      return await task()
    } finally {
      const next = waiting.shift()
      if (next) next()
      else active--
    }
  }
}
