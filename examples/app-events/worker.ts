// examples/app-events/worker.ts
import { serveEngine } from 'sessionfold/worker'
import { chatMessage, transcript } from './chat-events'

await serveEngine({ projections: [transcript], events: [chatMessage] })
