// The page: the chat list on the left, the selected chat beside it. Which chat is selected lives
// in the URL's hash, so a reload keeps it and the URL opens the same chat in another tab.
import { createElement as h, useCallback, useEffect, useMemo, useState } from 'react'
import type { SessionId, Store } from 'sessionfold'
import { ChatPane, NEW_CHAT_TITLE } from './chat-pane'
import { OpenChats, deleteChat } from './open-chats'
import { Sidebar } from './sidebar'

function useSelectedChat(): [SessionId | null, (id: SessionId | null) => void] {
  const [selected, select] = useState<SessionId | null>(() => location.hash.slice(1) || null)
  useEffect(() => history.replaceState(null, '', selected ? `#${selected}` : location.pathname), [selected])
  return [selected, select]
}

export function App({ store }: { store: Store }) {
  const chats = useMemo(() => new OpenChats(store), [store])
  const [selected, select] = useSelectedChat()
  const [notice, setNotice] = useState<string | null>(null)
  const report = useCallback((err: unknown) => setNotice(err instanceof Error ? err.message : String(err)), [])

  const newChat = () => {
    // createSession hands back a writer; it is closed here and the chat pane opens the chat
    // again, so that handles are opened and closed in one place (open-chats.ts).
    store
      .createSession({ title: NEW_CHAT_TITLE })
      .then(async (session) => {
        await session.close()
        select(session.id)
      })
      .catch(report)
  }

  const remove = (id: SessionId) => {
    if (id === selected) select(null)
    // This tab's writer must be closed first: a session open for writing anywhere cannot be deleted.
    chats
      .release(id)
      .then(() => deleteChat(store, id))
      .catch(report)
  }

  // Deleted elsewhere (another tab) while shown here.
  const gone = useCallback(() => {
    select(null)
    setNotice('That chat was deleted.')
  }, [select])

  return h(
    'div',
    { className: 'app' },
    h(Sidebar, { store, selected, onSelect: select, onNew: newChat, onDelete: remove }),
    h(
      'main',
      { className: 'main' },
      notice &&
        h('p', { className: 'notice', role: 'alert' }, notice, h('button', { type: 'button', className: 'link', onClick: () => setNotice(null) }, 'Dismiss')),
      selected
        ? h(ChatPane, { key: selected, chats, id: selected, onGone: gone, onProblem: report })
        : h('p', { className: 'placeholder' }, 'Pick a chat on the left, or start a new one.'),
    ),
  )
}
