import type { SessionId } from './model'

/** One row of `listChildren`: a child, or why a catalog entry could not be shown as one. */
export type SubagentListEntry =
  | {
      /** A child session (or an external execution), shown. */
      kind: 'child'
      /** The child's id. */
      id: SessionId
      /** The session whose catalog names it. */
      parentId: SessionId
      /** 0 for the listed session's own children, one more per level. */
      depth: number
      /** When the child was created (epoch ms), as its parent's catalog recorded it. */
      createdAt: number
      /**
       * `'running'`: a client (a handle of this store, or of another tab, thread or process
       * on the same storage) holds the child open for writing right now: a `Session` returned
       * by `spawn` or `openSession` and not yet closed. It says nothing about whether an
       * agent is busy: close the child's handle when its work is done and it turns
       * `'inactive'`. A lock left by a dead process or tab does not count. External children
       * are always `'inactive'`.
       */
      activity: 'running' | 'inactive'
      /** From the child's own catalog. */
      hasChildren: boolean
      /** As spawned (`'one-shot'`, `'continuable'`), or `'external'` (recorded by `recordExternal`, no session here). */
      mode: 'one-shot' | 'continuable' | 'external'
      /** The label given to `spawn` or `recordExternal`, if any. */
      label?: string
    }
  | {
      /** A catalog entry that cannot be shown as a child. */
      kind: 'diagnostic'
      /** The id the catalog names. */
      id: SessionId
      /** The session whose catalog names it. */
      parentId: SessionId
      /** As in a `child` row. */
      depth: number
      /**
       * `unavailable`: the child cannot be read (missing, damaged). `corrupt`: its header is
       * another life of the id or names another parent, or its own catalog is rejected.
       * `unsupported`: a `mode: 'unknown'` fact (its children are still walked).
       */
      reason: 'corrupt' | 'unsupported' | 'unavailable'
    }

/** Options of `listChildren`. */
export interface ListChildrenOptions {
  /** Walk the whole tree (pre-order, in catalog order), not only the direct children. */
  recursive?: boolean
  /** Aborting it rejects with `CANCELLED` (checked before and after every read). */
  signal?: AbortSignal
}
