// examples/react/session-panel.ts
import { createElement as h, useEffect, useState } from 'react'
import type { SessionView, Store } from 'sessionfold'
import { useChildren, useProjection } from 'sessionfold/react'

/** A session's turns and its subagent tree, live. JSX: <section><p>…</p><ul>{rows}</ul></section> */
export function SessionPanel({ session }: { session: SessionView | null }) {
  const timing = useProjection(session, 'subagentTiming') // renders only when this value changes
  const { children, error } = useChildren(session, { recursive: true }) // the whole tree, live
  if (!session) return h('p', null, 'opening…')
  const rows = (children ?? []).map((row) =>
    h(
      'li',
      { key: row.id, style: { marginLeft: `${row.depth}em` } },
      row.kind === 'child' ? `${row.label ?? row.id} (${row.mode}, ${row.activity})` : `${row.id}: ${row.reason}`,
    ),
  )
  return h(
    'section',
    null,
    h('p', null, `${timing?.turns ?? 0} turns${timing?.runningSince != null ? ', running' : ''}`),
    error ? h('p', { role: 'alert' }, error.message) : children ? h('ul', null, ...rows) : h('p', null, 'listing…'),
  )
}

/** Follows a session read-only while mounted: the handle is opened here and closed on unmount. */
export function SessionPage({ store, id }: { store: Store; id: string }) {
  const [session, setSession] = useState<SessionView | null>(null)
  const [failed, setFailed] = useState<Error | null>(null)
  useEffect(() => {
    let view: SessionView | undefined
    let gone = false
    store.observe(id).then((v) => (gone ? void v.close() : setSession((view = v))), setFailed)
    return () => {
      gone = true
      setSession(null)
      void view?.close()
    }
  }, [store, id])
  return failed ? h('p', { role: 'alert' }, failed.message) : h(SessionPanel, { session })
}
