// The session handles this tab holds, one per open chat. A chat is opened for writing when no
// other tab writes it, else followed read-only. Handles live outside React because a delete has
// to wait for this tab's writer to be closed (a writer blocks a delete), and because StrictMode
// opens and closes every effect twice: the second open must wait for the first close to free
// the session's writer lock, or it would find the chat locked by this very tab.
import { isSessionfoldError, type Session, type SessionId, type SessionView, type Store } from 'sessionfold'

/** A chat as this tab holds it: `writer` when it may append, null when another tab writes it. */
export interface OpenChat {
  view: SessionView
  writer: Session | null
}

export class OpenChats {
  readonly #held = new Map<SessionId, Promise<OpenChat>>()
  readonly #closing = new Map<SessionId, Promise<void>>()

  constructor(private readonly store: Store) {}

  /** The chat's handle: a writer if this tab can have one, else a read-only view. */
  open(id: SessionId): Promise<OpenChat> {
    let held = this.#held.get(id)
    if (!held) {
      const closed = this.#closing.get(id) ?? Promise.resolve()
      held = closed.then(() => openChat(this.store, id))
      this.#held.set(id, held)
    }
    return held
  }

  /** Closes this tab's handle on the chat, if any; resolves once it is closed (its writer lock free). */
  release(id: SessionId): Promise<void> {
    const held = this.#held.get(id)
    if (held) {
      this.#held.delete(id)
      // Failures end here: a handle that never opened, or a store already closed, holds nothing.
      const closed = held.then((chat) => chat.view.close()).catch(() => {})
      this.#closing.set(id, closed)
      void closed.then(() => this.#closing.get(id) === closed && this.#closing.delete(id))
    }
    return this.#closing.get(id) ?? Promise.resolve()
  }
}

async function openChat(store: Store, id: SessionId): Promise<OpenChat> {
  try {
    const writer = await store.openSession(id)
    return { view: writer, writer }
  } catch (err) {
    // One writer per session across tabs: another tab has it, so read along instead.
    if (!isSessionfoldError(err, 'SESSION_LOCKED')) throw err
    return { view: await store.observe(id), writer: null }
  }
}

/**
 * Deletes a chat and the subagents it spawned (`tree: true`): all of them or, while one is open
 * for writing somewhere (SESSION_LOCKED), none.
 */
export async function deleteChat(store: Store, id: SessionId): Promise<void> {
  await store.deleteSession(id, { tree: true })
}
