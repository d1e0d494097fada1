// Fixture: a browser engine worker with the chat app's third version (app-events.browser.test.ts)
import './vitest-worker'
import { serveEngine } from '../../src/host/entry/serve-browser'
import { appV3 } from '../fixtures/chat-events'

void serveEngine(appV3)
