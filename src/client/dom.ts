// A framework-free way to show projection values in the DOM: render now, re-render when the
// value changes, stop with the returned function. Nothing here touches a browser global until
// it is called (importing it in Node is fine).
import type { ChangeMeta, ProjectionKey, ProjectionMapView } from './projection-view'
import type { ProjectionMap } from '../core/units'

/** Anything with live projections: a Session, a SessionView. */
export interface HasProjections {
  /** The handle's projection values. */
  readonly projections: ProjectionMapView
}

/**
 * Calls `render` with the current value of `key` now, then whenever it changes (values keep
 * their identity until they change, so an unchanged value is never rendered twice). Once the
 * values stop (the store closed, the worker died) `render` hears it once more with
 * `meta.error`. Returns unbind: after it, `render` is never called again.
 *
 * @example
 * const stop = bind(session, 'subagentTiming', (t) => { el.textContent = `${t?.turns ?? 0} turns` })
 */
export function bind<K extends ProjectionKey>(view: HasProjections, key: K, render: (value: ProjectionMap[K] | null, meta: ChangeMeta) => void): () => void {
  let bound = true
  let rendered = false
  let last: ProjectionMap[K] | null = null
  let lastError: ChangeMeta['error']
  const unsubscribe = view.projections.subscribe(key, (value, meta) => {
    // A notification already in flight when unbind ran is dropped.
    if (!bound) return
    if (rendered && value === last && meta.error === lastError) return
    rendered = true
    last = value
    lastError = meta.error
    render(value, meta)
  })
  return () => {
    if (!bound) return
    bound = false
    unsubscribe()
  }
}

/**
 * Keeps `el.textContent` equal to `format(value, meta)` (written only when the text differs).
 *
 * @example
 * bindText(cell, child, 'subagentTiming', (t) => `${t?.turns ?? 0} turns, ${t?.settledMs ?? 0} ms`)
 */
export function bindText<K extends ProjectionKey>(
  el: Node,
  view: HasProjections,
  key: K,
  format: (value: ProjectionMap[K] | null, meta: ChangeMeta) => string,
): () => void {
  return bind(view, key, (value, meta) => {
    const text = format(value, meta)
    if (el.textContent !== text) el.textContent = text
  })
}

/**
 * Keeps `container`'s children equal to one node per item of a list value (`[]` for null),
 * made by `renderItem`; the whole list is rebuilt when the value changes.
 *
 * @example
 * bindList(ul, session, 'subagentCatalog', (c) => Object.assign(document.createElement('li'), { textContent: c.label ?? c.id }))
 */
export function bindList<K extends ListKey>(
  container: ParentNode,
  view: HasProjections,
  key: K,
  renderItem: (item: ItemOf<K>, index: number) => Node,
): () => void {
  return bind(view, key, (value) => {
    const items = (value ?? []) as unknown as readonly ItemOf<K>[]
    container.replaceChildren(...items.map((item, i) => renderItem(item, i)))
  })
}

/** Keys whose value is an array (e.g. 'subagentCatalog'). */
export type ListKey = { [K in ProjectionKey]: ProjectionMap[K] extends readonly unknown[] ? K : never }[ProjectionKey]
/** The item type of the list value of `K` (e.g. `CatalogEntry` for 'subagentCatalog'). */
export type ItemOf<K extends ProjectionKey> = ProjectionMap[K] extends readonly (infer T)[] ? T : never
