// Fixture: a browser engine worker that vanishes when it folds app/die (tabs.browser.test.ts)
// A browser worker that dies (closes itself, as a crashed tab's worker would vanish) when it
// folds an `app/die` event, without releasing anything.
import './vitest-worker'
import { z } from 'zod'
import { defineProjection } from '../../src/core/projection'
import { serveEngine } from '../../src/host/entry/serve-browser'

const tripwire = defineProjection({
  key: 'tripwire',
  stateVersion: 1,
  stateSchema: z.number(),
  init: () => 0,
  apply: (n: number, e) => {
    if (e.type === 'app/die') (globalThis as unknown as { close(): void }).close()
    return n
  },
})

void serveEngine({ projections: [tripwire] })
