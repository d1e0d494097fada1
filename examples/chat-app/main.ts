// A chat-style agent page on sessionfold's public API (`npm run demo:chat`, then open the URL it
// prints, in two tabs). Every chat is a session: its log holds the user's messages and the
// assistant's reply token by token, as events the app declares, checks and versions
// (chat-events.ts); its own worker folds them into the transcript the page shows. So another
// tab of the same origin, on the same store, sees the same chats and can read along as they
// are written.
//
//   main.ts         opens the store (on the app's worker) and renders the app
//   chat-events.ts  the app's events (user/message in two versions) and the transcript unit
//   worker.ts       the engine's worker: serveEngine with those events and that unit
//   app.ts          the layout, the selected chat, new and delete
//   sidebar.ts      the live list of chats (useSessions)
//   chat-pane.ts    one chat: transcript, composer, rename, the subagent tree (useChildren)
//   open-chats.ts   the handles this tab holds: a writer, or a read-only view when another tab writes
//   transcript.ts   the transcript as the worker folds it, followed live (projections.subscribe)
//   assistant.ts    a pretend model that streams its replies and spawns subagents
import { StrictMode, createElement as h } from 'react'
import { createRoot } from 'react-dom/client'
import { openStore } from 'sessionfold'
import { App } from './app'

const root = document.querySelector('#root')!
try {
  // IndexedDB (database 'sessionfold', shared by the origin's tabs), the engine in a Web Worker
  // of this tab, so folding never blocks the page: the app's own worker file, with its events
  // and units. Written this way, Vite (and webpack, Parcel, esbuild-based tools) ship worker.ts
  // as a worker of its own.
  const store = await openStore({
    worker: () => new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }),
  })
  createRoot(root).render(h(StrictMode, null, h(App, { store })))
} catch (err) {
  // IndexedDB can be missing or refused (some private windows): say so rather than stay blank.
  root.textContent = `Could not open the store: ${(err as Error).message}`
}
