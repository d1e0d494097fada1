// A chat's messages, as the app's worker folds them (the chatTranscript unit of chat-events.ts)
// and the handle keeps them: current with every event any writer appends (this tab, or another
// tab writing the chat while this one reads), without reading the log here.
import { useEffect, useState } from 'react'
import type { SessionView, SessionfoldError } from 'sessionfold'
import type { Message } from './chat-events' // its types (EventMap, ProjectionMap), and none of its code

export type { Message }

export interface Transcript {
  messages: Message[]
  /** Why the messages stopped following the log (SESSION_NOT_FOUND: the chat was deleted, maybe by another tab). */
  ended: SessionfoldError | undefined
  /**
   * The transcript unit stopped folding (`faults.chatTranscript`): most likely the log holds an
   * event of a version newer than this code (a newer app wrote it). The events are all still there.
   */
  unreadable: boolean
}

const NONE: Transcript = { messages: [], ended: undefined, unreadable: false }

/**
 * The messages of the chat `view` shows, kept current until the view changes or the component
 * unmounts. (`useProjection(view, 'chatTranscript')` of sessionfold/react reads the same list;
 * this hook also hears why it stopped, which a deleted chat needs.)
 */
export function useTranscript(view: SessionView | null): Transcript {
  const [state, setState] = useState<Transcript>(NONE)
  useEffect(() => {
    setState(NONE)
    if (!view) return
    // Called with the current list now, then with each change, and once more with `error`
    // when the values stop: the chat deleted (here or in another tab), the worker gone.
    return view.projections.subscribe('chatTranscript', (messages, { error }) =>
      setState({
        messages: messages ?? [],
        ended: error,
        unreadable: view.projections.snapshot().faults.chatTranscript !== undefined,
      }),
    )
  }, [view])
  return state
}
