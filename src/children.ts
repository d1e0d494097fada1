import type { SessionId } from './model'

/** One row of `listChildren`: a child, or why a catalog entry could not be shown as one. */
export type SubagentListEntry =
  | {
      kind: 'child'
      id: SessionId
      parentId: SessionId
      /** 0 for the listed session's own children, one more per level. */
      depth: number
      createdAt: number
      /** `running`: some client holds the child open for writing. */
      activity: 'running' | 'inactive'
      /** From the child's own catalog. */
      hasChildren: boolean
      mode: 'one-shot' | 'continuable' | 'external'
      label?: string
    }
  | {
      kind: 'diagnostic'
      id: SessionId
      parentId: SessionId
      depth: number
      /**
       * `unavailable`: the child cannot be read (missing, damaged). `corrupt`: its header is
       * another life of the id or names another parent, or its own catalog is rejected.
       * `unsupported`: a `mode: 'unknown'` fact (its children are still walked).
       */
      reason: 'corrupt' | 'unsupported' | 'unavailable'
    }

export interface ListChildrenOptions {
  /** Walk the whole tree (pre-order, in catalog order), not only the direct children. */
  recursive?: boolean
  signal?: AbortSignal
}
