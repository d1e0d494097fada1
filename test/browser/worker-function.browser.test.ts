// Contract: §6 client API, §19 bundlers find the worker — openStore({ worker: () => new Worker(…) }) runs the engine in the app's own worker; refused combinations start nothing (docs/CONTRACT.md)
// The function form of the `worker` option in real Chromium: a dedicated Worker and a
// SharedWorker started by the app's function from its own file (own-worker.ts, with a unit of
// its own), how they end, a death, and the refusals: each INVALID_ARGUMENT, with no worker
// left running and no IndexedDB database made.
import { afterEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { appendThatKillsTheWorker, expectCode } from '../support/helpers'

let n = 0
const db = () => `worker-fn-${Date.now()}-${n++}`
const databases = async () => (await indexedDB.databases()).map((d) => d.name)
const leaks: unknown[] = []
addEventListener('unhandledrejection', (event) => leaks.push((event as PromiseRejectionEvent).reason))

afterEach(async () => {
  await new Promise((r) => setTimeout(r, 50)) // rejections are reported a task after they happen
  expect(leaks.splice(0).map(String)).toEqual([])
})

/** Whether the own-worker.ts named `name` answers one of the pings sent every 50 ms for `ms` (it runs). */
async function alive(name: string, ms: number): Promise<boolean> {
  const channel = new BroadcastChannel('own-worker')
  let timer: ReturnType<typeof setInterval> | undefined
  try {
    return await new Promise<boolean>((resolve) => {
      const end = Date.now() + ms
      channel.onmessage = (event: MessageEvent) => {
        if ((event.data as { alive?: string }).alive === name) resolve(true)
      }
      // A worker that is still starting listens only once its modules have run.
      const ping = () => (Date.now() > end ? resolve(false) : channel.postMessage(name))
      timer = setInterval(ping, 50)
      ping()
    })
  } finally {
    clearInterval(timer)
    channel.close()
  }
}

const dedicated = (name: string) => () => new Worker(new URL('./own-worker.ts', import.meta.url), { type: 'module', name })
const shared = (name: string) => () => new SharedWorker(new URL('./own-worker.ts', import.meta.url), { type: 'module', name })

describe('worker: a function that starts the app’s own worker (Chromium)', () => {
  it('a dedicated Worker: called once, its unit folds, and close() terminates it', async () => {
    const name = `own-${db()}`
    let calls = 0
    const start = dedicated(name)
    const store = await openStore({ name: db(), worker: () => (calls++, start()) })
    expect(calls).toBe(1)
    const s = await store.createSession({ id: 'mine' })
    await s.append([
      { type: 'app/note', data: { n: 1 } },
      { type: 'app/note', data: { n: 2 } },
    ])
    expect(s.projections.get('notes' as never)).toEqual([{ n: 1 }, { n: 2 }])
    expect(s.projections.get('subagentTiming')).not.toBeNull() // the built-in units run there too
    const view = await store.observe('mine')
    expect(view.projections.get('notes' as never)).toEqual([{ n: 1 }, { n: 2 }])
    expect(await alive(name, 2000)).toBe(true)
    await store.close()
    expect(calls).toBe(1)
    expect(await alive(name, 1000)).toBe(false)
  })

  it('a SharedWorker: two stores share its engine (a memory store lives in it), and one closing leaves the other working', async () => {
    const name = `own-shared-${db()}`
    const a = await openStore({ storage: 'memory', name: 'shared-mem', worker: shared(name) })
    const b = await openStore({ storage: 'memory', name: 'shared-mem', worker: shared(name) })
    const s = await a.createSession({ id: 'one' })
    await s.append({ type: 'app/note', data: { n: 7 } })
    // Another worker's memory store would not have it: this is the one engine.
    const view = await b.observe('one')
    expect(view.projections.get('notes' as never)).toEqual([{ n: 7 }])
    await expectCode(b.openSession('one'), 'SESSION_LOCKED')
    await a.close()
    await expectCode(s.append({ type: 'app/note', data: { n: 8 } }), 'CLOSED')
    // a's handles closed with it (its port): the session is free for b's writer.
    const again = await b.openSession('one')
    await again.append({ type: 'app/note', data: { n: 9 } })
    expect(again.projections.get('notes' as never)).toEqual([{ n: 7 }, { n: 9 }])
    expect(await alive(name, 2000)).toBe(true)
    await b.close()
  })

  it('a SharedWorker on IndexedDB: a writer in one store, an observer in another follows', async () => {
    const name = `own-shared-${db()}`
    const dbName = db()
    const a = await openStore({ name: dbName, worker: shared(name) })
    const b = await openStore({ name: dbName, worker: shared(name) })
    const s = await a.createSession({ id: 'idb' })
    const view = await b.observe('idb')
    await s.append({ type: 'app/note', data: { n: 3 } })
    for (const end = Date.now() + 5000; (view.projections.get('notes' as never) as unknown[] | null)?.length !== 1 && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 10))
    expect(view.projections.get('notes' as never)).toEqual([{ n: 3 }])
    await a.close()
    await b.close()
    expect(await databases()).toContain(dbName)
  })

  it('a worker of the function that dies: the next call is WORKER_TERMINATED, as with the built-in one', async () => {
    const store = await openStore({ name: db(), worker: () => new Worker(new URL('./dying-worker.ts', import.meta.url), { type: 'module' }) })
    const s = await store.createSession({ id: 'crash' })
    await s.append({ type: 'app/before' })
    await appendThatKillsTheWorker(s)
    await store.close().catch(() => {})
  })
})

describe('worker: a function, refused (Chromium): INVALID_ARGUMENT, no worker left running, no database made', () => {
  /** INVALID_ARGUMENT with each of `words`, and no database named `name`. */
  async function refused(open: Promise<unknown>, name: string, words: string[]): Promise<Error> {
    const err = await expectCode(open, 'INVALID_ARGUMENT')
    for (const w of words) expect(err.message).toContain(w)
    expect(await databases()).not.toContain(name)
    return err
  }

  it('with workerUrl, with projections: the function is never called', async () => {
    let calls = 0
    const start = () => (calls++, new Worker(new URL('./own-worker.ts', import.meta.url), { type: 'module' }))
    const name = db()
    await refused(openStore({ name, worker: start, workerUrl: new URL('./own-worker.ts', import.meta.url) }), name, ['workerUrl', 'keep one'])
    await refused(openStore({ name, worker: start, projections: [] }), name, ['projections', 'worker: false'])
    expect(calls).toBe(0)
  })

  it('where no Worker can start (no Worker constructor, as in a service worker)', async () => {
    const scope = globalThis as { Worker?: typeof Worker }
    const saved = scope.Worker
    let calls = 0
    const name = db()
    delete scope.Worker
    try {
      await refused(openStore({ name, worker: () => (calls++, new SharedWorker(new URL('./own-worker.ts', import.meta.url), { type: 'module' })) }), name, [
        'no Worker can start',
        'worker: false',
      ])
    } finally {
      scope.Worker = saved
    }
    expect(calls).toBe(0)
  })

  it('a function that throws: its message, and nothing running', async () => {
    const name = db()
    const err = await refused(
      openStore({
        name,
        worker: () => {
          throw new DOMException('The string to be parsed is not a valid URL', 'SyntaxError')
        },
      }),
      name,
      ['worker', 'threw', 'not a valid URL'],
    )
    expect((err.cause as DOMException).name).toBe('SyntaxError')
  })

  it('a function that returns no Worker: refused, naming what it returned', async () => {
    const name = db()
    // The workerUrl habit: the file's URL, not a Worker started from it.
    await refused(openStore({ name, worker: (() => new URL('./own-worker.ts', import.meta.url)) as never }), name, ['a Worker or a SharedWorker', 'got URL'])
  })

  it('an async function: refused, and the Worker it resolves with is terminated', async () => {
    // The check can see a worker nobody ended: one started and left alone answers.
    const control = `control-${db()}`
    const left = dedicated(control)()
    expect(await alive(control, 5000)).toBe(true)
    left.terminate()
    const name = `async-${db()}`
    const dbName = db()
    await refused(openStore({ name: dbName, worker: (async () => dedicated(name)()) as never }), dbName, ['not a Promise', 'async'])
    expect(await alive(name, 2000)).toBe(false)
  })
})
