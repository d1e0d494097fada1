// A chat's messages, folded from its log as the log is read: the events already there, then each
// one as any writer appends it (this tab, or another tab writing the chat while this one reads).
import { useEffect, useReducer } from 'react'
import { type SessionEvent, type SessionView, type SessionfoldError, isSessionfoldError } from 'sessionfold'
import { ASSISTANT_DELTA, ASSISTANT_DONE, USER_MESSAGE } from './assistant'

export interface Message {
  /** The seq of its first event: stable, so React keeps the row while a reply grows. */
  key: number
  role: 'user' | 'assistant'
  text: string
  /** An assistant reply still streaming (or one whose writer stopped mid-way). */
  open: boolean
}

interface Transcript {
  messages: Message[]
  /** Why following the log stopped (SESSION_NOT_FOUND: the chat was deleted, maybe by another tab). */
  ended: SessionfoldError | undefined
}

type Action = { kind: 'reset' } | { kind: 'event'; event: SessionEvent } | { kind: 'ended'; error: SessionfoldError }

const textOf = (event: SessionEvent) => String((event.data as { text?: unknown } | null)?.text ?? '')

function fold(state: Transcript, action: Action): Transcript {
  if (action.kind === 'reset') return { messages: [], ended: undefined }
  if (action.kind === 'ended') return { ...state, ended: action.error }
  const { event } = action
  const last = state.messages.at(-1)
  const growing = last?.role === 'assistant' && last.open ? last : undefined
  switch (event.type) {
    case USER_MESSAGE:
      return { ...state, messages: [...state.messages, { key: event.seq, role: 'user', text: textOf(event), open: false }] }
    case ASSISTANT_DELTA:
      // Deltas join the reply they continue: one message that grows, as the user expects.
      if (growing) return { ...state, messages: [...state.messages.slice(0, -1), { ...growing, text: growing.text + textOf(event) }] }
      return { ...state, messages: [...state.messages, { key: event.seq, role: 'assistant', text: textOf(event), open: true }] }
    case ASSISTANT_DONE:
      return growing ? { ...state, messages: [...state.messages.slice(0, -1), { ...growing, open: false }] } : state
    default:
      return state // session/meta, subagent/… and the like: not messages
  }
}

/** The messages of the chat `view` shows, kept current until the view changes or the component unmounts. */
export function useTranscript(view: SessionView | null): Transcript {
  const [state, dispatch] = useReducer(fold, { messages: [], ended: undefined })
  useEffect(() => {
    if (!view) return
    const stop = new AbortController()
    dispatch({ kind: 'reset' }) // read from the start: the same effect may run again (StrictMode)
    const follow = async () => {
      for await (const event of view.events({ follow: true, signal: stop.signal })) {
        // Events of a page read before the abort still come: they belong to the reset transcript.
        if (stop.signal.aborted) break
        dispatch({ kind: 'event', event })
      }
    }
    // The loop ends quietly when `stop` aborts or the handle closes; a delete ends it with SESSION_NOT_FOUND.
    follow().catch((err: unknown) => {
      if (stop.signal.aborted) return
      if (isSessionfoldError(err)) dispatch({ kind: 'ended', error: err })
      else console.error(err)
    })
    return () => stop.abort()
  }, [view])
  return state
}
