// Preloaded into every Node process the tests start (test/support/rejections.ts puts it in
// NODE_OPTIONS): an unhandled rejection here, and the failure of a worker thread started here,
// are written down for the test that started the process to fail on. A monitor changes
// nothing of what the process does: it still ends on the rejection as Node ends it.
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { isMainThread } from 'node:worker_threads'

const dir = process.env.SESSIONFOLD_TEST_REJECTIONS

function describeError(err) {
  const code = err?.code
  const text = err instanceof Error ? err.stack ?? `${err.name}: ${err.message}` : String(err)
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
  process.on('uncaughtExceptionMonitor', (err, origin) => {
    if (origin === 'unhandledRejection') record('an unhandled rejection', err)
  })
  process.on('worker', (worker) => {
    worker.on('error', (err) => record(`worker thread ${worker.threadId} failed (an uncaught error or unhandled rejection in it)`, err))
  })
}
