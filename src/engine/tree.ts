// Which sessions a tree is (`deleteSession(id, { tree: true })`, the CLI's `export --tree` and
// `delete --tree`), and in which order: a session's descendants come from the parent-owned
// catalogs (as `listChildren` shows them), and a parent comes before its children (export) or
// after them (delete).
import type { SessionInfo } from '../storage/types'
import { isSessionfoldError, where } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { SubagentListEntry } from '../core/children'
import type { StoreReader } from './reader'

/** A catalog row that could not be followed: the tree under `id` is not known whole. */
export interface TreeProblem {
  id: SessionId
  message: string
}

/**
 * Every descendant of `id` with a session here, in pre-order (parents before children), and
 * the rows that could not be followed. A child whose session no longer exists (deleted on
 * its own) is neither: there is nothing of it to take, and its parent still names it.
 */
export async function descendants(
  engine: { reader: Pick<StoreReader, 'find'>; listChildren(id: SessionId, options: { recursive: true }): Promise<SubagentListEntry[]> },
  id: SessionId,
): Promise<{ infos: SessionInfo[]; problems: TreeProblem[] }> {
  const infos: SessionInfo[] = []
  const problems: TreeProblem[] = []
  for (const row of await engine.listChildren(id, { recursive: true })) {
    if (row.kind === 'child' && row.mode === 'external') continue // an execution outside this store
    const of = `${where(row.id)}, a subagent of "${row.parentId}"`
    let info: SessionInfo | undefined
    try {
      info = await engine.reader.find(row.id)
    } catch (err) {
      if (!isSessionfoldError(err)) throw err
      problems.push({ id: row.id, message: `${of}, cannot be read: ${err.message}` })
      continue
    }
    if (row.kind === 'child') {
      if (info) infos.push(info)
    } else if (row.reason !== 'unavailable' || info) {
      const why =
        row.reason === 'unsupported'
          ? 'is named by a catalog fact whose mode was lost (unsupported)'
          : row.reason === 'corrupt'
            ? 'is not the session its parent spawned, or its own catalog is rejected (corrupt)'
            : 'cannot be read (unavailable)'
      problems.push({ id: row.id, message: `${of}, ${why}` })
    }
  }
  return { infos, problems }
}

/**
 * The sessions ordered so that a session's parent (its spawning parent, or the session it
 * was forked from), when it is among them, comes first; otherwise in the order given.
 */
export function parentsFirst<T extends { header: SessionHeader }>(infos: readonly T[]): T[] {
  const byId = new Map(infos.map((i) => [i.header.id, i]))
  const done = new Set<SessionId>()
  const out: T[] = []
  const visit = (info: T) => {
    // Iterative: a chain of subagents can be deeper than the call stack.
    const chain: T[] = []
    for (let at: T | undefined = info; at && !done.has(at.header.id); ) {
      done.add(at.header.id)
      chain.push(at)
      const up: SessionId | undefined = at.header.parentSession ?? at.header.forkedFrom
      at = up === undefined ? undefined : byId.get(up)
    }
    for (let i = chain.length - 1; i >= 0; i--) out.push(chain[i]!)
  }
  for (const info of infos) visit(info)
  return out
}
