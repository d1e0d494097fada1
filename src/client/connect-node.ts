// Node (and Electron's main process): the engine in a worker_threads worker, or in this thread.
// The default worker is the file `worker-entry.node.js` beside this code: the built entry in
// the package (dist/node/), a stand-in that runs src/host/entry/node.ts through tsx in this
// source tree (src/client/). `node-boot.mjs`, beside it too, runs an app's TypeScript worker.
// Node's own URL, not the global: a DOM shim (happy-dom, in an app's component tests) replaces
// the global with one that resolves a file: URL against http://localhost, which no Worker takes.
import { URL as FileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { NODE_BACKENDS, nodePlatform, releaseThread } from '../backends/node'
import type { HostOptions } from '../host/options'
import type { Connection, Connectors } from './connection'
import { connectInThread } from './connect-in-thread'
import { WorkerDeath, loadComlink } from './remote-engine'

export const nodeConnectors: Connectors = {
  defaultStorage: 'fs',
  backends: NODE_BACKENDS,
  here: 'in Node',
  // Node has no bundler's worker pattern to serve: workerUrl starts the app's file (TypeScript
  // through tsx), with what a worker_threads Worker needs (see startWorker).
  startsWorkerFunction: false,
  canStartWorker: () => true,
  inThread: (app) =>
    connectInThread(
      app,
      async () => nodePlatform,
      async () => (await import('../host/node-extras')).NODE_ENGINE_EXTRAS,
    ),
  inWorker: ({ url, host }) => nodeWorker(url, host),
}

async function nodeWorker(url: string | URL | undefined, options: HostOptions): Promise<Connection> {
  const [link, { default: nodeEndpoint }] = await Promise.all([loadComlink(), import('comlink/dist/esm/node-adapter.mjs')])
  const worker = startWorker(url === undefined ? new FileURL('./worker-entry.node.js', import.meta.url) : new FileURL(String(url), `file://${process.cwd()}/`))
  const threadId = worker.threadId
  const death = new WorkerDeath()
  worker.once('error', (err) => death.dead(`failed: ${err.message}`))
  worker.once('exit', (code) => death.dead(`exited with code ${code}`))
  // Locks of a worker that died cannot be released by it: its lock files name this thread.
  // end() (store.close) waits for their removal, so a store opened after close finds them free.
  let locksReleased: Promise<void> = Promise.resolve()
  worker.once('exit', () => {
    locksReleased = releaseThread(options.store, threadId).catch(() => {})
  })
  const { api, onPush, release } = link(nodeEndpoint(worker))
  // Unreferenced while idle: a store nobody calls lets Node exit, with or without close().
  let pending = 0
  worker.unref()
  const busy = (delta: 1 | -1) => {
    pending += delta
    if (pending === 1 && delta === 1) worker.ref()
    if (pending === 0) worker.unref()
  }
  return {
    api,
    onPush,
    died: death.died,
    busy,
    hold: busy,
    async end() {
      death.ending()
      release()
      await worker.terminate()
      await locksReleased
    },
  }
}

/**
 * Starts `entry`: TypeScript files through tsx (node-boot.mjs), JavaScript directly. Workers
 * inherit the process's flags; --input-type (as in `node --input-type=module -e …`) is refused
 * in a worker, so it is dropped.
 */
function startWorker(entry: FileURL): Worker {
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'))
  const start = (argv: string[]) =>
    entry.pathname.endsWith('.ts')
      ? new Worker(new FileURL('./node-boot.mjs', import.meta.url), { workerData: { entry: entry.href }, execArgv: argv })
      : new Worker(entry, { execArgv: argv })
  try {
    return start(execArgv)
  } catch (err) {
    if ((err as { code?: string } | null)?.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err
    // Process-wide flags (V8's --expose-gc, --max-old-space-size...) are refused in a worker,
    // which names them: the worker runs without those, with the rest (--import tsx...).
    const refused = new Set(
      (err as Error).message
        .replace(/^[^:]*:\s*/, '')
        .split(',')
        .map((f) => f.trim()),
    )
    return start(execArgv.filter((a) => !refused.has(a)))
  }
}
