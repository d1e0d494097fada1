// A chat-style agent page on sessionfold's public API (`npm run demo:chat`, then open the URL it
// prints, in two tabs). Every chat is a session: its log holds the user's messages and the
// assistant's reply token by token, and the page shows it by following that log. So another tab
// of the same origin, on the same store, sees the same chats and can read along as they are
// written. No projection or worker file of its own: the built-in ones are enough.
//
//   main.ts        opens the store and renders the app
//   app.ts         the layout, the selected chat, new and delete
//   sidebar.ts     the live list of chats (useSessions)
//   chat-pane.ts   one chat: transcript, composer, rename, the subagent tree (useChildren)
//   open-chats.ts  the handles this tab holds: a writer, or a read-only view when another tab writes
//   transcript.ts  the log folded into messages, followed live (session.events({ follow: true }))
//   assistant.ts   a pretend model that streams its replies and spawns subagents
import { StrictMode, createElement as h } from 'react'
import { createRoot } from 'react-dom/client'
import { openStore } from 'sessionfold'
import { App } from './app'

const root = document.querySelector('#root')!
try {
  // The browser defaults: IndexedDB (database 'sessionfold', shared by the origin's tabs) and
  // the engine in a Web Worker of this tab, so folding never blocks the page.
  const store = await openStore()
  createRoot(root).render(h(StrictMode, null, h(App, { store })))
} catch (err) {
  // IndexedDB can be missing or refused (some private windows): say so rather than stay blank.
  root.textContent = `Could not open the store: ${(err as Error).message}`
}
