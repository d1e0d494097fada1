// The chat's engine: this tab's Web Worker (main.ts starts it), with the app's own events and
// its transcript unit (chat-events.ts). Appends are checked here, against the latest version of
// each event; reads and folds get every event at that version.
import { zodConfig } from './jitless' // first: ES modules run in order
import { serveEngine } from 'sessionfold/worker'
import { chatEvents, transcript } from './chat-events'

if (!zodConfig.jitless) throw new Error('zod must parse jitless here (see jitless.ts)')
await serveEngine({ projections: [transcript], events: chatEvents })
