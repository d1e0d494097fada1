// examples/react/use-projection.ts
import { createElement, useSyncExternalStore } from 'react'
import type { ProjectionKey, ProjectionMap, SessionView } from 'sessionfold'

/** One projection value of a session, re-rendering when it changes. */
export function useProjection<K extends ProjectionKey>(view: SessionView, key: K): ProjectionMap[K] | null {
  return useSyncExternalStore(
    (onChange) => view.projections.subscribe(key, () => onChange()),
    () => view.projections.get(key), // the same object until the value changes
  )
}

/** A component: the children of a session, live (JSX: <ul>{catalog.map((c) => <li …/>)}</ul>). */
export function Children({ view }: { view: SessionView }) {
  const catalog = useProjection(view, 'subagentCatalog') ?? []
  return createElement('ul', null, ...catalog.map((c) => createElement('li', { key: c.id }, `${c.label ?? c.id} (${c.mode})`)))
}
