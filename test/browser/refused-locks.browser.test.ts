// Contract: §13 last bullet — no promise left unhandled in browsers either: a store opens, works
// and closes where Web Locks refuse the locks that watch a worker's life and a tab's (an opaque
// origin refuses every request), in the page and in the worker, without hanging and without an
// unhandled rejection in the page (recorded here, since the test runner fails only its whole run
// on one, naming no test).
import { afterEach, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { refuseLocks } from './refused-locks'

let n = 0
const db = () => `refused-locks-${Date.now()}-${n++}`
const leaks: unknown[] = []
addEventListener('unhandledrejection', (event) => leaks.push((event as PromiseRejectionEvent).reason))
let restore = () => {}

afterEach(async () => {
  restore()
  await new Promise((r) => setTimeout(r, 50)) // rejections are reported a task after they happen
  expect(leaks.splice(0).map(String)).toEqual([])
})

async function works(options: Parameters<typeof openStore>[0]): Promise<void> {
  const store = await openStore(options)
  const s = await store.createSession({ id: 'a' })
  expect(await s.append({ type: 'app/x' })).toEqual({ firstSeq: 0, lastSeq: 0 })
  await store.close()
}

for (const worker of [true, 'shared'] as const) {
  it(`the page's own requests refused (its tab's lock, its watch of the worker): the store works (worker: ${String(worker)})`, async () => {
    restore = refuseLocks(['alive', 'tab'])
    await works({ name: db(), worker })
  })
}

it("the worker's request of its alive lock refused: the store opens and works", async () => {
  restore = refuseLocks(['alive']) // the page's too, as the same origin's would be
  await works({ name: db(), workerUrl: new URL('./refused-locks-worker.ts', import.meta.url) })
})
