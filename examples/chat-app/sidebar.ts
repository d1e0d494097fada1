// The chat list: the store's root sessions (not subagents), the most recently active first,
// live. useSessions follows every writer of the store, this tab's and other tabs', so a chat
// started or renamed in another tab shows here within a moment, without a refresh.
import { createElement as h, useEffect, useState } from 'react'
import type { SessionId, SessionSummary, Store } from 'sessionfold'
import { useSessions } from 'sessionfold/react'

interface SidebarProps {
  store: Store
  selected: SessionId | null
  onSelect: (id: SessionId) => void
  onNew: () => void
  onDelete: (id: SessionId) => void
}

export function Sidebar({ store, selected, onSelect, onNew, onDelete }: SidebarProps) {
  const [search, setSearch] = useState('')
  const { items, hasMore, more, loading, error } = useSessions(store, { limit: 30, search })
  const now = useNow(10_000)
  return h(
    'nav',
    { className: 'sidebar', 'aria-label': 'Chats' },
    h(
      'div',
      { className: 'sidebar-head' },
      h('button', { type: 'button', className: 'primary', onClick: onNew }, 'New chat'),
      h('input', { type: 'search', placeholder: 'Search titles', 'aria-label': 'Search chats', value: search, onChange: (e) => setSearch(e.target.value) }),
    ),
    error && h('p', { className: 'error', role: 'alert' }, error.message),
    h(
      'ul',
      { className: 'chat-list' },
      items.map((s) => h(ChatRow, { key: s.id, summary: s, now, current: s.id === selected, onSelect, onDelete })),
    ),
    !loading && items.length === 0 && h('p', { className: 'placeholder' }, search ? 'No chat title matches.' : 'No chats yet.'),
    // more() can only fail once the store is closed, when there is nothing left to show.
    hasMore && h('button', { type: 'button', className: 'link more', onClick: () => void more().catch(() => {}) }, 'More'),
  )
}

interface RowProps {
  summary: SessionSummary
  now: number
  current: boolean
  onSelect: (id: SessionId) => void
  onDelete: (id: SessionId) => void
}

function ChatRow({ summary: s, now, current, onSelect, onDelete }: RowProps) {
  const title = s.title ?? s.id
  return h(
    'li',
    { className: current ? 'chat-row current' : 'chat-row', 'data-id': s.id },
    h(
      'button',
      { type: 'button', className: 'chat-open', onClick: () => onSelect(s.id), 'aria-current': current ? 'page' : undefined },
      h('span', { className: 'chat-title' }, title),
      h(
        'span',
        { className: 'chat-meta' },
        // `running`: some tab (or process) has the chat open for writing right now.
        s.running && h('span', { className: 'running', title: 'open for writing in a tab' }, 'running'),
        h('time', { dateTime: new Date(s.lastEventAt).toISOString() }, ago(now, s.lastEventAt)),
        ...s.tags.map((tag) => h('span', { key: tag, className: 'tag' }, tag)),
      ),
    ),
    h('button', { type: 'button', className: 'delete', 'aria-label': `Delete ${title}`, title: 'Delete', onClick: () => onDelete(s.id) }, '×'),
  )
}

/** The time now, again every `ms`: relative times ("2 min ago") move on while nothing is written. */
function useNow(ms: number): number {
  const [now, setNow] = useState(Date.now)
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms)
    return () => clearInterval(timer)
  }, [ms])
  return now
}

function ago(now: number, time: number): string {
  const s = Math.round((now - time) / 1000)
  if (s < 10) return 'just now'
  if (s < 60) return `${s} s ago`
  const min = Math.round(s / 60)
  if (min < 60) return `${min} min ago`
  const hours = Math.round(min / 60)
  return hours < 24 ? `${hours} h ago` : new Date(time).toLocaleDateString()
}
