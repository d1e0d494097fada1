// examples/react/use-projection.ts
import { useSyncExternalStore } from 'react'
import type { ProjectionKey, ProjectionMap, SessionView } from 'sessionfold'

/** One projection value of a session, re-rendering when it changes. */
export function useProjection<K extends ProjectionKey>(view: SessionView, key: K): ProjectionMap[K] | null {
  return useSyncExternalStore(
    (onChange) => view.projections.subscribe(key, () => onChange()),
    () => view.projections.get(key), // the same object until the value changes
  )
}

// function Children({ view }: { view: SessionView }) {
//   const catalog = useProjection(view, 'subagentCatalog') ?? []
//   return <ul>{catalog.map((c) => <li key={c.id}>{c.label ?? c.id} ({c.mode})</li>)}</ul>
// }
