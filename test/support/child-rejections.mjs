// Preloaded into every Node process the tests start (test/support/rejections.ts puts it in
// NODE_OPTIONS): an unhandled rejection here, and the failure of a worker thread started here,
// are written down for the test that started the process to fail on. The process still ends
// on the rejection as Node ends it. A script whose top-level await rejects (an example run
// with a wrong passphrase) is a script that failed, not a rejection left unhandled: Node
// emits no 'unhandledRejection' for it, and it is not written down.
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { isMainThread } from 'node:worker_threads'

const dir = process.env.SESSIONFOLD_TEST_REJECTIONS

function describeError(err) {
  const code = err?.code
  const text = err instanceof Error ? (err.stack ?? `${err.name}: ${err.message}`) : String(err)
  return typeof code === 'string' && !text.includes(code) ? `[${code}] ${text}` : text
}

function record(what, err) {
  try {
    const line = JSON.stringify({ pid: process.pid, argv: process.argv.slice(1).join(' ').slice(0, 300), what, detail: describeError(err) })
    appendFileSync(join(dir, `${process.pid}.log`), `${line}\n`)
  } catch {
    // nowhere to write: the process's own output still shows it
  }
}

// Threads of this process report through their parent's 'error' below.
if (dir && isMainThread) {
  process.on('unhandledRejection', (reason) => {
    record('an unhandled rejection', reason)
    // Listening turns Node's own ending off: end as it would, unless the program listens too.
    if (process.listenerCount('unhandledRejection') === 1) throw reason
  })
  process.on('worker', (worker) => {
    worker.on('error', (err) => record(`worker thread ${worker.threadId} failed (an uncaught error or unhandled rejection in it)`, err))
  })
}
