// Fixture: an app's own engine worker with a unit of its own (notes), started by openStore's worker function (worker-function.browser.test.ts)
// A module Web Worker or a SharedWorker, as the app's function starts it. While it runs, it
// answers pings on BroadcastChannel 'own-worker' with its name: a test sees whether it lives.
import './vitest-worker'
import { serveEngine } from '../../src/host/entry/serve-browser'
import { notes } from '../fixtures/notes-units'

const channel = new BroadcastChannel('own-worker')
channel.onmessage = (event: MessageEvent) => {
  if (event.data === (globalThis as unknown as { name: string }).name) channel.postMessage({ alive: event.data })
}

void serveEngine({ projections: [notes] })
