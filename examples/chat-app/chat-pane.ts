// One chat: its transcript, a composer, a rename, and the tree of subagents the assistant
// spawned. The chat is opened for writing if no other tab writes it; otherwise this tab reads
// along (the composer is off) and sees every event the writing tab appends.
import { type FormEvent, type ReactNode, createElement as h, useEffect, useRef, useState } from 'react'
import { type Session, type SessionId, type SessionView, isSessionfoldError } from 'sessionfold'
import { useChildren, useProjection } from 'sessionfold/react'
import { delegate, replyTo, streamReply } from './assistant'
import type { OpenChat, OpenChats } from './open-chats'
import { type Message, useTranscript } from './transcript'

/** The title of a chat until its first message names it. */
export const NEW_CHAT_TITLE = 'New chat'

interface PaneProps {
  chats: OpenChats
  id: SessionId
  /** The chat was deleted (in another tab) while shown. */
  onGone: () => void
  onProblem: (err: unknown) => void
}

export function ChatPane({ chats, id, onGone, onProblem }: PaneProps) {
  const [attempt, setAttempt] = useState(0)
  const { chat, error } = useOpenChat(chats, id, attempt)
  const view = chat?.view ?? null
  const writer = chat?.writer ?? null
  const meta = useProjection(view, 'sessionMeta')
  const { messages, ended, unreadable } = useTranscript(view)
  const [busy, setBusy] = useState(false)

  const gone = isSessionfoldError(ended ?? error, 'SESSION_NOT_FOUND')
  useEffect(() => {
    if (gone) onGone()
  }, [gone, onGone])

  /** Runs the assistant on this tab's writer; one job at a time, as the composer is off meanwhile. */
  const run = (job: (writer: Session) => Promise<void>) => {
    if (!writer || busy) return
    setBusy(true)
    job(writer)
      // CLOSED: the chat was closed under the job (another chat picked, or it was deleted): it just stops.
      .catch((err: unknown) => isSessionfoldError(err, 'CLOSED') || onProblem(err))
      .finally(() => setBusy(false))
  }

  const send = (text: string) =>
    run(async (w) => {
      // Typed by EventMap (chat-events.ts): the data of the latest version, `format` included.
      // The first version's `{ text }` alone does not compile, and the worker would refuse it.
      await w.append({ type: 'user/message', data: { text, format: 'markdown' } })
      // A new chat takes its first message as its title, as chat apps do.
      if (w.projections.get('sessionMeta')?.title === NEW_CHAT_TITLE) await w.setMeta({ title: text.slice(0, 60) })
      await streamReply(w, replyTo(text))
    })

  const lastAsked = messages.filter((m) => m.role === 'user').at(-1)?.text
  const askSubagent = () => run((w) => delegate(w, lastAsked ?? 'your question'))

  if (error && !gone) return h('p', { className: 'error', role: 'alert' }, `Could not open this chat: ${error.message}`)
  return h(
    'section',
    { className: 'chat', 'aria-label': 'Chat' },
    h(
      'div',
      { className: 'conversation' },
      h(ChatHeader, { title: meta?.title ?? id, writer, onProblem }),
      chat &&
        !writer &&
        h(
          'p',
          { className: 'read-only', role: 'status' },
          'Read-only: another tab is writing this chat. You see what it writes as it writes it.',
          // The other tab may have let go since (picked another chat, closed): try to take over.
          h('button', { type: 'button', className: 'link', onClick: () => setAttempt((n) => n + 1) }, 'Write here'),
        ),
      h(MessageList, { messages, loading: !chat }),
      unreadable && h('p', { className: 'error', role: 'alert' }, 'Part of this chat was written by a newer version of the app; reload to read it.'),
      // The worker died, say: what is shown stays, but nothing new will come.
      ended && !gone && h('p', { className: 'error', role: 'alert' }, `Stopped following this chat: ${ended.message}`),
      h(Composer, { disabled: !writer || busy, busy, onSend: send, onAskSubagent: askSubagent }),
    ),
    h(SubagentTree, { view }),
  )
}

/** This pane's handle on the chat, opened on mount (and on each `attempt`), released on unmount. */
function useOpenChat(chats: OpenChats, id: SessionId, attempt: number): { chat: OpenChat | null; error: Error | null } {
  const [state, setState] = useState<{ chat: OpenChat | null; error: Error | null }>({ chat: null, error: null })
  useEffect(() => {
    let current = true
    void attempt // a new attempt releases the handle and opens the chat again
    chats.open(id).then(
      (chat) => current && setState({ chat, error: null }),
      (error: Error) => current && setState({ chat: null, error }),
    )
    return () => {
      current = false
      setState({ chat: null, error: null })
      void chats.release(id)
    }
  }, [chats, id, attempt])
  return state
}

function ChatHeader({ title, writer, onProblem }: { title: string; writer: Session | null; onProblem: (err: unknown) => void }) {
  const [draft, setDraft] = useState<string | null>(null)
  const save = (e: FormEvent) => {
    e.preventDefault()
    // setMeta appends a session/meta event: every tab's sidebar and header follow it. An empty title clears it.
    writer?.setMeta({ title: draft?.trim() || null }).catch(onProblem)
    setDraft(null)
  }
  if (draft !== null)
    return h(
      'form',
      { className: 'chat-header', onSubmit: save },
      h('input', { 'aria-label': 'Chat title', value: draft, maxLength: 200, autoFocus: true, onChange: (e) => setDraft(e.target.value) }),
      h('button', { type: 'submit', className: 'primary' }, 'Save'),
      h('button', { type: 'button', onClick: () => setDraft(null) }, 'Cancel'),
    )
  return h('header', { className: 'chat-header' }, h('h1', null, title), writer && h('button', { type: 'button', onClick: () => setDraft(title) }, 'Rename'))
}

function MessageList({ messages, loading }: { messages: Message[]; loading: boolean }) {
  const list = useRef<HTMLOListElement>(null)
  // Keep the newest words in view while a reply grows.
  // biome-ignore lint/correctness/useExhaustiveDependencies: it runs for each change of the messages, which it does not read
  useEffect(() => {
    const el = list.current
    if (el) el.scrollTop = el.scrollHeight
  }, [messages])
  if (loading) return h('p', { className: 'placeholder' }, 'Opening…')
  if (messages.length === 0) return h('p', { className: 'placeholder' }, 'No messages yet.')
  return h(
    'ol',
    { className: 'messages', ref: list },
    messages.map((m) =>
      h(
        'li',
        { key: m.key, className: `message ${m.role}${m.open ? ' open' : ''}`, 'data-role': m.role, 'data-format': m.format },
        m.format === 'markdown' ? markdown(m.text) : m.text,
      ),
    ),
  )
}

/**
 * The little Markdown this app renders: **strong** and `code`; everything else is shown as
 * typed. React elements, never HTML: a message cannot inject markup.
 */
function markdown(text: string): ReactNode[] {
  // split() with a capturing group: the odd items are the marked spans.
  return text.split(/(\*\*[^*]+\*\*|`[^`]+`)/).map((part, i) => {
    if (i % 2 === 0) return part
    return part.startsWith('`') ? h('code', { key: i }, part.slice(1, -1)) : h('strong', { key: i }, part.slice(2, -2))
  })
}

interface ComposerProps {
  disabled: boolean
  busy: boolean
  onSend: (text: string) => void
  onAskSubagent: () => void
}

function Composer({ disabled, busy, onSend, onAskSubagent }: ComposerProps) {
  const [text, setText] = useState('')
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (disabled || !text.trim()) return
    onSend(text.trim())
    setText('')
  }
  return h(
    'form',
    { className: 'composer', onSubmit: submit },
    h('input', {
      'aria-label': 'Message',
      placeholder: busy ? 'The assistant is replying…' : 'Say something',
      value: text,
      onChange: (e) => setText(e.target.value),
    }),
    h('button', { type: 'submit', className: 'primary', disabled }, 'Send'),
    h('button', { type: 'button', disabled, onClick: onAskSubagent }, 'Ask a subagent'),
  )
}

/**
 * The subagents under the chat, at every depth. With `recursive`, useChildren watches the whole
 * tree, so a grandchild spawned later, or a child closing, shows without asking.
 */
function SubagentTree({ view }: { view: SessionView | null }) {
  const { children, error } = useChildren(view, { recursive: true })
  return h(
    'aside',
    { className: 'tree', 'aria-label': 'Subagents' },
    h('h2', null, 'Subagents'),
    // SESSION_NOT_FOUND: the chat was deleted, which the pane says once for all.
    error && error.code !== 'SESSION_NOT_FOUND' && h('p', { className: 'error' }, error.message),
    children?.length === 0 && h('p', { className: 'placeholder' }, 'None yet.'),
    h(
      'ul',
      null,
      (children ?? []).map((row) =>
        h(
          'li',
          { key: row.id, className: 'tree-row', style: { paddingLeft: `${row.depth * 1.1}rem` }, 'data-id': row.id, 'data-depth': row.depth },
          row.kind === 'child'
            ? [
                h('span', { key: 'label', className: 'tree-label' }, row.label ?? row.id),
                // 'running': open for writing right now (the subagent is at work); 'inactive' once it closed.
                h('span', { key: 'activity', className: `activity ${row.activity}` }, row.activity === 'running' ? 'running' : 'done'),
              ]
            : h('span', { className: 'error' }, `${row.id}: ${row.reason}`),
        ),
      ),
    ),
  )
}
